package pipeline

import (
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/mirror"
)

// severalArtifacts is the fixture with alpha and beta besides tiny, each
// with its own bundle and images, committed, and the archive of them all.
func severalArtifacts(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t)
	f.pushRequiring(t, "alpha", "1.0.0")
	f.pushRequiring(t, "beta", "1.0.0")
	f.commit(t, "alpha, beta")
	out := filepath.Join(t.TempDir(), "all.tgz")
	if _, err := Package(t.Context(), PackageOptions{Source: f.source, Output: out, Mirror: mirror.Options{PlainHTTP: true}}); err != nil {
		t.Fatal(err)
	}
	return f, out
}

// headChanges lists the paths the catalog's last commit changed.
func headChanges(t *testing.T, dir string) []string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	tree, _ := c.Tree()
	var parent *object.Tree
	if p, err := c.Parent(0); err == nil {
		parent, _ = p.Tree()
	}
	changes, err := object.DiffTree(parent, tree)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ch := range changes {
		n := ch.To.Name
		if n == "" {
			n = ch.From.Name
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestPushOnlySubset: one archive of tiny, alpha and beta serves several
// sites. push --only tiny on a fresh site lists tiny alone and pushes its
// images alone; push --only alpha then makes a commit that touches alpha's
// files and the state only, leaving tiny as it is and beta unlisted; a name
// the archive does not carry is a usage error listing what it carries.
func TestPushOnlySubset(t *testing.T) {
	f, out := severalArtifacts(t)
	site := t.TempDir()
	if _, err := git.PlainInit(site, true); err != nil {
		t.Fatal(err)
	}
	push := func(only ...string) (*PushResult, error) {
		return Push(t.Context(), PushOptions{
			Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
			Options: Options{Catalog: catalogOpts(site)}, TempDir: t.TempDir(), Only: only,
		})
	}
	res, err := push("tiny")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Catalog.Changes.Listed; len(got) != 1 || !strings.Contains(got[0], "tiny") {
		t.Errorf("--only tiny listed %v", got)
	}
	for _, im := range res.Push.Images {
		if !strings.Contains(im.Source, "/tiny/") {
			t.Errorf("--only tiny pushed %s", im.Source)
		}
	}
	if len(res.Push.Images) != 6 || len(res.Push.Left) != 6 {
		t.Errorf("--only tiny: %d images pushed, %d left; want 6 and 6", len(res.Push.Images), len(res.Push.Left))
	}
	if _, err := remote.Head(mustRef(t, f.dst+"/mirror/alpha/bundle:v1.0.0")); err == nil {
		t.Errorf("alpha's bundle reached the site with --only tiny")
	}
	state := catalogFileOf(t, site, "publish/state/global.yaml")
	if !strings.Contains(state, "name: tiny") || strings.Contains(state, "name: alpha") || strings.Contains(state, "name: beta") {
		t.Errorf("state after --only tiny:\n%s", state)
	}
	tinyAV := catalogFileOf(t, site, "rendered/global/tiny/artifactversion_tiny.v1.1.0.yaml")

	res, err = push("alpha")
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Catalog.Changes
	if len(ch.Listed) != 1 || !strings.Contains(ch.Listed[0], "alpha") || len(ch.Delisted)+len(ch.Upgraded)+len(ch.Relisted) != 0 {
		t.Errorf("--only alpha: changes %+v", ch)
	}
	changed := headChanges(t, site)
	if !slices.ContainsFunc(changed, func(p string) bool { return strings.HasPrefix(p, "rendered/global/alpha/") }) {
		t.Errorf("--only alpha rendered no file of alpha: %v", changed)
	}
	for _, p := range changed {
		if strings.Contains(p, "tiny") || strings.Contains(p, "beta") {
			t.Errorf("--only alpha changed %s", p)
		}
	}
	if got := catalogFileOf(t, site, "rendered/global/tiny/artifactversion_tiny.v1.1.0.yaml"); got != tinyAV {
		t.Errorf("tiny changed with --only alpha:\n%s\nwant:\n%s", got, tinyAV)
	}
	state = catalogFileOf(t, site, "publish/state/global.yaml")
	if !strings.Contains(state, "name: tiny") || !strings.Contains(state, "name: alpha") || strings.Contains(state, "name: beta") {
		t.Errorf("state after --only alpha:\n%s", state)
	}

	_, err = push("alpha", "nope")
	var fe *FlagError
	if !errors.As(err, &fe) || fe.Flag != "--only" || !strings.Contains(err.Error(), "nope") || !strings.Contains(err.Error(), "alpha, beta, tiny") {
		t.Errorf("--only nope: %v", err)
	}
}

// TestPushClusterSubset: push --cluster edge, whose publish.yaml include
// list takes beta only, pushes beta's images and lists exactly beta.
func TestPushClusterSubset(t *testing.T) {
	f, out := severalArtifacts(t)
	site := t.TempDir()
	if _, err := git.PlainInit(site, true); err != nil {
		t.Fatal(err)
	}
	res, err := Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Options: Options{Catalog: catalogOpts(site)}, TempDir: t.TempDir(),
		Selection: ClusterOptions{Name: "edge", Include: []string{"b*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Catalog.Changes.Listed; len(got) != 1 || !strings.Contains(got[0], "beta") {
		t.Errorf("cluster edge listed %v", got)
	}
	for _, im := range res.Push.Images {
		if !strings.Contains(im.Source, "/beta/") {
			t.Errorf("cluster edge pushed %s", im.Source)
		}
	}
	state := catalogFileOf(t, site, "publish/state/global.yaml")
	if !strings.Contains(state, "name: beta") || strings.Contains(state, "name: tiny") || strings.Contains(state, "name: alpha") {
		t.Errorf("state:\n%s", state)
	}
	for _, p := range headChanges(t, site) {
		if strings.Contains(p, "tiny") || strings.Contains(p, "alpha") {
			t.Errorf("cluster edge changed %s", p)
		}
	}
	// A selection that takes nothing the archive carries pushes nothing.
	_, err = Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/other", PlainHTTP: true},
		Options: Options{Catalog: catalogOpts(site)}, TempDir: t.TempDir(),
		Selection: ClusterOptions{Name: "far", Include: []string{"zeta-*"}},
	})
	var fe *FlagError
	if !errors.As(err, &fe) || fe.Flag != "--cluster" || !strings.Contains(err.Error(), "alpha, beta, tiny") {
		t.Errorf("a selection of nothing: %v", err)
	}
	if _, err := remote.Head(mustRef(t, f.dst+"/other/beta/bundle:v1.0.0")); err == nil {
		t.Errorf("pushed despite the error")
	}
}
