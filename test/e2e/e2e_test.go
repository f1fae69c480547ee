// Package e2e runs the publish binary against the real parts: the Debian
// docker-registry (source and destination, TLS and htpasswd), git
// http-backend behind basic auth, and every bundle of ../shared/corpus.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/crdcheck"
	"github.com/operator-publish/publish/internal/testenv"
)

var publishBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test here skips with -short: build nothing
	}
	dir, err := os.MkdirTemp("", "publish-e2e-bin-")
	if err != nil {
		panic(err)
	}
	publishBin = filepath.Join(dir, "publish")
	out, err := exec.Command("go", "build", "-o", publishBin, "github.com/operator-publish/publish/cmd/publish").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building publish: %v\n%s", err, out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test world: two registries, a Git server with an empty
// catalog repo, and a package repo.
type env struct {
	t          *testing.T
	src, dst   *testenv.Registry
	git        *testenv.GitServer
	catalogURL string
	source     string
	caFile     string
	repo       *git.Repository
}

func newEnv(t *testing.T) *env {
	testenv.Short(t, "integration test")
	testenv.Require(t, "git", "git")
	e := &env{t: t}
	e.src = testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	e.dst = testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	e.git = testenv.StartGitServer(t)
	e.catalogURL = e.git.NewBareRepo(t, "catalog")
	e.source = t.TempDir()
	// One --ca-file trusting both registries.
	var pem []byte
	for _, f := range []string{e.src.CAFile, e.dst.CAFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pem = append(pem, b...)
	}
	e.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(e.caFile, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.repo, err = git.PlainInit(e.source, false); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) commit(msg string) {
	e.t.Helper()
	wt, _ := e.repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		e.t.Fatal(err)
	}
	sig := &object.Signature{Name: "Dev", Email: "dev@example.com", When: time.Unix(1750000000, 0)}
	if _, err := wt.Commit(msg, &git.CommitOptions{Author: sig}); err != nil {
		e.t.Fatal(err)
	}
}

// publish runs the binary with the world's flags plus extra; secrets go
// through the environment, as in CI.
func (e *env) publish(extra ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	args := append([]string{"run",
		"--source", e.source,
		"--catalog", e.catalogURL,
		"--dst-registry", e.dst.Host + "/mirror",
		"--ca-file", e.caFile,
		"--src-username", e.src.Username,
		"--dst-username", e.dst.Username,
		"--catalog-username", e.git.Username,
	}, extra...)
	cmd := exec.Command(publishBin, args...)
	cmd.Env = append(os.Environ(),
		"PUBLISH_SRC_PASSWORD="+e.src.Password,
		"PUBLISH_DST_PASSWORD="+e.dst.Password,
		"PUBLISH_CATALOG_PASSWORD="+e.git.Password,
		"DOCKER_CONFIG="+e.t.TempDir(),
	)
	var o, er bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &er
	err := cmd.Run()
	code = 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	for _, secret := range []string{e.src.Password, e.dst.Password, e.git.Password} {
		if strings.Contains(o.String()+er.String(), secret) {
			e.t.Fatalf("publish printed a password:\n%s\n%s", o.String(), er.String())
		}
	}
	return o.String(), er.String(), code
}

// catalog clones the catalog repo and returns its commits (newest first)
// and the tree of the tip.
func (e *env) catalog() ([]*object.Commit, *object.Tree) {
	e.t.Helper()
	repo, err := git.Clone(memStorage(), nil, &git.CloneOptions{
		URL:  e.catalogURL,
		Auth: &githttp.BasicAuth{Username: e.git.Username, Password: e.git.Password},
	})
	if err != nil {
		e.t.Fatalf("cloning catalog: %v", err)
	}
	head, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		e.t.Fatal(err)
	}
	iter, _ := repo.Log(&git.LogOptions{From: head.Hash()})
	var commits []*object.Commit
	iter.ForEach(func(c *object.Commit) error { commits = append(commits, c); return nil })
	tree, _ := commits[0].Tree()
	return commits, tree
}

