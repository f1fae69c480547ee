package render

import (
	"flag"
	"github.com/operator-publish/publish/internal/checkout"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/crdcheck"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

func sample() []model.ArtifactRecord {
	prev := []model.ArtifactRecord{
		{Name: "etcd", Registry: "reg.example.com:5000", Repository: "ops/etcd-bundle", DisplayName: "etcd", Versions: []model.VersionRecord{{Version: "0.9.2", Tag: "v0.9.2"}, {Version: "0.9.4", Tag: "v0.9.4"}}},
		{Name: "gone", Registry: "reg.example.com:5000", Repository: "ops/gone-bundle", DisplayName: "Gone", Versions: []model.VersionRecord{{Version: "1.0.0", Tag: "v1.0.0"}}},
	}
	cur := []model.ArtifactRecord{
		{Name: "etcd", Registry: "reg.example.com:5000", Repository: "ops/etcd-bundle", DisplayName: "etcd", Description: "Key-value store", Versions: []model.VersionRecord{{Version: "0.9.4", Tag: "v0.9.4"}, {Version: "0.10.0", Tag: "v0.10.0"}}},
		{Name: "hello", Registry: "reg.example.com:5000", Repository: "ops/hello-bundle", Versions: []model.VersionRecord{{Version: "1.0.0-rc.1", Tag: "1.0.0_RC1"}}},
	}
	return Merge(prev, cur)
}

func TestMergeAndDiff(t *testing.T) {
	prev := []model.ArtifactRecord{
		{Name: "etcd", Present: true, Versions: []model.VersionRecord{{Version: "0.9.2", Tag: "v0.9.2", Present: true}, {Version: "0.9.4", Tag: "v0.9.4", Present: true}}},
		{Name: "gone", Present: true, Versions: []model.VersionRecord{{Version: "1.0.0", Tag: "v1.0.0", Present: true}}},
	}
	next := sample()
	var names []string
	for _, a := range next {
		var vs []string
		for _, v := range a.Versions {
			s := v.Version
			if !v.Present {
				s += "(x)"
			}
			vs = append(vs, s)
		}
		p := ""
		if !a.Present {
			p = "(x)"
		}
		names = append(names, a.Name+p+":"+strings.Join(vs, ","))
	}
	if got, want := strings.Join(names, " "), "etcd:0.9.2(x),0.9.4,0.10.0 gone(x):1.0.0(x) hello:1.0.0-rc.1"; got != want {
		t.Errorf("merge: got %s, want %s", got, want)
	}
	ch := Diff(prev, next)
	if strings.Join(ch.Listed, ";") != "hello 1.0.0-rc.1" || strings.Join(ch.Upgraded, ";") != "etcd 0.10.0" ||
		strings.Join(ch.Delisted, ";") != "etcd 0.9.2;gone (artifact)" || len(ch.Relisted) != 0 {
		t.Errorf("diff: %+v", ch)
	}
	// Relist.
	back := Merge(next, []model.ArtifactRecord{{Name: "gone", Versions: []model.VersionRecord{{Version: "1.0.0", Tag: "v1.0.0"}}}})
	if ch := Diff(next, back); len(ch.Relisted) != 1 || ch.Relisted[0] != "gone 1.0.0" {
		t.Errorf("relist: %+v", ch)
	}
}

func TestArtifactVersionName(t *testing.T) {
	for tag, want := range map[string]string{"v1.2.3": "op.v1.2.3", "1.0.0_RC1": "op.1.0.0-rc1", "V2": "op.v2"} {
		if got := ArtifactVersionName("op", tag); got != want {
			t.Errorf("%s: got %s, want %s", tag, got, want)
		}
	}
}

// TestRenderGolden renders the sample through two overlays and compares with
// testdata/golden/, checks every object against the real CRDs, and checks
// that rendering twice gives the same bytes.
func TestRenderGolden(t *testing.T) {
	root := t.TempDir()
	copyDir(t, "testdata/catalog", root)
	cfg := Config{ImagePullSecrets: []string{"pull-secret"}}
	all := Files{}
	for _, cluster := range []string{"global", "edge"} {
		gen, err := Generated(cluster, cfg, sample())
		if err != nil {
			t.Fatal(err)
		}
		if err := checkout.Sync(root, []string{GeneratedBase(cluster)}, gen); err != nil {
			t.Fatal(err)
		}
		for p, data := range gen {
			all[p] = data
		}
		files, err := Build(mustReadDir(t, root), cluster)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Build(mustReadDir(t, root), cluster)
		for p, data := range files {
			if string(again[p]) != string(data) {
				t.Errorf("%s differs between two builds", p)
			}
			all[p] = data
		}
	}
	compareGolden(t, all)

	v, err := crdcheck.Load(filepath.Join(testenv.RequireShared(t), "crds"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p, data := range all {
		if !strings.HasPrefix(p, RenderedDir) {
			continue
		}
		n++
		if err := v.Validate(data); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if n != 16 {
		t.Errorf("validated %d rendered objects, want 16", n)
	}
	// A field the CRD does not know is caught.
	if err := v.Validate([]byte("apiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata: {name: a.v1, namespace: x}\nspec: {tag: v1, present: true, color: red}\n")); err == nil {
		t.Error("unknown field not reported")
	}
	if err := v.Validate([]byte("apiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata: {name: a.v1, namespace: x}\nspec: {tag: v1}\n")); err == nil {
		t.Error("missing present not reported")
	}
}

func TestBuildMissingOverlay(t *testing.T) {
	_, err := Build(Files{}, "nowhere")
	if err == nil || !strings.Contains(err.Error(), "kustomize/clusters/nowhere") {
		t.Fatalf("got %v", err)
	}
}

func compareGolden(t *testing.T, files Files) {
	t.Helper()
	dir := "testdata/golden"
	if *update {
		os.RemoveAll(dir)
		for p, data := range files {
			full := filepath.Join(dir, filepath.FromSlash(p))
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	var want []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			want = append(want, filepath.ToSlash(rel))
		}
		return nil
	})
	var got []string
	for p := range files {
		got = append(got, p)
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("files:\n%s\nwant:\n%s\n(run go test ./internal/render -update to accept)", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range got {
		data, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if string(data) != string(files[p]) {
			t.Errorf("%s differs from golden:\n%s\nwant:\n%s", p, files[p], data)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		data, _ := os.ReadFile(p)
		os.MkdirAll(filepath.Join(to, filepath.Dir(rel)), 0o755)
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mustReadDir reads the catalog checkout at root (ReadDir).
func mustReadDir(t *testing.T, root string) Files {
	t.Helper()
	files, err := ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	return files
}
