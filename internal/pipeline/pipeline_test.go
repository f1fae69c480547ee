package pipeline

import (
	"context"
	"errors"
	"github.com/operator-publish/publish/internal/target"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/render"
	"sigs.k8s.io/yaml"
)

// fixture is a package repo with the tiny operator in two versions, its
// images in an in-process source registry, an in-process destination
// registry and an empty bare catalog repo.
type fixture struct {
	src, dst, source, catalog string
	repo                      *git.Repository
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srcSrv := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	dstSrv := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	t.Cleanup(srcSrv.Close)
	t.Cleanup(dstSrv.Close)
	f := &fixture{
		src:     strings.TrimPrefix(srcSrv.URL, "http://"),
		dst:     strings.TrimPrefix(dstSrv.URL, "http://"),
		source:  t.TempDir(),
		catalog: t.TempDir(),
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		f.pushVersion(t, v)
	}
	var err error
	if f.repo, err = git.PlainInit(f.source, false); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "add tiny")
	if _, err := git.PlainInit(f.catalog, true); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) writeManifest(t *testing.T, art, v string) {
	m := map[string]any{
		"apiVersion": "app.alauda.cn/v1beta1",
		"kind":       "PackageManifest",
		"metadata":   map[string]any{"name": art + ".v" + v},
		"spec": map[string]any{
			"type":          "bundle",
			"artifact":      f.src + "/" + art + "/bundle:v" + v,
			"version":       "v" + v,
			"arch":          []string{"linux/amd64"},
			"info":          map[string]any{"displayName": "Tiny"},
			"relatedImages": []string{f.src + "/" + art + "/manager:v" + v, f.src + "/" + art + "/worker:v" + v},
		},
	}
	data, _ := yaml.Marshal(m)
	p := filepath.Join(f.source, "packages", art, v, "manifest.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) commit(t *testing.T, msg string) {
	wt, _ := f.repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}
	if _, err := wt.Commit(msg, &git.CommitOptions{Author: sig, AllowEmptyCommits: true}); err != nil {
		t.Fatal(err)
	}
}

