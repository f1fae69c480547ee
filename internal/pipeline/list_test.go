package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
)

// renderedVersions lists "<cluster> <artifact> <version> <present>" for
// every ArtifactVersion rendered at the tip of the bare catalog repo dir.
func renderedVersions(t *testing.T, dir string) map[string]bool {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := repo.CommitObject(ref.Hash())
	tree, _ := c.Tree()
	out := map[string]bool{}
	tree.Files().ForEach(func(f *object.File) error {
		rest, ok := strings.CutPrefix(f.Name, "rendered/")
		if !ok || !strings.HasPrefix(filepath.Base(f.Name), "artifactversion_") {
			return nil
		}
		data, _ := f.Contents()
		cluster, _, _ := strings.Cut(rest, "/")
		var art, ver string
		for _, l := range strings.Split(data, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "cpaas.io/artifact-version: "); ok && art == "" {
				art = v
			}
			if v, ok := strings.CutPrefix(l, "tag: "); ok && ver == "" {
				ver = strings.TrimPrefix(strings.Trim(v, `"`), "v")
			}
		}
		out[cluster+" "+art+" "+ver+" "+map[bool]string{true: "listed", false: "delisted"}[strings.Contains(data, "present: true")]] = true
		return nil
	})
	return out
}

// TestListAgreesWithRendered: after runs over two clusters (global: every
// artifact; edge: tiny only) and a delisting, `publish list` gives every
// version on each cluster as the rendered ArtifactVersions have it, and
// "-" where a cluster never got an artifact; --cluster narrows it, and a
// cluster the catalog has no state of is an input error.
func TestListAgreesWithRendered(t *testing.T) {
	f := newFixture(t)
	f.addOther(t)
	run := func() {
		t.Helper()
		if _, err := Run(context.Background(), Options{
			Source: f.source, Catalog: catalogOpts(f.catalog), AllowEmpty: true,
			Lint:     lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}},
			Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
			Clusters: []ClusterOptions{{Name: "global"}, {Name: "edge", Include: []string{"tiny"}}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	os.RemoveAll(filepath.Join(f.source, "packages/tiny/1.0.0"))
	f.commit(t, "delist tiny 1.0.0")
	run()
	l, err := List(context.Background(), catalogOpts(f.catalog), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, a := range l.Artifacts {
		for _, v := range a.Versions {
			for c, st := range v.Clusters {
				got[c+" "+a.Name+" "+v.Version+" "+st] = true
			}
		}
	}
	want := renderedVersions(t, f.catalog)
	if len(want) == 0 || len(got) != len(want) {
		t.Errorf("list %v\nrendered %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("rendered %q, not listed so: %v", k, got)
		}
	}
	if !got["global tiny 1.0.0 delisted"] || !got["edge tiny 1.1.0 listed"] || got["edge other 1.0.0 listed"] {
		t.Errorf("list %v", got)
	}
	table := l.Table()
	if !strings.Contains(table, "ARTIFACT") || !strings.Contains(table, "other") || !strings.Contains(l.Markdown(), "| other | 1.0.0 | - | listed |") {
		t.Errorf("table:\n%s\nmarkdown:\n%s", table, l.Markdown())
	}
	if one, err := List(context.Background(), catalogOpts(f.catalog), []string{"edge"}); err != nil || len(one.Clusters) != 1 || one.Clusters[0] != "edge" {
		t.Errorf("--cluster edge: %+v, %v", one, err)
	}
	var ie *InputError
	if _, err := List(context.Background(), catalogOpts(f.catalog), []string{"nosuch"}); err == nil || !strings.Contains(err.Error(), "--cluster nosuch") {
		t.Errorf("an unknown cluster: %v", err)
	} else if !errors.As(err, &ie) {
		t.Errorf("an unknown cluster: %T, want an input error", err)
	}
}