// changedFiles lists the paths that differ between two commits.
func changedFiles(t *testing.T, from, to *object.Commit) []string {
	a, _ := from.Tree()
	b, _ := to.Tree()
	changes, err := a.Diff(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range changes {
		n := c.To.Name
		if n == "" {
			n = c.From.Name
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func fileIn(t *testing.T, tree *object.Tree, p string) string {
	t.Helper()
	f, err := tree.File(p)
	if err != nil {
		t.Fatalf("catalog has no %s", p)
	}
	s, _ := f.Contents()
	return s
}

func (e *env) digest(reg *testenv.Registry, ref string) string {
	e.t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		e.t.Fatal(err)
	}
	d, err := remote.Head(r, reg.Options()...)
	if err != nil {
		e.t.Fatalf("%s: %v", ref, err)
	}
	return d.Digest.String()
}

// dstRef maps a source reference to the destination as publish does.
func (e *env) dstRef(src string) string {
	return e.dst.Host + "/mirror" + strings.TrimPrefix(src, e.src.Host)
}

// TestCorpus is the story of the issue: every bundle of the corpus goes
// through `publish run`; a rerun commits nothing; deleting one version
// delists that version alone; deleting an artifact delists it alone.
func TestCorpus(t *testing.T) {
	shared := testenv.RequireShared(t)
	e := newEnv(t)
	ctx := context.Background()
	corpus, err := testenv.BuildCorpus(ctx, filepath.Join(shared, "corpus"), e.src.Host, filepath.Join(e.source, "packages"), e.src.Options()...)
	if err != nil {
		t.Fatalf("building the corpus: %v", err)
	}
	dirs, _ := testenv.CorpusBundleDirs(filepath.Join(shared, "corpus"))
	if len(corpus.Packages) != len(dirs) {
		t.Fatalf("corpus: %d bundles built of %d", len(corpus.Packages), len(dirs))
	}
	// The corpus is upstream community bundles, some with real validator
	// findings. A platform team that republishes them as they are waives
	// those rules, with a reason, in publish.yaml: so does this test.
	var waivers strings.Builder
	for _, rule := range []string{"bundle/validator/crd", "bundle/validator/service-account", "bundle/validator/related-images", "dependency/missing",
		"bundle/default-channel", "bundle/validator/csv-examples", "manifest/icon", "repo/skip-range", "bundle/validator/owned-crds", "bundle/csv-version",
		"repo/duplicate-release", "repo/duplicate-csv-name"} {
		fmt.Fprintf(&waivers, "  - rule: %s\n    reason: upstream community bundle, republished as it is\n", rule)
	}
	// Two clusters in each run: global gets every operator, edge all but
	// etcd, in its own namespace; the first run seeds an overlay for each.
	clusters := "clusters:\n  global: {}\n  edge: {exclude: [etcd], namespace: edge-system}\n"
	if err := os.WriteFile(filepath.Join(e.source, "publish.yaml"), []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\n"+clusters+"lint:\n  waivers:\n"+waivers.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	e.commit("add the corpus")

	out, errOut, code := e.publish()
	if code != 0 {
		t.Fatalf("publish run: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("first run:\n%s%s", out, errOut)

	// Every bundle and related image is at the destination with the source digest.
	packages := map[string][]testenv.CorpusPackage{}
	for _, p := range corpus.Packages {
		packages[p.Package] = append(packages[p.Package], p)
		if got := e.digest(e.dst, e.dstRef(p.BundleRef)); got != p.BundleDigest {
			t.Errorf("bundle %s: digest %s at destination, %s at source", p.BundleRef, got, p.BundleDigest)
		}
		for _, img := range p.RelatedImages {
			if s, d := e.digest(e.src, img), e.digest(e.dst, e.dstRef(img)); s != d {
				t.Errorf("%s: digest %s at destination, %s at source", img, d, s)
			}
		}
	}

	// One Artifact per operator, one ArtifactVersion per bundle, all valid.
	commits, tree := e.catalog()
	if len(commits) != 1 {
		t.Fatalf("catalog has %d commits after the first run", len(commits))
	}
	for _, want := range []string{"Source-Commit: ", "Cluster edge:", "Cluster global:"} {
		if !strings.Contains(commits[0].Message, want) {
			t.Errorf("commit message lacks %q:\n%s", want, commits[0].Message)
		}
	}
	v, err := crdcheck.Load(filepath.Join(shared, "crds"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]map[string]int{"global": {}, "edge": {}}
	tree.Files().ForEach(func(f *object.File) error {
		cluster, _, _ := strings.Cut(strings.TrimPrefix(f.Name, "rendered/"), "/")
		if !strings.HasPrefix(f.Name, "rendered/") || kinds[cluster] == nil {
			return nil
		}
		data, _ := f.Contents()
		if err := v.Validate([]byte(data)); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
		if strings.Contains(data, "present: false") {
			t.Errorf("%s: present: false after the first run", f.Name)
		}
		if cluster == "edge" && !strings.Contains(data, "namespace: edge-system") {
			t.Errorf("%s: not in edge's namespace", f.Name)
		}
		kinds[cluster][strings.SplitN(filepath.Base(f.Name), "_", 2)[0]]++
		return nil
	})
	if k := kinds["global"]; k["artifact"] != len(packages) || k["artifactversion"] != len(corpus.Packages) {
		t.Errorf("rendered %d Artifacts and %d ArtifactVersions, want %d and %d", k["artifact"], k["artifactversion"], len(packages), len(corpus.Packages))
	}
	if k := kinds["edge"]; k["artifact"] != len(packages)-1 || k["artifactversion"] != len(corpus.Packages)-len(packages["etcd"]) {
		t.Errorf("rendered on edge %d Artifacts and %d ArtifactVersions, want %d and %d (no etcd)", k["artifact"], k["artifactversion"], len(packages)-1, len(corpus.Packages)-len(packages["etcd"]))
	}
	for _, p := range []string{"publish/state/global.yaml", "publish/state/edge.yaml", "kustomize/clusters/global/kustomization.yaml", "kustomize/clusters/edge/kustomization.yaml", "argocd/application.yaml", "flux/kustomization.yaml"} {
		fileIn(t, tree, p)
	}

	// A second run makes no commit.
	if out, errOut, code := e.publish(); code != 0 || !strings.Contains(out, "nothing committed") {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, errOut)
	}
	if c, _ := e.catalog(); len(c) != 1 {
		t.Fatalf("second run made a commit")
	}

	// Deleting one version directory delists that version alone.
	var multi []testenv.CorpusPackage
	for _, ps := range packages {
		if len(ps) > 1 && (multi == nil || ps[0].Package < multi[0].Package) {
			multi = ps
		}
	}
	if multi == nil {
		t.Fatal("the corpus has no operator with several versions")
	}
	gone := multi[0]
	os.RemoveAll(filepath.Dir(gone.ManifestPath))
	e.commit("remove " + gone.Package + " " + gone.Version)
	if out, errOut, code := e.publish(); code != 0 {
		t.Fatalf("delist version: exit %d\n%s\n%s", code, out, errOut)
	}
	commits, tree = e.catalog()
	if len(commits) != 2 {
		t.Fatalf("delisting a version made %d commits", len(commits)-1)
	}
	avFile := fmt.Sprintf("rendered/global/%s/artifactversion_%s.v%s.yaml", gone.Package, gone.Package, gone.Version)
	var want []string
	for _, c := range []string{"edge", "global"} {
		if c == "edge" && gone.Package == "etcd" {
			continue
		}
		want = append(want,
			fmt.Sprintf("publish/generated/%s/%s/artifactversion_%s.v%s.yaml", c, gone.Package, gone.Package, gone.Version),
			"publish/state/"+c+".yaml",
			fmt.Sprintf("rendered/%s/%s/artifactversion_%s.v%s.yaml", c, gone.Package, gone.Package, gone.Version))
	}
	sort.Strings(want)
	if got := changedFiles(t, commits[1], commits[0]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("delisting a version changed %v, want %v", got, want)
	}
	if s := fileIn(t, tree, avFile); !strings.Contains(s, "present: false") {
		t.Errorf("%s:\n%s", avFile, s)
	}

	// Deleting a whole artifact directory delists the artifact and its versions alone.
	single := packages["etcd"]
	if len(single) == 0 {
		t.Fatal("the corpus has no etcd")
	}
	os.RemoveAll(filepath.Join(e.source, "packages", "etcd"))
	e.commit("remove etcd")
	if out, errOut, code := e.publish(); code != 0 {
		t.Fatalf("delist artifact: exit %d\n%s\n%s", code, out, errOut)
	}
	commits, tree = e.catalog()
	if len(commits) != 3 {
		t.Fatalf("delisting an artifact made %d commits", len(commits)-2)
	}
	// edge never got etcd: only global changes.
	want = []string{"publish/state/global.yaml"}
	for _, dir := range []string{"publish/generated/global", "rendered/global"} {
		want = append(want, dir+"/etcd/artifact_etcd.yaml")
		for _, p := range single {
			want = append(want, fmt.Sprintf("%s/etcd/artifactversion_etcd.v%s.yaml", dir, p.Version))
		}
	}
	sort.Strings(want)
	if got := changedFiles(t, commits[1], commits[0]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("delisting an artifact changed %v, want %v", got, want)
	}
	if s := fileIn(t, tree, "rendered/global/etcd/artifact_etcd.yaml"); !strings.Contains(s, "present: false") {
		t.Errorf("etcd Artifact:\n%s", s)
	}
}