// stage adds the file at p (relative to the source) to the package repo's
// index, as git add does, without a commit.
func (f *fixture) stage(t *testing.T, p string) {
	t.Helper()
	wt, _ := f.repo.Worktree()
	if _, err := wt.Add(p); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) run(t *testing.T) *Result {
	t.Helper()
	res, err := Run(context.Background(), Options{
		Source:     f.source,
		Mirror:     mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:    catalogOpts(f.catalog),
		AllowEmpty: true, // the story delists its only artifact
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// catalogFile reads a file at the tip of the catalog's main branch.
func (f *fixture) catalogFile(t *testing.T, p string) string {
	t.Helper()
	return catalogFileOf(t, f.catalog, p)
}

// catalogFileOf reads a file at the tip of the main branch of the catalog
// repo at dir, or at a URL (a catalog on a Git server), "" when absent.
func catalogFileOf(t *testing.T, dir, p string) string {
	t.Helper()
	if strings.Contains(dir, "://") {
		return remoteFile(t, dir, "main", p)
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := repo.CommitObject(ref.Hash())
	file, err := c.File(p)
	if err != nil {
		return ""
	}
	s, _ := file.Contents()
	return s
}

func TestRunListUpgradeDelist(t *testing.T) {
	f := newFixture(t)
	res := f.run(t)
	if res.Commit == "" || len(res.Changes.Listed) != 1 {
		t.Fatalf("first run: commit %q changes %+v", res.Commit, res.Changes)
	}
	art := f.catalogFile(t, "rendered/global/tiny/artifact_tiny.yaml")
	for _, want := range []string{"present: true", "registry: " + f.dst, "repository: mirror/tiny/bundle", "cpaas.io/artifact-version: tiny", "displayName: Tiny", "description: A tiny operator for tests."} {
		if !strings.Contains(art, want) {
			t.Errorf("Artifact lacks %q:\n%s", want, art)
		}
	}
	av := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.1.0.yaml")
	if !strings.Contains(av, "tag: v1.1.0") || !strings.Contains(av, "present: true") {
		t.Errorf("ArtifactVersion:\n%s", av)
	}
	// Every image is at the destination with the source digest.
	for _, img := range []string{"tiny/bundle:v1.0.0", "tiny/manager:v1.1.0", "tiny/worker:v1.1.0"} {
		s, err := remote.Head(mustRef(t, f.src+"/"+img))
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Head(mustRef(t, f.dst+"/mirror/"+img))
		if err != nil {
			t.Fatalf("%s not mirrored: %v", img, err)
		}
		if s.Digest != d.Digest {
			t.Errorf("%s: digest %s at destination, %s at source", img, d.Digest, s.Digest)
		}
	}

	if res := f.run(t); res.Commit != "" {
		t.Fatalf("second run committed %s", res.Commit)
	}

	os.RemoveAll(filepath.Join(f.source, "packages/tiny/1.0.0"))
	f.commit(t, "delist tiny 1.0.0")
	res = f.run(t)
	if len(res.Changes.Delisted) != 1 || res.Changes.Delisted[0] != "tiny 1.0.0" {
		t.Fatalf("delist version: %+v", res.Changes)
	}
	if !strings.Contains(f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"), "present: false") {
		t.Error("tiny 1.0.0 not tombstoned")
	}

	os.RemoveAll(filepath.Join(f.source, "packages/tiny"))
	f.commit(t, "delist tiny")
	res = f.run(t)
	if len(res.Changes.Delisted) != 1 || res.Changes.Delisted[0] != "tiny (artifact)" {
		t.Fatalf("delist artifact: %+v", res.Changes)
	}
	if !strings.Contains(f.catalogFile(t, "rendered/global/tiny/artifact_tiny.yaml"), "present: false") {
		t.Error("tiny not tombstoned")
	}

	// Re-adding lists it again.
	f.writeManifest(t, "tiny", "1.1.0")
	f.commit(t, "relist tiny")
	res = f.run(t)
	if len(res.Changes.Relisted) != 1 {
		t.Fatalf("relist: %+v", res.Changes)
	}
	if !strings.Contains(f.catalogFile(t, "rendered/global/tiny/artifact_tiny.yaml"), "present: true") {
		t.Error("tiny not relisted")
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pushRandom(t *testing.T, ref string) {
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, ref), img); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, from, to string, edit func(string) string) {
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Join(to, filepath.Dir(rel)), 0o755)
		return os.WriteFile(filepath.Join(to, rel), []byte(edit(string(data))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRenderOnly(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	ch, err := Render(context.Background(), RenderOptions{Source: f.source, CatalogDir: dir, DstRegistry: "reg.example.com/ops"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Listed) != 1 {
		t.Errorf("changes: %+v", ch)
	}
	data, err := os.ReadFile(filepath.Join(dir, "rendered/global/tiny/artifact_tiny.yaml"))
	if err != nil || !strings.Contains(string(data), "repository: ops/") || !strings.Contains(string(data), "registry: reg.example.com") {
		t.Fatalf("rendered Artifact: %s %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "publish/state/global.yaml")); err == nil {
		t.Error("render wrote the state file")
	}
	// Without --dst-registry, an artifact unknown to the state cannot be mapped.
	if _, err := Render(context.Background(), RenderOptions{Source: f.source, CatalogDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "--dst-registry") {
		t.Errorf("got %v", err)
	}
	// After a run, render needs no registry: the state has the mapping.
	f.run(t)
	clone := t.TempDir()
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: f.catalog, ReferenceName: "refs/heads/main"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(clone, "rendered/global/tiny/artifact_tiny.yaml"))
	if _, err := Render(context.Background(), RenderOptions{Source: f.source, CatalogDir: clone}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(clone, "rendered/global/tiny/artifact_tiny.yaml"))
	if string(before) != string(after) {
		t.Errorf("render differs from run:\n%s\n%s", before, after)
	}
}

// TestRunOnlyChanged: with change detection saying nothing changed, a rerun
// reads no bundle and mirrors nothing, yet renders the same catalog; a
// version the state has no record of is read all the same.
func TestRunOnlyChanged(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	none := func(a, v string) bool { return false }
	res, err := Run(context.Background(), Options{
		Source: f.source, Changed: none,
		Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog: catalogOpts(f.catalog),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.BundlesRead != 0 || len(res.Mirror.Images) != 0 || res.Commit != "" {
		t.Fatalf("unchanged rerun read %d bundles, mirrored %d images, commit %q", res.BundlesRead, len(res.Mirror.Images), res.Commit)
	}
	// A new version that the (wrong) predicate calls unchanged is still published.
	f.addVersion(t, "1.2.0")
	res, err = Run(context.Background(), Options{
		Source: f.source, Changed: none,
		Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog: catalogOpts(f.catalog),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.BundlesRead != 1 || len(res.Changes.Upgraded) != 1 || res.Commit == "" {
		t.Fatalf("new version: read %d, changes %+v, commit %q", res.BundlesRead, res.Changes, res.Commit)
	}
	// Unchanged versions keep their recorded digests and the Artifact its description.
	state := f.catalogFile(t, "publish/state/global.yaml")
	if strings.Count(state, "bundleDigest: sha256:") != 3 {
		t.Errorf("state lost digests:\n%s", state)
	}
	if !strings.Contains(f.catalogFile(t, "rendered/global/tiny/artifact_tiny.yaml"), "description: A tiny operator") {
		t.Error("description lost")
	}
}

// TestDigestPinnedBundle: a bundle named by digest still gets the tag its
// ArtifactVersion names at the destination.
func TestDigestPinnedBundle(t *testing.T) {
	f := newFixture(t)
	d, err := remote.Head(mustRef(t, f.src+"/tiny/bundle:v1.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(f.source, "packages/tiny/1.1.0/manifest.yaml")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), "tiny/bundle:v1.1.0", "tiny/bundle@"+d.Digest.String(), 1)), 0o644)
	f.commit(t, "pin by digest")
	f.run(t)
	got, err := remote.Head(mustRef(t, f.dst+"/mirror/tiny/bundle:v1.1.0"))
	if err != nil {
		t.Fatalf("the ArtifactVersion's tag is not at the destination: %v", err)
	}
	if got.Digest != d.Digest {
		t.Errorf("digest %s, want %s", got.Digest, d.Digest)
	}
	if !strings.Contains(f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.1.0.yaml"), "tag: v1.1.0") {
		t.Error("ArtifactVersion tag")
	}
}

// TestConcurrentRuns: two runs of one source against one catalog at once
// both succeed (the loser of the push race renders again on the new tip and
// finds nothing left to do), and the catalog holds one publish commit.
func TestConcurrentRuns(t *testing.T) {
	f := newFixture(t)
	errs := make(chan error, 2)
	logs := make([]strings.Builder, 2)
	for i := range 2 {
		go func() {
			_, err := Run(context.Background(), Options{
				Source:  f.source,
				Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
				Catalog: catalogOpts(f.catalog),
				Log:     slog.New(slog.NewTextHandler(&logs[i], nil)),
			})
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	repo, _ := git.PlainOpen(f.catalog)
	ref, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	iter, _ := repo.Log(&git.LogOptions{From: ref.Hash()})
	n := 0
	iter.ForEach(func(*object.Commit) error { n++; return nil })
	if n != 1 {
		t.Errorf("%d catalog commits, want 1", n)
	}
	t.Logf("run 1:\n%s\nrun 2:\n%s", logs[0].String(), logs[1].String())
}

// TestOverlayRendersInvalidObject: an overlay patch that breaks the CRD
// schema stops the run with the rendered file named; nothing is committed.
func TestOverlayRendersInvalidObject(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	clone := t.TempDir()
	repo, err := git.PlainClone(clone, false, &git.CloneOptions{URL: f.catalog, ReferenceName: "refs/heads/main"})
	if err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(clone, "kustomize/clusters/global/kustomization.yaml")
	os.WriteFile(k, []byte("resources:\n- ../../../publish/generated/global\npatches:\n- target: {kind: ArtifactVersion}\n  patch: |-\n    - op: replace\n      path: /spec/present\n      value: maybe\n"), 0o644)
	wt, _ := repo.Worktree()
	wt.AddWithOptions(&git.AddOptions{All: true})
	wt.Commit("bad overlay", &git.CommitOptions{Author: &object.Signature{Name: "u", Email: "u@example.com", When: time.Unix(1700000000, 0)}})
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(f.source, "packages/tiny/1.0.0"))
	f.commit(t, "delist 1.0.0")
	_, err = Run(context.Background(), Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml") || !strings.Contains(err.Error(), "present") {
		t.Fatalf("got %v", err)
	}
	if s := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"); !strings.Contains(s, "present: true") {
		t.Error("something was committed")
	}
}

// TestEmptySourceRefused: a source without manifests does not delist a
// whole catalog unless asked to.
func TestEmptySourceRefused(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	os.RemoveAll(filepath.Join(f.source, "packages/tiny"))
	os.MkdirAll(filepath.Join(f.source, "packages"), 0o755)
	f.commit(t, "remove everything")
	o := Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--allow-empty") {
		t.Fatalf("got %v", err)
	}
	o.AllowEmpty = true
	res, err := Run(context.Background(), o)
	if err != nil || len(res.Changes.Delisted) != 1 {
		t.Fatalf("with --allow-empty: %+v %v", res, err)
	}
}

// TestPlanPullRequest: a pull request adding a version gets a plan that
// lists the upgrade, the images missing at the destination and the
// rendered files that would change, with no registry or catalog write.
func TestPlanPullRequest(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	head, _ := f.repo.Head()
	wt, _ := f.repo.Worktree()
	if err := wt.Checkout(gitCheckout{Branch: "refs/heads/feature", Create: true, Hash: head.Hash()}.opts()); err != nil {
		t.Fatal(err)
	}
	f.addVersion(t, "1.2.0")

	catalogBefore := f.catalogFile(t, "publish/state/global.yaml")
	p, err := PlanRun(context.Background(), PlanOptions{
		Options: Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)},
		PR:      true, TargetBranch: "master",
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Source.BaseFrom != "merge-base" || p.Source.All {
		t.Errorf("source: %+v", p.Source)
	}
	if len(p.Artifacts) != 1 || p.Artifacts[0].Action != "upgraded" || len(p.Artifacts[0].Versions) != 1 || p.Artifacts[0].Versions[0].Version != "1.2.0" {
		t.Fatalf("artifacts: %+v", p.Artifacts)
	}
	if p.Summary.ImagesToCopy != 3 || p.Summary.ImagesMissing != 3 {
		t.Errorf("images: %+v", p.Summary)
	}
	if len(p.Files) != 1 || p.Files[0].Path != "rendered/global/tiny/artifactversion_tiny.v1.2.0.yaml" || p.Files[0].Change != "added" {
		t.Errorf("files: %+v", p.Files)
	}
	if !strings.Contains(p.Diff, "+  tag: v1.2.0") {
		t.Errorf("diff:\n%s", p.Diff)
	}
	md := p.Markdown()
	for _, want := range []string{"1 upgraded", "`tiny` | upgraded | 1.2.0 (added) | 3 (3)", "artifactversion_tiny.v1.2.0.yaml", "```diff"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// No writes: the destination lacks the new bundle, the catalog is unchanged.
	if _, err := remote.Head(mustRef(t, f.dst+"/mirror/tiny/bundle:v1.2.0")); err == nil {
		t.Error("plan mirrored the bundle")
	}
	if f.catalogFile(t, "publish/state/global.yaml") != catalogBefore {
		t.Error("plan changed the catalog")
	}
}

// TestEditedInPlace: editing a published version is reported (a warning by
// default) and still published.
func TestEditedInPlace(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	p := filepath.Join(f.source, "packages/tiny/1.1.0/manifest.yaml")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), "displayName: Tiny", "displayName: Tiny Operator", 1)), 0o644)
	f.commit(t, "edit 1.1.0 in place")
	res := f.run(t)
	found := false
	for _, fi := range res.Findings {
		if fi.Rule == "repo/edited-in-place" && fi.Version == "1.1.0" && fi.Severity == "warning" {
			found = true
		}
	}
	if !found {
		t.Errorf("no repo/edited-in-place finding: %+v", res.Findings)
	}
	if len(res.Changes.Updated) != 1 || res.Changes.Updated[0] != "tiny 1.1.0" {
		t.Errorf("changes: %+v", res.Changes)
	}
	if !strings.Contains(f.catalogMessage(t), "Updated in place:\n- tiny 1.1.0") {
		t.Errorf("commit message: %s", f.catalogMessage(t))
	}
	if !strings.Contains(f.catalogFile(t, "rendered/global/tiny/artifact_tiny.yaml"), "displayName: Tiny Operator") {
		t.Error("the edit was not published")
	}
}

func (f *fixture) catalogMessage(t *testing.T) string {
	repo, _ := git.PlainOpen(f.catalog)
	ref, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := repo.CommitObject(ref.Hash())
	return c.Message
}

// TestIncrementalRender: after a publish records its render key, the next
// run renders only the changed artifacts, and the catalog equals a full
// render; an overlay change renders everything again.
func TestIncrementalRender(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	if !strings.Contains(f.catalogFile(t, "publish/state/global.yaml"), "rendered:\n  global: sha256:") {
		t.Fatalf("no render key in the state:\n%s", f.catalogFile(t, "publish/state/global.yaml"))
	}
	// A second artifact, then a change to tiny only.
	f.addVersion(t, "1.2.0")
	f.run(t)

	clone := t.TempDir()
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: f.catalog, ReferenceName: "refs/heads/main"}); err != nil {
		t.Fatal(err)
	}
	state, _ := gitopsReadState(clone)
	full := t.TempDir()
	copyTree(t, clone, full, func(s string) string { return s })
	os.RemoveAll(filepath.Join(full, "rendered"))
	if _, err := target.RenderIntoDir(full, "global", render.Config{}, state, ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"rendered/global/tiny/artifact_tiny.yaml", "rendered/global/tiny/artifactversion_tiny.v1.2.0.yaml", "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"} {
		a, _ := os.ReadFile(filepath.Join(clone, p))
		b, _ := os.ReadFile(filepath.Join(full, p))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: incremental and full renders differ:\n%s\n---\n%s", p, a, b)
		}
	}
	// An overlay change: everything is rendered again with it.
	os.WriteFile(filepath.Join(clone, "kustomize/clusters/global/kustomization.yaml"), []byte("resources:\n- ../../../publish/generated/global\nlabels:\n- pairs: {site: edge}\n"), 0o644)
	if _, err := target.RenderIntoDir(clone, "global", render.Config{}, state, "sha256:old"); err != nil {
		t.Fatal(err)
	}
	if a, _ := os.ReadFile(filepath.Join(clone, "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml")); !strings.Contains(string(a), "site: edge") {
		t.Errorf("overlay change not rendered everywhere:\n%s", a)
	}
}

// pushVersion pushes tiny version v (bundle and its two images) to the
// source registry and writes its manifest.
func (f *fixture) pushVersion(t *testing.T, v string) {
	t.Helper()
	for _, img := range []string{"manager", "worker"} {
		pushRandom(t, f.src+"/tiny/"+img+":v"+v)
	}
	dir := t.TempDir()
	copyTree(t, "testdata/bundles/tiny/1.0.0", dir, func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "REGISTRY", f.src), "1.0.0", v)
	})
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, f.src+"/tiny/bundle:v"+v), img); err != nil {
		t.Fatal(err)
	}
	f.writeManifest(t, "tiny", v)
}

// addVersion is pushVersion and a commit of the package repo.
func (f *fixture) addVersion(t *testing.T, v string) {
	t.Helper()
	f.pushVersion(t, v)
	f.commit(t, "tiny "+v)
}

// TestDelistLastOperator: removing the last operator removes packages/
// from the Git tree (Git keeps no empty directory). Without --allow-empty
// the refusal names it; with it every artifact is delisted, never deleted.
func TestDelistLastOperator(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	os.RemoveAll(filepath.Join(f.source, "packages"))
	f.commit(t, "remove the last operator")
	o := Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--allow-empty") {
		t.Fatalf("without --allow-empty: %v", err)
	}
	o.AllowEmpty = true
	res, err := Run(context.Background(), o)
	if err != nil || len(res.Changes.Delisted) != 1 || res.Commit == "" {
		t.Fatalf("with --allow-empty: %+v %v", res, err)
	}
	if s := f.catalogFile(t, "rendered/global/tiny/artifact_tiny.yaml"); !strings.Contains(s, "present: false") {
		t.Errorf("the artifact is not delisted:\n%s", s)
	}
}

// TestUncommittedEditIsUpdated: with --allow-dirty, a published version
// whose manifest is edited on disk, without a commit, is published as it is
// on disk and reported as updated.
func TestUncommittedEditIsUpdated(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	p := filepath.Join(f.source, "packages/tiny/1.1.0/manifest.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), "displayName: Tiny", "displayName: Tiny Edited", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _, err := f.runOpts(t, func(o *Options) { o.AllowDirty = true })
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" || strings.Join(res.Changes.Updated, ",") != "tiny 1.1.0" {
		t.Fatalf("commit %q updated %v", res.Commit, res.Changes.Updated)
	}
}
