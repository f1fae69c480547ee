package olm

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// deprecatedCatalog is package op: 0.9.0 in channel alpha only, 1.0.0,
// 1.1.0 (replaces 1.0.0) and 1.2.0 (replaces 1.1.0) in stable; 0.9.0 and
// 1.1.0 delisted and kept deprecated, 1.2.0 listed and deprecated (a
// PackageManifest's spec.deprecation.message). Package gone: 2.0.0 in
// stable, deprecated whole.
func deprecatedCatalog(t *testing.T) []Package {
	t.Helper()
	op := entries(
		csvBundle(t, "op", "0.9.0", "", nil, "", "alpha"),
		csvBundle(t, "op", "1.0.0", "", nil, "", "stable"),
		csvBundle(t, "op", "1.1.0", "op.v1.0.0", nil, "", "stable"),
		csvBundle(t, "op", "1.2.0", "op.v1.1.0", nil, "", "stable"),
	)
	delisted := time.Date(2026, 11, 2, 8, 30, 0, 0, time.UTC)
	op[0].Deprecated, op[0].DelistedSince = "op 0.9.0 is no longer published", delisted
	op[2].Deprecated, op[2].DelistedSince = "op 1.1.0 is no longer published: upgrade to 1.2.0", delisted
	op[3].Deprecated = "op 1.2.0 is deprecated: use op 2" // listed, deprecated by its PackageManifest
	gone := entries(csvBundle(t, "gone", "2.0.0", "", nil, "", "stable"))
	gone[0].Deprecated, gone[0].DelistedSince = "gone 2.0.0 is no longer published", delisted
	return []Package{{Name: "op", Entries: op}, {Name: "gone", Entries: gone, Deprecated: "gone is no longer published"}}
}

// TestBuildDeprecations: delisted bundles kept for their deprecation
// period are olm.deprecations entries (operator-registry's
// declcfg.Deprecation): a package deprecated whole has the package entry
// and its bundles', a channel whose every bundle is deprecated (alpha) has
// a channel entry naming the channel to move to, and each deprecated
// bundle its own (a listed one too, which deprecates no channel). The deprecated 1.1.0 stays in the graph, with its
// replaces edges (1.2.0 replaces it, it replaces 1.0.0), so a cluster
// running it still upgrades; operator-registry's model carries each
// message where OLM reads it, and the catalog on disk passes the real
// `opm validate`.
func TestBuildDeprecations(t *testing.T) {
	cfg, err := Build(deprecatedCatalog(t), "")
	if err != nil {
		t.Fatal(err)
	}
	ref := func(schema, name string) declcfg.PackageScopedReference {
		return declcfg.PackageScopedReference{Schema: schema, Name: name}
	}
	want := []declcfg.Deprecation{
		{Schema: "olm.deprecations", Package: "gone", Entries: []declcfg.DeprecationEntry{
			{Reference: ref("olm.package", ""), Message: "gone is no longer published"},
			{Reference: ref("olm.bundle", "gone.v2.0.0"), Message: "gone 2.0.0 is no longer published"},
		}},
		{Schema: "olm.deprecations", Package: "op", Entries: []declcfg.DeprecationEntry{
			{Reference: ref("olm.channel", "alpha"), Message: "channel alpha of op has no published version left: its bundles leave this catalog at the end of their deprecation period; subscribe to channel stable instead"},
			{Reference: ref("olm.bundle", "op.v0.9.0"), Message: "op 0.9.0 is no longer published"},
			{Reference: ref("olm.bundle", "op.v1.1.0"), Message: "op 1.1.0 is no longer published: upgrade to 1.2.0"},
			{Reference: ref("olm.bundle", "op.v1.2.0"), Message: "op 1.2.0 is deprecated: use op 2"},
		}},
	}
	if !reflect.DeepEqual(cfg.Deprecations, want) {
		t.Errorf("deprecations:\n%+v\nwant\n%+v", cfg.Deprecations, want)
	}
	stable := map[string]string{}
	for _, c := range cfg.Channels {
		for _, e := range c.Entries {
			if c.Package == "op" && c.Name == "stable" {
				stable[e.Name] = e.Replaces
			}
		}
	}
	if stable["op.v1.2.0"] != "op.v1.1.0" || stable["op.v1.1.0"] != "op.v1.0.0" {
		t.Errorf("stable lost the deprecated bundle's edges: %v", stable)
	}
	if cfg.Packages[1].Name != "op" || cfg.Packages[1].DefaultChannel != "stable" {
		t.Errorf("packages %+v", cfg.Packages)
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	op := m["op"]
	if d := op.Channels["stable"].Bundles["op.v1.1.0"].Deprecation; d == nil || d.Message != want[1].Entries[2].Message {
		t.Errorf("model: bundle op.v1.1.0 deprecation %+v", d)
	}
	if d := op.Channels["alpha"].Deprecation; d == nil {
		t.Errorf("model: channel alpha not deprecated")
	}
	if op.Channels["stable"].Deprecation != nil || op.Deprecation != nil || m["gone"].Deprecation == nil {
		t.Errorf("model: stable %+v, op %+v, gone %+v", op.Channels["stable"].Deprecation, op.Deprecation, m["gone"].Deprecation)
	}
	// Without deprecations the catalog has none.
	plain, err := Build([]Package{{Name: "op", Entries: entries(csvBundle(t, "op", "1.0.0", "", nil, "", "stable"))}}, "")
	if err != nil || len(plain.Deprecations) != 0 {
		t.Errorf("no deprecation: %+v %v", plain.Deprecations, err)
	}

	opm := requireOPM(t)
	files, err := Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runOPM(t, opm, os.Environ(), "validate", filepath.Join(dir, ConfigsDir))
	loaded, err := declcfg.LoadFS(t.Context(), os.DirFS(filepath.Join(dir, ConfigsDir)))
	if err != nil || len(loaded.Deprecations) != 2 {
		t.Errorf("the catalog on disk: %d deprecations, %v", len(loaded.Deprecations), err)
	}
}
