package prune

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/testenv"
)

// catalogRepo is a catalog checkout whose history the test writes, one
// commit of state files at a time, at given committer times.
type catalogRepo struct {
	t   *testing.T
	dir string
}

func newCatalogRepo(t *testing.T) *catalogRepo {
	dir := t.TempDir()
	c := &catalogRepo{t: t, dir: dir}
	c.git(time.Time{}, "init", "-q", "-b", "main")
	return c
}

func (c *catalogRepo) git(when time.Time, args ...string) {
	c.t.Helper()
	bin := testenv.Require(c.t, "git", "git")
	cmd := exec.Command(bin, append([]string{"-C", c.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if !when.IsZero() {
		d := when.Format(time.RFC3339)
		cmd.Env = append(cmd.Env, "GIT_AUTHOR_DATE="+d, "GIT_COMMITTER_DATE="+d)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// commit writes the state of each cluster and commits at when.
func (c *catalogRepo) commit(when time.Time, states map[string][]model.ArtifactRecord) {
	c.t.Helper()
	for cl, arts := range states {
		data, err := (&gitops.State{Source: gitops.Source{Commit: "abc"}, Artifacts: arts}).Marshal()
		if err != nil {
			c.t.Fatal(err)
		}
		p := filepath.Join(c.dir, filepath.FromSlash(gitops.StatePath(cl)))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	c.git(when, "add", "-A")
	c.git(when, "commit", "-q", "-m", "publish")
}

const (
	dst      = "r.example.com"
	shared   = "sha256:" + "aa00000000000000000000000000000000000000000000000000000000000000"
	only100  = "sha256:" + "b100000000000000000000000000000000000000000000000000000000000000"
	bundle10 = "sha256:" + "c100000000000000000000000000000000000000000000000000000000000000"
	bundle11 = "sha256:" + "c110000000000000000000000000000000000000000000000000000000000000"
	bundle12 = "sha256:" + "c120000000000000000000000000000000000000000000000000000000000000"
	only110  = "sha256:" + "b110000000000000000000000000000000000000000000000000000000000000"
	sig100   = "sha256:" + "d100000000000000000000000000000000000000000000000000000000000000"
)

// etcd is the artifact with versions 1.0.0, 1.1.0 and 1.2.0, those in
// present listed; 1.0.0 and 1.1.0 share a related image with 1.2.0.
func etcd(present ...string) model.ArtifactRecord {
	is := map[string]bool{}
	for _, v := range present {
		is[v] = true
	}
	img := func(d string) model.Image {
		return model.Image{Source: "quay.io/etcd/etcd@" + d, Destination: dst + "/m/etcd/etcd:x", Digest: d}
	}
	own := img(only100)
	own.Signatures = []string{sig100}
	return model.ArtifactRecord{Name: "etcd", Present: true, Registry: dst, Repository: "m/etcd/bundle", Versions: []model.VersionRecord{
		{Version: "1.0.0", Tag: "v1.0.0", Present: is["1.0.0"], BundleDigest: bundle10, Images: []model.Image{img(shared), own}},
		{Version: "1.1.0", Tag: "v1.1.0", Present: is["1.1.0"], BundleDigest: bundle11, Images: []model.Image{img(shared), img(only110)}},
		{Version: "1.2.0", Tag: "v1.2.0", Present: is["1.2.0"], BundleDigest: bundle12, Images: []model.Image{img(shared)}},
	}}
}

// TestMakePlan: two clusters on one registry. 1.0.0 is delisted on a
// only (b still lists it: nothing of it is an orphan), then on b too: its
// bundle, its own image and that image's signature are orphans, the image
// it shares with a listed
// version is not. 1.1.0, delisted on both yesterday, is too recent for
// --older-than 30 days.
func TestMakePlan(t *testing.T) {
	c := newCatalogRepo(t)
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	all := []string{"1.0.0", "1.1.0", "1.2.0"}
	c.commit(t0, map[string][]model.ArtifactRecord{"a": {etcd(all...)}, "b": {etcd(all...)}})
	c.commit(t0.AddDate(0, 0, 10), map[string][]model.ArtifactRecord{"a": {etcd("1.1.0", "1.2.0")}})
	now := t0.AddDate(0, 3, 0)
	p, err := MakePlan(context.Background(), Options{CatalogDir: c.dir, OlderThan: DefaultOlderThan, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 0 || len(p.Recent) != 0 {
		t.Fatalf("1.0.0 is still listed on b: entries %+v, recent %+v", p.Entries, p.Recent)
	}
	delistedOnB := t0.AddDate(0, 0, 20)
	c.commit(delistedOnB, map[string][]model.ArtifactRecord{"b": {etcd("1.1.0", "1.2.0")}})
	yesterday := now.AddDate(0, 0, -1)
	c.commit(yesterday, map[string][]model.ArtifactRecord{"a": {etcd("1.2.0")}, "b": {etcd("1.2.0")}})
	p, err = MakePlan(context.Background(), Options{CatalogDir: c.dir, OlderThan: DefaultOlderThan, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Entry{}
	for _, e := range p.Entries {
		got[e.Repository+"@"+e.Digest] = e
	}
	if len(p.Entries) != 3 {
		t.Errorf("entries %+v, want 1.0.0's bundle, own image and its signature", p.Entries)
	}
	if e, ok := got[dst+"/m/etcd/etcd@"+sig100]; !ok || !strings.Contains(strings.Join(e.Versions, ";"), "(a signature of related image") {
		t.Errorf("the signature of 1.0.0's own image: %+v", e)
	}
	b := got[dst+"/m/etcd/bundle@"+bundle10]
	if b.Digest == "" || !b.DelistedSince.Equal(delistedOnB) || len(b.Tags) != 1 || b.Tags[0] != "v1.0.0" || len(b.Versions) != 2 {
		t.Errorf("1.0.0's bundle: %+v (want delisted since %s, the later of the two clusters)", b, delistedOnB)
	}
	if _, ok := got[dst+"/m/etcd/etcd@"+only100]; !ok {
		t.Errorf("1.0.0's own image is not planned: %+v", p.Entries)
	}
	if _, ok := got[dst+"/m/etcd/etcd@"+shared]; ok {
		t.Error("the image 1.2.0 still lists is planned")
	}
	if len(p.Recent) != 2 {
		t.Errorf("recent %+v, want 1.1.0's bundle and own image", p.Recent)
	}
	if p.Kept != 1 {
		t.Errorf("kept %d, want 1 (the image 1.0.0 shares with the listed 1.2.0)", p.Kept)
	}
	md := p.Markdown()
	for _, want := range []string{"**3 manifests to delete**", "2 delisted less than 720h0m0s ago kept for now, 1 of delisted versions still used by a listed version", "Delisted less than 720h0m0s ago, kept for now:", "`" + dst + "/m/etcd/bundle`", "a: etcd 1.0.0 (bundle); b: etcd 1.0.0 (bundle)"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestMakePlanLinkedWorktree: a catalog checkout made with `git worktree
// add` (its .git a file naming the common Git directory) is read as the
// main checkout is: the same history, the same plan.
func TestMakePlanLinkedWorktree(t *testing.T) {
	c := newCatalogRepo(t)
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	c.commit(t0, map[string][]model.ArtifactRecord{"a": {etcd("1.0.0", "1.1.0", "1.2.0")}})
	c.commit(t0.AddDate(0, 0, 10), map[string][]model.ArtifactRecord{"a": {etcd("1.2.0")}})
	linked := filepath.Join(t.TempDir(), "linked")
	c.git(time.Time{}, "worktree", "add", "-q", "-b", "review", linked)
	now := t0.AddDate(0, 3, 0)
	want, err := MakePlan(context.Background(), Options{CatalogDir: c.dir, OlderThan: DefaultOlderThan, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got, err := MakePlan(context.Background(), Options{CatalogDir: linked, OlderThan: DefaultOlderThan, Now: now})
	if err != nil {
		t.Fatalf("the linked worktree: %v", err)
	}
	if len(want.Entries) == 0 || got.Markdown() != want.Markdown() {
		t.Errorf("the linked worktree plans\n%s\nthe main checkout\n%s", got.Markdown(), want.Markdown())
	}
}

// TestMakePlanOLMDeprecated: cluster a is published to OLM (its state's
// render key names a catalog image). 1.0.0, delisted there long ago, is
// planned only once the catalog image no longer keeps it deprecated (the
// run that ends its deprecation period takes it out): prune and the
// catalog agree. Without a way to read the catalog image, the plan is an
// error naming the cluster.
func TestMakePlanOLMDeprecated(t *testing.T) {
	c := newCatalogRepo(t)
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	const image = dst + "/olm/catalog@sha256:" + "ee00000000000000000000000000000000000000000000000000000000000000"
	write := func(when time.Time, arts ...model.ArtifactRecord) {
		data, err := (&gitops.State{Source: gitops.Source{Commit: "abc"}, Artifacts: arts, Rendered: map[string]string{"a": "olm " + image}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(c.dir, filepath.FromSlash(gitops.StatePath("a")))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c.git(when, "add", "-A")
		c.git(when, "commit", "-q", "-m", "publish")
	}
	write(t0, etcd("1.0.0", "1.1.0", "1.2.0"))
	write(t0.AddDate(0, 0, 1), etcd("1.1.0", "1.2.0"))
	now := t0.AddDate(0, 3, 0)
	kept := map[string]bool{dst + "/m/etcd/bundle@" + bundle10: true}
	var asked []string
	o := Options{CatalogDir: c.dir, OlderThan: DefaultOlderThan, Now: now, OLMKept: func(_ context.Context, img string) (map[string]bool, error) {
		asked = append(asked, img)
		return kept, nil
	}}
	p, err := MakePlan(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != image {
		t.Errorf("catalog images read %v, want %s", asked, image)
	}
	if len(p.Entries) != 0 || p.Deprecated != 3 {
		t.Errorf("1.0.0 is kept deprecated in the OLM catalog: entries %+v, deprecated %d (want its bundle, own image and signature)", p.Entries, p.Deprecated)
	}
	if md := p.Markdown(); !strings.Contains(md, "3 of delisted versions an OLM catalog still keeps deprecated") {
		t.Errorf("Markdown:\n%s", md)
	}
	kept = map[string]bool{} // the period ended: the catalog no longer holds it
	if p, err = MakePlan(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 3 || p.Deprecated != 0 {
		t.Errorf("after the period: entries %+v, deprecated %d, want 1.0.0's three manifests planned", p.Entries, p.Deprecated)
	}
	o.OLMKept = nil
	if _, err := MakePlan(context.Background(), o); err == nil || !strings.Contains(err.Error(), "cluster a is published to OLM") {
		t.Errorf("without OLMKept: %v", err)
	}
}
