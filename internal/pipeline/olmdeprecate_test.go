package pipeline

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/olm/olmtest"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/target"
	"github.com/operator-publish/publish/internal/testenv"
	"sigs.k8s.io/yaml"
)

// catalogConfigs extracts the catalog layer of the image the CatalogSource
// of edge names and returns its root (configs/ below it) and the catalog.
func (f *fixture) catalogConfigs(t *testing.T) (string, *declcfg.DeclarativeConfig) {
	t.Helper()
	return configsOf(t, f.catalogFile(t, "rendered/edge/"+target.CatalogSourceFile))
}

// configsOf is catalogConfigs of the CatalogSource cs (YAML).
func configsOf(t *testing.T, cs string) (string, *declcfg.DeclarativeConfig) {
	t.Helper()
	var obj struct {
		Spec struct {
			Image string `json:"image"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(cs), &obj); err != nil {
		t.Fatal(err)
	}
	root := olmtest.ExtractLayer(t, obj.Spec.Image)
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(filepath.Join(root, "configs")))
	if err != nil {
		t.Fatal(err)
	}
	return root, cfg
}

// planOLMAt is the plan of the olm cluster edge at the clock now, its
// warnings one string.
func (f *fixture) planOLMAt(t *testing.T, period string, now func() time.Time) (*report.Plan, string) {
	t.Helper()
	var log bytes.Buffer
	p, err := PlanRun(context.Background(), PlanOptions{Options: f.olmOptions(period, now, &log)})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, log.String())
	}
	return p, strings.Join(p.Source.Warnings, "\n")
}

// TestRunOLMDeprecation is the delisting story on the olm target with a
// deprecation period of 30 days and an injected clock: the run that
// delists tiny 1.0.0 keeps its bundle in the catalog with an
// olm.deprecations entry naming the replacement, the catalog passes `opm
// validate`, and `opm serve` still gives 1.1.0 as the replacement of the
// deprecated 1.0.0 (an upgrade from it resolves), with the deprecation;
// 10 days later nothing changes; 31 days later, with no new commit in the
// package repo, a run removes the bundle (the olm target renders the whole
// catalog on every run, so a period that ends needs no change) and the
// run after that commits nothing. The plan says what happens each time.
// Then the whole artifact is delisted: its package stays, deprecated, and
// leaves after its period.
func TestRunOLMDeprecation(t *testing.T) {
	f := newFixture(t)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	pushRandom(t, f.src+"/operator-framework/olm:v0.38.0")
	day := 24 * time.Hour
	start := time.Date(2026, 11, 2, 8, 30, 0, 0, time.UTC)
	at := start
	clock := func() time.Time { return at }

	if res, _ := f.runOLMAt(t, "30d", clock); res.Commit == "" {
		t.Fatal("first run committed nothing")
	}
	if err := os.RemoveAll(filepath.Join(f.source, "packages", "tiny", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "delist tiny 1.0.0")

	at = start.Add(day)
	if _, w := f.planOLMAt(t, "30d", clock); !strings.Contains(w, "target olm: tiny 1.0.0: deprecated until 2026-12-03T08:30Z, then removed") {
		t.Errorf("plan of the delisting:\n%s", w)
	}
	if _, w := f.planOLMAt(t, "0", clock); !strings.Contains(w, "target olm: tiny 1.0.0: removed") {
		t.Errorf("plan of the delisting, period 0:\n%s", w)
	}
	res, log := f.runOLMAt(t, "30d", clock)
	if len(res.Changes.Delisted) != 1 || res.Commit == "" {
		t.Fatalf("delist run: commit %q changes %+v\n%s", res.Commit, res.Changes, log)
	}
	root, cfg := f.catalogConfigs(t)
	wantMsg := "tiny 1.0.0 is no longer published and leaves this catalog after 2026-12-03: upgrade to 1.1.0, the newest published version"
	if len(cfg.Bundles) != 2 || len(cfg.Deprecations) != 1 || len(cfg.Deprecations[0].Entries) != 1 ||
		cfg.Deprecations[0].Entries[0].Reference.Name != "tiny.v1.0.0" || cfg.Deprecations[0].Entries[0].Message != wantMsg {
		t.Fatalf("catalog after the delisting: %d bundles, deprecations %+v", len(cfg.Bundles), cfg.Deprecations)
	}
	// The catalog image records when it was delisted, for a later run
	// whose catalog history is cut short (a remote catalog's).
	if notes, err := os.ReadFile(filepath.Join(root, "operator-publish", "bundles.json")); err != nil || !strings.Contains(string(notes), `"delistedSince":"2026-11-03T08:30:00Z"`) {
		t.Errorf("the catalog image's notes do not record the delisting (%v):\n%s", err, notes)
	}
	t.Run("opm validate and serve", func(t *testing.T) {
		opm := olmtest.RequireOPM(t)
		if out, err := exec.Command(opm, "validate", filepath.Join(root, "configs")).CombinedOutput(); err != nil {
			t.Fatalf("opm validate: %v\n%s", err, out)
		}
		ctx := context.Background()
		c, _ := olmtest.Serve(t, ctx, opm, root)
		var old string
		for _, b := range olmtest.Bundles(t, ctx, c) {
			if b.CsvName == "tiny.v1.0.0" {
				old = b.ChannelName
				if b.Deprecation == nil || b.Deprecation.Message != wantMsg {
					t.Errorf("opm serve: tiny.v1.0.0 deprecation %+v", b.Deprecation)
				}
			}
		}
		if old == "" {
			t.Fatal("opm serve does not list the deprecated tiny.v1.0.0")
		}
		next, err := c.GetReplacementBundleInPackageChannel(ctx, "tiny.v1.0.0", "tiny", old)
		if err != nil || next.CsvName != "tiny.v1.1.0" {
			t.Errorf("upgrade from the deprecated tiny.v1.0.0 in channel %s: %v %v", old, next, err)
		}
	})

	at = start.Add(11 * day)
	if res, log := f.runOLMAt(t, "30d", clock); res.Commit != "" {
		t.Errorf("10 days after the delisting: commit %q\n%s", res.Commit, log)
	}
	if _, w := f.planOLMAt(t, "30d", clock); !strings.Contains(w, "deprecated until 2026-12-03T08:30Z, then removed") {
		t.Errorf("plan 10 days after:\n%s", w)
	}

	at = start.Add(32 * day)
	if _, w := f.planOLMAt(t, "30d", clock); !strings.Contains(w, "target olm: tiny 1.0.0: removed") {
		t.Errorf("plan 31 days after:\n%s", w)
	}
	if res, log := f.runOLMAt(t, "30d", clock); res.Commit == "" {
		t.Fatalf("31 days after the delisting, nothing committed\n%s", log)
	}
	if _, cfg := f.catalogConfigs(t); len(cfg.Bundles) != 1 || cfg.Bundles[0].Name != "tiny.v1.1.0" || len(cfg.Deprecations) != 0 {
		t.Errorf("catalog after the period: bundles %d, deprecations %+v", len(cfg.Bundles), cfg.Deprecations)
	}
	at = start.Add(33 * day)
	if res, _ := f.runOLMAt(t, "30d", clock); res.Commit != "" {
		t.Errorf("a run after the removal committed %s", res.Commit)
	}
	if _, w := f.planOLMAt(t, "30d", clock); strings.Contains(w, "tiny 1.0.0") {
		t.Errorf("plan after the removal still names tiny 1.0.0:\n%s", w)
	}

	// The whole artifact delisted: the package stays, deprecated, with
	// its bundle, and leaves after the period.
	if err := os.RemoveAll(filepath.Join(f.source, "packages", "tiny")); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "delist tiny")
	at = start.Add(34 * day)
	if res, log := f.runOLMAt(t, "30d", clock); len(res.Changes.Delisted) != 1 || res.Commit == "" {
		t.Fatalf("delisting tiny: commit %q changes %+v\n%s", res.Commit, res.Changes, log)
	}
	root, cfg = f.catalogConfigs(t)
	if len(cfg.Packages) != 1 || len(cfg.Bundles) != 1 || len(cfg.Deprecations) != 1 || len(cfg.Deprecations[0].Entries) != 2 ||
		cfg.Deprecations[0].Entries[0].Reference.Schema != "olm.package" || cfg.Deprecations[0].Entries[0].Message != "tiny is no longer published: its bundles leave this catalog by 2027-01-05" {
		t.Fatalf("catalog after delisting tiny: %d packages, %d bundles, deprecations %+v", len(cfg.Packages), len(cfg.Bundles), cfg.Deprecations)
	}
	t.Run("opm validate, package deprecated", func(t *testing.T) {
		opm := olmtest.RequireOPM(t)
		if out, err := exec.Command(opm, "validate", filepath.Join(root, "configs")).CombinedOutput(); err != nil {
			t.Fatalf("opm validate: %v\n%s", err, out)
		}
	})
	at = start.Add(65 * day)
	if res, _ := f.runOLMAt(t, "30d", clock); res.Commit == "" {
		t.Fatal("the period of tiny ended: nothing committed")
	}
	if pkgs, imgs := f.catalogBundles(t); len(pkgs) != 0 || len(imgs) != 0 {
		t.Errorf("after the period of tiny: packages %v bundles %v", pkgs, imgs)
	}
}

// TestRunOLMManifestDeprecation: a listed version whose PackageManifest
// has spec.deprecation.message is deprecated in the catalog with that
// message while it stays listed (the channels keep it as they were); once
// its manifest is removed, the bundle kept for the deprecation period
// keeps that message (read from the last catalog image); and a message
// that is removed from a listed manifest undeprecates the version.
func TestRunOLMManifestDeprecation(t *testing.T) {
	f := newFixture(t)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	pushRandom(t, f.src+"/operator-framework/olm:v0.38.0")
	start := time.Date(2026, 11, 2, 8, 30, 0, 0, time.UTC)
	at := start
	clock := func() time.Time { return at }
	p := filepath.Join(f.source, "packages", "tiny", "1.0.0", "manifest.yaml")
	plain, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	const msg = "tiny 1.0.0 has a known data-loss bug: upgrade to 1.1.0"
	if err := os.WriteFile(p, append(append([]byte(nil), plain...), "  deprecation:\n    message: \""+msg+"\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "deprecate tiny 1.0.0")
	if res, log := f.runOLMAt(t, "30d", clock); res.Commit == "" {
		t.Fatalf("first run committed nothing\n%s", log)
	}
	_, cfg := f.catalogConfigs(t)
	if len(cfg.Bundles) != 2 || len(cfg.Deprecations) != 1 || len(cfg.Deprecations[0].Entries) != 1 ||
		cfg.Deprecations[0].Entries[0].Reference.Name != "tiny.v1.0.0" || cfg.Deprecations[0].Entries[0].Message != msg {
		t.Fatalf("listed and deprecated: %d bundles, deprecations %+v", len(cfg.Bundles), cfg.Deprecations)
	}

	if err := os.RemoveAll(filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "delist tiny 1.0.0")
	at = start.Add(24 * time.Hour)
	if res, log := f.runOLMAt(t, "30d", clock); res.Commit == "" || len(res.Changes.Delisted) != 1 {
		t.Fatalf("delist run: commit %q changes %+v\n%s", res.Commit, res.Changes, log)
	}
	_, cfg = f.catalogConfigs(t)
	if len(cfg.Bundles) != 2 || len(cfg.Deprecations) != 1 || cfg.Deprecations[0].Entries[0].Message != msg {
		t.Errorf("delisted, kept: %d bundles, deprecations %+v", len(cfg.Bundles), cfg.Deprecations)
	}

	// Relisted without the message: listed, not deprecated.
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "relist tiny 1.0.0")
	at = start.Add(48 * time.Hour)
	f.runOLMAt(t, "30d", clock)
	if _, cfg = f.catalogConfigs(t); len(cfg.Bundles) != 2 || len(cfg.Deprecations) != 0 {
		t.Errorf("relisted: %d bundles, deprecations %+v", len(cfg.Bundles), cfg.Deprecations)
	}
}

// TestRunOLMDeprecationRemoteCatalog: with a remote catalog, which a run
// fetches at depth 1, the catalog history holds the tip only; after a
// later commit the delisting is older than the tip, and the run dates it
// by the time the catalog image recorded: 20 days after the delisting the
// catalog is the same (no commit), 31 days after the bundle leaves it.
func TestRunOLMDeprecationRemoteCatalog(t *testing.T) {
	f := newFixture(t)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	pushRandom(t, f.src+"/operator-framework/olm:v0.38.0")
	gs := testenv.StartGitServer(t)
	url := gs.NewBareRepo(t, "catalog")
	day := 24 * time.Hour
	start := time.Date(2026, 11, 2, 8, 30, 0, 0, time.UTC)
	at := start
	run := func(what string) *Result {
		t.Helper()
		var log bytes.Buffer
		o := f.olmOptions("30d", func() time.Time { return at }, &log)
		o.Catalog = gitops.Options{URL: url, Branch: "main", Username: gs.Username, Password: gs.Password}
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, log.String())
		}
		return res
	}
	catalog := func() *declcfg.DeclarativeConfig {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(cloneCatalog(t, url, gs), "rendered", "edge", target.CatalogSourceFile))
		if err != nil {
			t.Fatal(err)
		}
		_, cfg := configsOf(t, string(data))
		return cfg
	}
	run("first run")
	if err := os.RemoveAll(filepath.Join(f.source, "packages", "tiny", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "delist tiny 1.0.0")
	at = start.Add(day)
	run("delisting")
	// A later catalog commit: the next fetch no longer has the delisting.
	p := filepath.Join(f.source, "packages", "tiny", "1.1.0", "manifest.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.Replace(data, []byte("displayName: Tiny"), []byte("displayName: Tiny Two"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "rename tiny")
	at = start.Add(2 * day)
	if res := run("rename"); res.Commit == "" {
		t.Fatal("the rename committed nothing")
	}
	at = start.Add(20 * day)
	if res := run("20 days after"); res.Commit != "" {
		t.Errorf("20 days after the delisting: commit %s (the delisting was dated by the shallow tip?)", res.Commit)
	}
	if cfg := catalog(); len(cfg.Bundles) != 2 || len(cfg.Deprecations) != 1 {
		t.Errorf("20 days after: %d bundles, deprecations %+v", len(cfg.Bundles), cfg.Deprecations)
	}
	at = start.Add(31*day + time.Hour)
	if res := run("31 days after"); res.Commit == "" {
		t.Fatal("31 days after the delisting: nothing committed")
	}
	if cfg := catalog(); len(cfg.Bundles) != 1 || len(cfg.Deprecations) != 0 {
		t.Errorf("31 days after: %d bundles, deprecations %+v", len(cfg.Bundles), cfg.Deprecations)
	}
}
