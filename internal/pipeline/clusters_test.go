package pipeline

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/go-git/go-git/v5"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/check"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
	"github.com/operator-publish/publish/internal/testenv"
)

// addOverlays adds an overlay for each cluster to the catalog (a copy of
// global's, naming the cluster's own generated base) and pushes it.
func (f *fixture) addOverlays(t *testing.T, clusters ...string) {
	t.Helper()
	dir, repo, _ := f.cloneCatalog(t)
	overlay, err := os.ReadFile(filepath.Join(dir, "kustomize/clusters/global/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		os.MkdirAll(filepath.Join(dir, "kustomize/clusters", c), 0o755)
		os.WriteFile(filepath.Join(dir, "kustomize/clusters", c, "kustomization.yaml"), []byte(strings.Replace(string(overlay), "publish/generated/global", "publish/generated/"+c, 1)), 0o644)
	}
	commitPushAll(t, repo, "overlays "+strings.Join(clusters, ", "))
}

// addOther adds the artifact other, on tiny's 1.0.0 bundle, and commits.
func (f *fixture) addOther(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.source, "packages/tiny/1.0.0/manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(f.source, "packages/other/1.0.0"), 0o755)
	os.WriteFile(filepath.Join(f.source, "packages/other/1.0.0/manifest.yaml"), []byte(strings.Replace(string(data), "name: tiny.v", "name: other.v", 1)), 0o644)
	f.commit(t, "add other")
}

// TestRunClusters: three clusters with different include lists and
// destinations from one package repo in one run: one commit, each
// rendered/<cluster> holding its artifacts (c's on its own destination,
// where its images are mirrored), a state file per cluster; a changed
// include list delists on that cluster only, in one commit that touches
// no other cluster; publish check passes on the result.
func TestRunClusters(t *testing.T) {
	f := newFixture(t)
	dst2Srv := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	t.Cleanup(dst2Srv.Close)
	dst2 := strings.TrimPrefix(dst2Srv.URL, "http://")
	f.run(t) // seeds the catalog, cluster global
	f.addOverlays(t, "a", "b", "c")
	f.addOther(t)
	var log syncBuffer
	o := Options{
		Source:   f.source,
		Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:  catalogOpts(f.catalog),
		Lint:     lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}}, // other reuses tiny's bundle
		Log:      slog.New(slog.NewTextHandler(&log, nil)),
		Declared: []string{"a", "b", "c"},
		Clusters: []ClusterOptions{
			{Name: "a"},
			{Name: "b", Include: []string{"tiny"}, Render: render.Config{Namespace: "b-system"}},
			{Name: "c", Exclude: []string{"t*"}, DstRegistry: dst2 + "/m2"},
		},
	}
	_, _, before := f.cloneCatalog(t)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "cluster global is not in publish.yaml any more: rendered/global is kept") {
		t.Errorf("no warning about the cluster gone from publish.yaml:\n%s", log.String())
	}
	dir, repo, _ := f.cloneCatalog(t)
	if _, err := os.Stat(filepath.Join(dir, "rendered/global/tiny/artifact_tiny.yaml")); err != nil {
		t.Errorf("rendered/global: %v", err)
	}
	head, _ := repo.CommitObject(mustHash(t, repo))
	if res.Commit == "" || head.Hash.String() != res.Commit || head.NumParents() != 1 || head.ParentHashes[0].String() != before {
		t.Fatalf("not one commit on the tip: %s", res.Commit)
	}
	for _, want := range []string{"on a, b, c", "Cluster a:", "Cluster b:", "Cluster c:", "Source-Commit: "} {
		if !strings.Contains(head.Message, want) {
			t.Errorf("commit message lacks %q:\n%s", want, head.Message)
		}
	}
	has := func(p string) bool {
		_, err := os.Stat(filepath.Join(dir, p))
		return err == nil
	}
	for p, want := range map[string]bool{
		"rendered/a/tiny/artifact_tiny.yaml":   true,
		"rendered/a/other/artifact_other.yaml": true,
		"rendered/b/tiny/artifact_tiny.yaml":   true,
		"rendered/b/other/artifact_other.yaml": false,
		"rendered/c/tiny/artifact_tiny.yaml":   false,
		"rendered/c/other/artifact_other.yaml": true,
		"publish/state/a.yaml":                 true,
		"publish/state/b.yaml":                 true,
		"publish/state/c.yaml":                 true,
	} {
		if has(p) != want {
			t.Errorf("%s: exists %v, want %v", p, !want, want)
		}
	}
	read := func(p string) string {
		data, _ := os.ReadFile(filepath.Join(dir, p))
		return string(data)
	}
	if s := read("rendered/c/other/artifact_other.yaml"); !strings.Contains(s, "registry: "+dst2) || !strings.Contains(s, "repository: m2/tiny/bundle") {
		t.Errorf("c's Artifact is not on its destination:\n%s", s)
	}
	if s := read("rendered/b/tiny/artifact_tiny.yaml"); !strings.Contains(s, "namespace: b-system") {
		t.Errorf("b's namespace:\n%s", s)
	}
	if s := read("rendered/a/tiny/artifact_tiny.yaml"); !strings.Contains(s, "registry: "+f.dst) || !strings.Contains(s, "namespace: cpaas-system") {
		t.Errorf("a's Artifact:\n%s", s)
	}
	for _, ref := range []string{dst2 + "/m2/tiny/bundle:v1.0.0", dst2 + "/m2/tiny/manager:v1.0.0"} {
		if _, err := remote.Head(mustRef(t, ref)); err != nil {
			t.Errorf("not mirrored to c's destination: %s: %v", ref, err)
		}
	}
	if _, err := remote.Head(mustRef(t, dst2+"/m2/tiny/bundle:v1.1.0")); err == nil {
		t.Error("tiny 1.1.0, which c does not get, was mirrored to c's destination")
	}
	if len(res.Clusters) != 3 || res.Clusters[1].Name != "b" || res.Clusters[1].Commit != res.Commit {
		t.Errorf("cluster results: %+v", res.Clusters)
	}
	rep, err := check.Run(context.Background(), check.Options{CatalogDir: dir, Getenv: func(string) string { return "" }})
	if err != nil || rep.Errors() != 0 {
		t.Fatalf("check: %v %+v", err, rep.Findings)
	}

	// Nothing changed: no commit, and a plan per cluster with no file.
	if res, err := Run(context.Background(), o); err != nil || res.Commit != "" {
		t.Fatalf("rerun: %v %s", err, res.Commit)
	}
	opens := catalog.TipOpens()
	plans, err := PlanClusters(context.Background(), PlanOptions{Options: o})
	if err != nil || len(plans) != 3 || plans[2].Cluster != "c" {
		t.Fatalf("plans: %v %d", err, len(plans))
	}
	if n := catalog.TipOpens() - opens; n != 1 {
		t.Errorf("the plan of 3 clusters opened the catalog tip %d times, want once (as run)", n)
	}
	for _, p := range plans {
		if len(p.Files) != 0 {
			t.Errorf("plan of %s after the run: %v", p.Cluster, p.Files)
		}
	}

	// b now gets other instead of tiny: tiny is delisted on b only.
	o.Clusters[1].Include = []string{"other"}
	plans, err = PlanClusters(context.Background(), PlanOptions{Options: o})
	if err != nil || len(plans[0].Files) != 0 || len(plans[1].Files) == 0 || len(plans[2].Files) != 0 {
		t.Fatalf("plans of b's new selection: %v", err)
	}
	res, err = Run(context.Background(), o)
	if err != nil || res.Commit == "" {
		t.Fatalf("include changed: %v %+v", err, res)
	}
	dir, _, _ = f.cloneCatalog(t)
	if s := read("rendered/b/tiny/artifact_tiny.yaml"); !strings.Contains(s, "present: false") {
		t.Errorf("tiny on b is not delisted:\n%s", s)
	}
	if s := read("rendered/a/tiny/artifact_tiny.yaml"); !strings.Contains(s, "present: true") {
		t.Errorf("tiny on a:\n%s", s)
	}
	if !has("rendered/b/other/artifact_other.yaml") {
		t.Error("other is not listed on b")
	}
	for _, p := range res.Files {
		if strings.HasPrefix(p, "rendered/a/") || strings.HasPrefix(p, "rendered/c/") || p == "publish/state/a.yaml" || p == "publish/state/c.yaml" {
			t.Errorf("changing b's selection changed %s", p)
		}
	}
	if len(res.Clusters) != 3 || res.Clusters[0].Commit != "" || res.Clusters[1].Commit != res.Commit {
		t.Errorf("cluster results: %+v", res.Clusters)
	}
}

