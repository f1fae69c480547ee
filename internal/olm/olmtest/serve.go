// Package olmtest holds what the tests of the olm target share to check a
// catalog image as OLM does: opm (RequireOPM), the catalog layer on disk
// (ExtractLayer), an opm base image holding opm (PushOPMBase, ExtractOPM,
// OtherVersion), and `opm serve` queried through operator-registry's gRPC
// client (Serve, Bundles). Test helpers only: nothing in the binary
// imports it.
package olmtest

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/client"
	"github.com/operator-publish/publish/internal/testenv"
	"k8s.io/apimachinery/pkg/util/wait"
)

// RequireOPM returns the opm binary: $OPM, else opm in PATH. Like
// testenv.Require it skips under -short and when opm is missing, and fails
// instead when PUBLISH_REQUIRE_INTEGRATION=1. hack/opm/build.sh builds it.
func RequireOPM(t *testing.T) string {
	t.Helper()
	testenv.Short(t, "integration test")
	bin := os.Getenv("OPM")
	if bin == "" {
		bin = "opm"
	}
	p, err := exec.LookPath(bin)
	if err == nil {
		return p
	}
	testenv.Skipf(t, "integration test needs opm (operator-registry v1.73.0): run hack/opm/build.sh and set OPM to the path it prints (%v)", err)
	return ""
}

// ExtractLayer writes the top layer of the catalog image ref (an image
// index: its first platform image; or an image) into a new directory and
// returns it: configs/ and the serve cache tmp/cache/, modes kept. opts
// reach the registry.
func ExtractLayer(t *testing.T, ref string, opts ...remote.Option) string {
	t.Helper()
	img := firstImage(t, ref, opts...)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	root := t.TempDir()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// firstImage reads image ref: an image, or the first platform image of an
// image index.
func firstImage(t *testing.T, ref string, opts ...remote.Option) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if img, err = idx.Image(im.Manifests[0].Digest); err != nil {
			t.Fatal(err)
		}
	} else if img, err = desc.Image(); err != nil {
		t.Fatal(err)
	}
	return img
}

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

// Serve runs `opm serve` on the catalog layer extracted at root (the
// catalog image's command: its cache enforced when the layer has one,
// else none, and opm builds it) on a free port, waits
// until its gRPC health check answers, and returns operator-registry's
// gRPC client for it and the port. The server stops when the test ends.
func Serve(t *testing.T, ctx context.Context, opm string, root string) (*client.Client, int) {
	t.Helper()
	args := []string{"serve", filepath.Join(root, "configs"), "-p", "0", "--pprof-addr", ""}
	if _, err := os.Stat(filepath.Join(root, "tmp", "cache")); err == nil {
		args = append(args, "--cache-dir="+filepath.Join(root, "tmp", "cache"), "--cache-enforce-integrity")
	}
	cmd := exec.CommandContext(ctx, opm, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+cmd.Dir)
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
	t.Cleanup(func() { c.Close() })
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, _ := c.HealthCheck(ctx, time.Second)
		return ok, nil
	}); err != nil {
		t.Fatalf("opm serve is not healthy: %v", err)
	}
	return c, port
}

// Bundles returns every bundle c serves (ListBundles: one per bundle and
// channel), as OLM's catalog operator lists them.
func Bundles(t *testing.T, ctx context.Context, c *client.Client) []*api.Bundle {
	t.Helper()
	it, err := c.ListBundles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*api.Bundle
	for b := it.Next(); b != nil; b = it.Next() {
		out = append(out, b)
	}
	if it.Error() != nil {
		t.Fatal(it.Error())
	}
	return out
}
