package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/target"
)

// pushRequiring pushes to the source registry the bundle of artifact art
// version v, tiny's bundle renamed, with requires as its package
// dependencies (metadata/dependencies.yaml olm.package entries: package
// name and version range each), and its images, and writes its manifest
// (no commit).
func (f *fixture) pushRequiring(t *testing.T, art, v string, requires ...[2]string) {
	t.Helper()
	for _, img := range []string{"manager", "worker"} {
		pushRandom(t, f.src+"/"+art+"/"+img+":v"+v)
	}
	dir := t.TempDir()
	copyTree(t, "testdata/bundles/tiny/1.0.0", dir, func(s string) string {
		return strings.NewReplacer("REGISTRY", f.src, "1.0.0", v, "tiny", art).Replace(s)
	})
	deps := "dependencies:\n"
	for _, r := range requires {
		deps += fmt.Sprintf("- type: olm.package\n  value:\n    packageName: %s\n    version: %q\n", r[0], r[1])
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata", "dependencies.yaml"), []byte(deps), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, f.src+"/"+art+"/bundle:v"+v), img); err != nil {
		t.Fatal(err)
	}
	f.writeManifest(t, art, v)
}

// artifactLine is the line of spec.artifact in the manifest at p
// (relative to the package repo).
func (f *fixture) artifactLine(t *testing.T, p string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.source, p))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "  artifact: ") {
			return i + 1
		}
	}
	t.Fatalf("%s: no spec.artifact", p)
	return 0
}

// dependencyFindings are the dependency/missing findings of fs.
func dependencyFindings(fs []lint.Finding) []lint.Finding {
	var out []lint.Finding
	for _, f := range fs {
		if f.Rule == lint.RuleDependencyMissing {
			out = append(out, f)
		}
	}
	return out
}

// TestDependencyPerCluster: needy's bundle requires tiny >=1.1.0. Cluster
// a lists tiny, cluster b does not (exclude), on either target. The plan of
// a has no dependency finding, though on the incremental way tiny is
// untouched (read from a's state file); b's plan names cluster b, needy's
// manifest at its spec.artifact line and the missing package and range;
// run fails lint for b, naming it, and commits nothing. Once b lists tiny,
// the run publishes.
func TestDependencyPerCluster(t *testing.T) {
	for _, tgt := range []string{target.Alauda, target.OLM} {
		t.Run(tgt, func(t *testing.T) { dependencyPerCluster(t, tgt) })
	}
}

// dependencyPerCluster is TestDependencyPerCluster with cluster b on the
// target tgt.
func dependencyPerCluster(t *testing.T, tgt string) {
	f := newFixture(t)
	f.run(t)
	f.addOverlays(t, "a", "b")
	var log syncBuffer
	o := Options{
		Source: f.source, Catalog: catalogOpts(f.catalog),
		Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Log:      slog.New(slog.NewTextHandler(&log, nil)),
		Declared: []string{"a", "b"},
		Clusters: []ClusterOptions{{Name: "a"}},
	}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("first run of a: %v\n%s", err, log.String())
	}
	b := ClusterOptions{Name: "b", Target: tgt, Exclude: []string{"tiny"}}
	if tgt == target.OLM {
		pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
		b.TargetSettings = target.OLMOptions{BaseImage: f.src + "/operator-framework/opm:v1.73.0"}
	}
	o.Clusters = append(o.Clusters, b)
	f.pushRequiring(t, "needy", "1.0.0", [2]string{"tiny", ">=1.1.0"})
	f.commit(t, "add needy, which requires tiny")
	const needy = "packages/needy/1.0.0/manifest.yaml"
	line := f.artifactLine(t, needy)

	log = syncBuffer{}
	plans, err := PlanClusters(context.Background(), PlanOptions{Options: o})
	if err != nil || len(plans) != 2 {
		t.Fatalf("plans: %v %d", err, len(plans))
	}
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, fullReadLine) && strings.Contains(l, "cluster=a") {
			t.Errorf("the plan of a read everything: the incremental way is what this checks: %s", l)
		}
	}
	if fs := dependencyFindings(plans[0].Findings); len(fs) != 0 {
		t.Errorf("cluster a lists tiny 1.1.0, yet: %v", fs)
	}
	fs := dependencyFindings(plans[1].Findings)
	if len(fs) != 1 {
		t.Fatalf("cluster b: %d dependency findings, want 1: %v", len(fs), plans[1].Findings)
	}
	want := `bundle needy.v1.0.0 requires package tiny in range ">=1.1.0" (olm.package.required): cluster b lists no version of tiny`
	if x := fs[0]; x.Path != needy || x.Line != line || x.Severity != lint.Error || x.Message != want || x.Artifact != "needy" {
		t.Errorf("cluster b's finding: %+v\nwant at %s:%d: %s", x, needy, line, want)
	}
	if plans[1].Summary.Errors == 0 {
		t.Error("b's plan counts no error")
	}

	_, _, before := f.cloneCatalog(t)
	_, err = Run(context.Background(), o)
	var le *LintError
	if err == nil || !errors.As(err, &le) {
		t.Fatalf("run: %v, want a lint error", err)
	}
	for _, s := range []string{"cluster b: ", fmt.Sprintf("%s:%d:", needy, line), `package tiny in range ">=1.1.0"`, "cluster b lists no version of tiny", "[dependency/missing]"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("run error lacks %q:\n%v", s, err)
		}
	}
	if strings.Contains(err.Error(), "cluster a") {
		t.Errorf("run error about cluster a:\n%v", err)
	}
	if _, _, after := f.cloneCatalog(t); after != before {
		t.Errorf("the failed run moved the catalog from %s to %s", before, after)
	}

	// b lists tiny: the dependency is met there too.
	o.Clusters[1].Exclude = nil
	res, err := Run(context.Background(), o)
	if err != nil || res.Commit == "" {
		t.Fatalf("run with tiny on b: %v", err)
	}
	if fs := dependencyFindings(res.Findings); len(fs) != 0 {
		t.Errorf("findings once b lists tiny: %v", fs)
	}
}

// planDependencies is the dependency/missing findings of p.
func planDependencies(p *report.Plan) []lint.Finding { return dependencyFindings(p.Findings) }