// TestClusterPatternMatchesNothing: an include pattern that matches no
// artifact is a warning, and the cluster gets nothing.
func TestClusterPatternMatchesNothing(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	f.addOverlays(t, "a")
	var log syncBuffer
	_, err := Run(context.Background(), Options{
		Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog),
		Log:      slog.New(slog.NewTextHandler(&log, nil)),
		Clusters: []ClusterOptions{{Name: "a", Include: []string{"tinyy"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `clusters.a.include: pattern \"tinyy\" matches no artifact`) {
		t.Errorf("no warning:\n%s", log.String())
	}
	if f.catalogFile(t, "rendered/a/tiny/artifact_tiny.yaml") != "" {
		t.Error("a got tiny")
	}
}

// TestFirstPublishClusters: the first publish of two clusters into an
// empty catalog seeds an overlay for each, and a rerun commits nothing
// (each cluster's render key covers both overlays).
func TestFirstPublishClusters(t *testing.T) {
	f := newFixture(t)
	o := Options{
		Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog),
		Clusters: []ClusterOptions{{Name: "global"}, {Name: "edge", Render: render.Config{Namespace: "edge-system"}}},
	}
	res, err := Run(context.Background(), o)
	if err != nil || res.Commit == "" {
		t.Fatalf("first publish: %v", err)
	}
	if !strings.Contains(f.catalogFile(t, "kustomize/clusters/edge/kustomization.yaml"), "- ../../../publish/generated/edge") {
		t.Error("no overlay seeded for edge")
	}
	if !strings.Contains(f.catalogFile(t, "rendered/edge/tiny/artifact_tiny.yaml"), "namespace: edge-system") {
		t.Error("edge not rendered")
	}
	var log syncBuffer
	o.Log = slog.New(slog.NewTextHandler(&log, nil))
	if res, err := Run(context.Background(), o); err != nil || res.Commit != "" {
		t.Fatalf("rerun: %v, commit %q", err, res.Commit)
	}
	if why := tookFullRead(log.String()); why != "" {
		t.Errorf("the rerun read everything: %s", why)
	}
}

// TestRunClustersTargets: three clusters with different targets,
// selections and destinations from one package repo in one run (issue
// 15): a and c run Alauda (c on its own destination, without tiny), edge
// runs upstream OLM with tiny only. One commit holds each cluster's
// rendered/<cluster> (edge: its CatalogSource naming a catalog image with
// tiny's bundles), nothing of tiny reaches c's destination; then dropping
// tiny from a's selection delists it on a only.
func TestRunClustersTargets(t *testing.T) {
	f := newFixture(t)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	pushRandom(t, f.src+"/operator-framework/olm:v0.38.0")
	dst2Srv := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	t.Cleanup(dst2Srv.Close)
	dst2 := strings.TrimPrefix(dst2Srv.URL, "http://")
	f.run(t)
	f.addOverlays(t, "a", "c", "edge")
	f.addOther(t)
	var log syncBuffer
	o := Options{
		Source:   f.source,
		Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:  catalogOpts(f.catalog),
		Lint:     lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}},
		Log:      slog.New(slog.NewTextHandler(&log, nil)),
		Declared: []string{"a", "c", "edge", "global"},
		Clusters: []ClusterOptions{
			{Name: "a"},
			{Name: "c", Exclude: []string{"tiny"}, DstRegistry: dst2 + "/m2"},
			{Name: "edge", Target: target.OLM, Include: []string{"tiny"}, TargetSettings: target.OLMOptions{
				BaseImage: f.src + "/operator-framework/opm:v1.73.0",
				Images:    []string{f.src + "/operator-framework/olm:v0.38.0"},
				Source:    olm.SourceOptions{PollInterval: "30m"},
			}},
		},
	}
	_, _, before := f.cloneCatalog(t)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	dir, repo, _ := f.cloneCatalog(t)
	head, _ := repo.CommitObject(mustHash(t, repo))
	if res.Commit == "" || head.Hash.String() != res.Commit || head.ParentHashes[0].String() != before {
		t.Fatalf("not one commit on the tip: %s", res.Commit)
	}
	has := func(p string) bool {
		_, err := os.Stat(filepath.Join(dir, p))
		return err == nil
	}
	for p, want := range map[string]bool{
		"rendered/a/tiny/artifact_tiny.yaml":        true,
		"rendered/a/other/artifact_other.yaml":      true,
		"rendered/c/tiny/artifact_tiny.yaml":        false,
		"rendered/c/other/artifact_other.yaml":      true,
		"rendered/edge/" + target.CatalogSourceFile: true,
		"rendered/edge/tiny/artifact_tiny.yaml":     false,
		"publish/state/edge.yaml":                   true,
	} {
		if has(p) != want {
			t.Errorf("%s: exists %v, want %v", p, !want, want)
		}
	}
	pkgs, imgs := f.catalogBundles(t)
	if len(pkgs) != 1 || pkgs[0] != "tiny" || len(imgs) != 2 {
		t.Errorf("edge's catalog: packages %v, bundles %v", pkgs, imgs)
	}
	if _, err := remote.Head(mustRef(t, dst2+"/m2/tiny/manager:v1.1.0")); err == nil {
		t.Error("tiny was mirrored to c's destination, which excludes it")
	}

	// a drops tiny: delisted on a, edge and c untouched.
	o.Clusters[0].Exclude = []string{"tiny"}
	res, err = Run(context.Background(), o)
	if err != nil || res.Commit == "" {
		t.Fatalf("a drops tiny: %v", err)
	}
	dir, _, _ = f.cloneCatalog(t)
	if data, _ := os.ReadFile(filepath.Join(dir, "rendered/a/tiny/artifact_tiny.yaml")); !strings.Contains(string(data), "present: false") {
		t.Errorf("tiny on a is not delisted:\n%s", data)
	}
	for _, p := range res.Files {
		if !strings.HasSuffix(p, "/a.yaml") && !strings.Contains(p, "/a/") {
			t.Errorf("dropping tiny from a changed %s", p)
		}
	}
}

