package olm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/client"
	"k8s.io/apimachinery/pkg/util/wait"
)

// listenPort returns the TCP port process pid listens on, 0 while it
// listens on none: opm serve -p 0 takes a free port and does not print it,
// so the port is read from /proc (its sockets in LISTEN state).
func listenPort(pid int) int {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	for _, f := range []string{"tcp6", "tcp"} {
		fh, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
				continue
			}
			_, port, _ := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(port, 16, 16); err == nil && p > 0 {
				fh.Close()
				return int(p)
			}
		}
		fh.Close()
	}
	return 0
}

// checkServeGRPC serves the catalog layer extracted at root with `opm
// serve` (the catalog image's command, its cache included) on a free port
// and queries it with operator-registry's gRPC client, as OLM's catalog
// operator does: every package of cfg with its channels and their heads,
// and every bundle, is there.
func checkServeGRPC(t *testing.T, opm string, env []string, root string, cfg *declcfg.DeclarativeConfig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, opm, "serve", filepath.Join(root, ConfigsDir), "--cache-dir="+filepath.Join(root, "tmp", "cache"), "--cache-enforce-integrity", "-p", "0", "--pprof-addr", "")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })

	var port int
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("opm serve exited")
		default:
		}
		port = listenPort(cmd.Process.Pid)
		return port != 0, nil
	}); err != nil {
		t.Fatalf("opm serve did not listen: %v", err)
	}
	c, err := client.NewClient(fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, _ := c.HealthCheck(ctx, time.Second)
		return ok, nil
	}); err != nil {
		t.Fatalf("opm serve is not healthy: %v", err)
	}

	// Packages.
	ps, err := c.Registry.ListPackages(ctx, &api.ListPackageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		p, err := ps.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Name)
	}
	var want []string
	for _, p := range cfg.Packages {
		want = append(want, p.Name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("opm serve lists packages %v, want %v", got, want)
	}

	// Channels and their heads (the entry nothing replaces or skips).
	heads := map[[2]string]string{}
	for _, ch := range cfg.Channels {
		in := map[string]bool{}
		for _, e := range ch.Entries {
			in[e.Replaces] = true
			for _, s := range e.Skips {
				in[s] = true
			}
		}
		for _, e := range ch.Entries {
			if !in[e.Name] {
				heads[[2]string{ch.Package, ch.Name}] = e.Name
			}
		}
	}
	for _, p := range cfg.Packages {
		ap, err := c.GetPackage(ctx, p.Name)
		if err != nil {
			t.Fatalf("GetPackage %s: %v", p.Name, err)
		}
		if ap.DefaultChannelName != p.DefaultChannel {
			t.Errorf("package %s: default channel %s, want %s", p.Name, ap.DefaultChannelName, p.DefaultChannel)
		}
		for _, ch := range ap.Channels {
			if want := heads[[2]string{p.Name, ch.Name}]; ch.CsvName != want {
				t.Errorf("package %s channel %s: head %s, want %s", p.Name, ch.Name, ch.CsvName, want)
			}
			b, err := c.GetBundleInPackageChannel(ctx, p.Name, ch.Name)
			if err != nil || b.CsvName != ch.CsvName {
				t.Errorf("package %s channel %s: head bundle %v %v", p.Name, ch.Name, b.GetCsvName(), err)
			}
		}
	}

	// Every bundle.
	it, err := c.ListBundles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for b := it.Next(); b != nil; b = it.Next() {
		seen[b.PackageName+"/"+b.CsvName] = true
	}
	if it.Error() != nil {
		t.Fatal(it.Error())
	}
	for _, b := range cfg.Bundles {
		if !seen[b.Package+"/"+b.Name] {
			t.Errorf("opm serve does not list bundle %s/%s", b.Package, b.Name)
		}
	}
	t.Logf("opm serve on port %d: %d packages, %d bundle entries (bundle x channel)", port, len(got), len(seen))
}
