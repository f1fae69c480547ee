package olm

import (
	"context"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-publish/publish/internal/olm/olmtest"
)

// checkServeGRPC serves the catalog layer extracted at root with `opm
// serve` (the catalog image's command, its cache included) on a free port
// and queries it with operator-registry's gRPC client, as OLM's catalog
// operator does: every package of cfg with its channels and their heads,
// and every bundle, is there.
func checkServeGRPC(t *testing.T, opm string, root string, cfg *declcfg.DeclarativeConfig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, port := olmtest.Serve(t, ctx, opm, root)

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
	seen := map[string]bool{}
	for _, b := range olmtest.Bundles(t, ctx, c) {
		seen[b.PackageName+"/"+b.CsvName] = true
	}
	for _, b := range cfg.Bundles {
		if !seen[b.Package+"/"+b.Name] {
			t.Errorf("opm serve does not list bundle %s/%s", b.Package, b.Name)
		}
	}
	t.Logf("opm serve on port %d: %d packages, %d bundle entries (bundle x channel)", port, len(got), len(seen))
}