// TestClusterDestinationCredentials: a cluster's own destination host
// gets the credentials the docker config has for it, the other
// destination the flags', both real registries with
// TLS and htpasswd; without an entry for it no credentials are sent there
// (the flags' belong to --dst-registry's host alone), the registry
// refuses, and the run stops naming that registry, with nothing
// committed.
func TestClusterDestinationCredentials(t *testing.T) {
	f := newFixture(t)
	dstA := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	dstC := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	dir := t.TempDir()
	var cas []byte
	for _, r := range []*testenv.Registry{dstA, dstC} {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		cas = append(cas, pem...)
	}
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, cas, 0o644)
	docker := filepath.Join(dir, "docker")
	os.MkdirAll(docker, 0o700)
	t.Setenv("DOCKER_CONFIG", docker)
	writeAuth := func(r *testenv.Registry) {
		auth := base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
		os.WriteFile(filepath.Join(docker, "config.json"), []byte(`{"auths":{"`+r.Host+`":{"auth":"`+auth+`"}}}`), 0o600)
	}
	o := Options{
		Source: f.source,
		Mirror: mirror.Options{
			DstRegistry: dstA.Host + "/mirror", Dst: mirror.Credentials{Username: dstA.Username, Password: dstA.Password},
			CAFile: caFile, PlainHTTPHosts: []string{f.src},
		},
		Catalog:  catalogOpts(f.catalog),
		Declared: []string{"a", "c"},
		Clusters: []ClusterOptions{{Name: "a"}, {Name: "c", DstRegistry: dstC.Host + "/m"}},
	}
	// No docker config entry for c's host: c gets no credentials (the
	// flags' belong to --dst-registry's host alone) and is refused.
	os.WriteFile(filepath.Join(docker, "config.json"), []byte(`{"auths":{}}`), 0o600)
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), dstC.Host) {
		t.Fatalf("c without credentials: %v", err)
	}
	if _, err := git.PlainOpen(f.catalog); err == nil && branchHead(t, f.catalog, "main") != "" {
		t.Fatal("something was committed although c's mirror failed")
	}
	writeAuth(dstC)
	res, err := Run(context.Background(), o)
	if err != nil || res.Commit == "" {
		t.Fatalf("run: %v", err)
	}
	for _, ref := range []string{dstA.Ref("mirror/tiny/bundle:v1.1.0"), dstC.Ref("m/tiny/bundle:v1.1.0"), dstC.Ref("m/tiny/manager:v1.1.0")} {
		if _, err := remote.Head(mustRef(t, ref), dstA.Options()...); err != nil {
			if _, err2 := remote.Head(mustRef(t, ref), dstC.Options()...); err2 != nil {
				t.Errorf("%s not mirrored: %v / %v", ref, err, err2)
			}
		}
	}
}
