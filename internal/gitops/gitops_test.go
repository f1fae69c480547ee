package gitops

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/operator-publish/publish/internal/model"
)

func TestCloneSeedCommitPush(t *testing.T) {
	bare := t.TempDir()
	if _, err := git.PlainInit(bare, true); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := Clone(ctx, Options{URL: bare})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Empty {
		t.Fatal("an empty repo is not Empty")
	}
	tmpl := fstest.MapFS{
		"tmpl/README.md":          {Data: []byte("template readme\n")},
		"tmpl/kustomize/a.yaml":   {Data: []byte("a: 1\n")},
		"tmpl/kustomize/b/b.yaml": {Data: []byte("b: 1\n")},
	}
	os.WriteFile(filepath.Join(r.Dir, "README.md"), []byte("mine\n"), 0o644)
	if err := r.Seed(tmpl, "tmpl"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(r.Dir, "README.md")); string(data) != "mine\n" {
		t.Errorf("Seed overwrote a user file: %q", data)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "kustomize/b/b.yaml")); err != nil {
		t.Errorf("Seed did not write a nested file: %v", err)
	}
	when := time.Unix(1700000000, 0)
	h, err := r.Commit("first", when)
	if err != nil || h == "" {
		t.Fatalf("commit: %q %v", h, err)
	}
	if h2, err := r.Commit("nothing", when); err != nil || h2 != "" {
		t.Fatalf("a clean tree committed: %q %v", h2, err)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}

	// A second clone sees the commit and is not Empty; a deletion commits.
	r2, err := Clone(ctx, Options{URL: bare})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r2.Empty {
		t.Fatal("clone after push is Empty")
	}
	os.Remove(filepath.Join(r2.Dir, "kustomize/a.yaml"))
	if h, err := r2.Commit("delete", when); err != nil || h == "" {
		t.Fatalf("deletion not committed: %v", err)
	}
	if err := r2.Push(ctx); err != nil {
		t.Fatal(err)
	}
	// r is now behind: its push is rejected, not silently lost.
	os.WriteFile(filepath.Join(r.Dir, "x"), []byte("x"), 0o644)
	r.Commit("behind", when)
	if err := r.Push(ctx); err == nil {
		t.Fatal("a non-fast-forward push succeeded")
	}
}

func TestCloneErrors(t *testing.T) {
	_, err := Clone(context.Background(), Options{URL: filepath.Join(t.TempDir(), "nope")})
	if err == nil || !strings.Contains(err.Error(), "no such directory") {
		t.Errorf("missing path: %v", err)
	}
	_, err = Clone(context.Background(), Options{URL: t.TempDir()})
	if err == nil {
		t.Error("a directory that is not a repo cloned")
	}
	_, err = Clone(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "--catalog") {
		t.Errorf("no URL: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@git.example.com/a.git":  "https://git.example.com/a.git",
		"https://ghp_token123@git.example.com/a.git": "https://git.example.com/a.git",
		"https://git.example.com/a.git":              "https://git.example.com/a.git",
		"/local/path":                                "/local/path",
	} {
		if got := redact(in); got != want {
			t.Errorf("%s: %s", in, got)
		}
	}
	for _, u := range []string{"https://u:hunter2@h/x.git", "https://hunter2@h/x.git"} {
		err := &UnreachableError{URL: u, Op: "clone", Err: os.ErrNotExist}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("secret in %q", err)
		}
	}
}

func TestState(t *testing.T) {
	dir := t.TempDir()
	s, err := ReadState(dirFiles(t, dir), "global")
	if err != nil || len(s.Artifacts) != 0 {
		t.Fatalf("missing state: %+v %v", s, err)
	}
	s.Source = Source{Commit: "abc"}
	s.Artifacts = []model.ArtifactRecord{
		{Name: "b", Present: true, Versions: []model.VersionRecord{{Version: "1.10.0", Tag: "v1.10.0"}, {Version: "1.9.0", Tag: "v1.9.0"}}},
		{Name: "a"},
	}
	data, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "publish/state"), 0o755)
	os.WriteFile(filepath.Join(dir, StatePath("global")), data, 0o644)
	back, err := ReadState(dirFiles(t, dir), "global")
	if err != nil {
		t.Fatal(err)
	}
	if back.Artifacts[0].Name != "a" || back.Artifacts[1].Versions[0].Version != "1.9.0" {
		t.Errorf("not sorted: %+v", back.Artifacts)
	}
	again, _ := back.Marshal()
	if string(again) != string(data) {
		t.Error("state does not round-trip byte for byte")
	}
	os.WriteFile(filepath.Join(dir, StatePath("global")), []byte("kind: PublishState\nartifacts: {}\n"), 0o644)
	if _, err := ReadState(dirFiles(t, dir), "global"); err == nil || !strings.Contains(err.Error(), StatePath("global")) {
		t.Errorf("invalid state: %v", err)
	}
}

func TestStateValidation(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "publish/state"), 0o755)
	head := "apiVersion: publish.operator-publish.io/v1alpha2\nkind: PublishState\nsource: {}\n"
	for name, tc := range map[string]struct{ body, want string }{
		"empty tag":        {"artifacts:\n- {name: op, present: true, registry: r, repository: p, versions: [{version: 1.0.0, tag: '', present: true}]}\n", `tag "" is not a valid image tag`},
		"bad name":         {"artifacts:\n- {name: 'Hello Operator!', present: true, registry: r, repository: p, versions: []}\n", "is not a valid object name"},
		"twice":            {"artifacts:\n- {name: op, present: true, registry: r, repository: p, versions: []}\n- {name: op, present: true, registry: r, repository: p, versions: []}\n", "artifact listed twice"},
		"bad digest":       {"artifacts:\n- {name: op, present: true, registry: r, repository: p, versions: [{version: 1.0.0, tag: v1, present: true, bundleDigest: 'sha256:zz'}]}\n", "not a sha256 digest"},
		"bad version":      {"artifacts:\n- {name: op, present: true, registry: r, repository: p, versions: [{version: one, tag: v1, present: true}]}\n", `version "one" is not semver`},
		"path outside":     {"artifacts:\n- {name: op, present: true, registry: r, repository: p, versions: [{version: 1.0.0, tag: v1, present: true, path: ../../etc/passwd}]}\n", "not a relative path inside the package repo"},
		"absolute path":    {"artifacts:\n- {name: op, present: true, registry: r, repository: p, versions: [{version: 1.0.0, tag: v1, present: true, path: /etc/passwd}]}\n", "not a relative path inside the package repo"},
		"wrong apiVersion": {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			content := head + tc.body
			want := tc.want
			if name == "wrong apiVersion" {
				content = strings.Replace(head, "v1alpha2", "v9", 1) + "artifacts: []\n"
				want = "apiVersion/kind"
			}
			os.WriteFile(filepath.Join(dir, StatePath("global")), []byte(content), 0o644)
			_, err := ReadState(dirFiles(t, dir), "global")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want %q", err, want)
			}
		})
	}
	// A deleted state next to generated objects is refused.
	os.Remove(filepath.Join(dir, StatePath("global")))
	os.MkdirAll(filepath.Join(dir, "publish/generated/global"), 0o755)
	os.WriteFile(filepath.Join(dir, "publish/generated/global/kustomization.yaml"), []byte("resources: []\n"), 0o644)
	if _, err := ReadState(dirFiles(t, dir), "global"); err == nil || !strings.Contains(err.Error(), "restore it") {
		t.Errorf("missing state: %v", err)
	}
}

// TestLegacyStateSplit: the older single state file (v1alpha1) parses only
// as the legacy format, and splits into one state per cluster it records,
// each with that cluster's render key and OCI catalog alone.
func TestLegacyStateSplit(t *testing.T) {
	old := "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishState\nsource: {commit: abc}\nartifacts:\n- {name: op, present: true, registry: r, repository: p, versions: [{version: 1.0.0, tag: v1, present: true}]}\nrendered: {a: 'sha256:1', b: 'sha256:2'}\noci: {b: {ref: 'r/c:b', digest: 'sha256:" + strings.Repeat("c", 64) + "'}}\n"
	if _, err := ParseState(StatePath("a"), []byte(old)); err == nil || !strings.Contains(err.Error(), "v1alpha2") {
		t.Errorf("v1alpha1 as a state per cluster: %v", err)
	}
	s, err := ParseLegacyState([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	per := s.Split()
	if len(per) != 2 || per["a"].Rendered["a"] != "sha256:1" || len(per["a"].Rendered) != 1 || per["a"].OCI != nil || per["b"].OCI["b"].Ref != "r/c:b" || per["b"].Source.Commit != "abc" || len(per["b"].Artifacts) != 1 {
		t.Fatalf("split: %+v %+v", per["a"], per["b"])
	}
	data, err := per["b"].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseState(StatePath("b"), data); err != nil || back.APIVersion != StateAPIVersion {
		t.Fatalf("%v %+v", err, back)
	}
	if c, ok := StateCluster(StatePath("b")); !ok || c != "b" {
		t.Errorf("StateCluster: %q %v", c, ok)
	}
}

// Catalog credentials never cross plain HTTP to another machine: the
// flags' and a URL's token are refused before anything is sent; loopback
// and anonymous clones are as before.
func TestNoCredentialsOverPlainHTTP(t *testing.T) {
	for _, o := range []Options{
		{URL: "http://git.example.com/o/c.git", Password: "s3cret"},
		{URL: "http://git.example.com/o/c.git", Username: "bot", Password: "s3cret"},
		{URL: "http://s3cret@git.example.com/o/c.git"},
	} {
		_, err := o.auth()
		if err == nil || !strings.Contains(err.Error(), "in clear") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v", redact(o.URL), err)
		}
	}
	for _, o := range []Options{
		{URL: "http://127.0.0.1:3000/o/c.git", Password: "s3cret"},
		{URL: "http://localhost/o/c.git", Password: "s3cret"},
		{URL: "http://[::1]:80/o/c.git", Password: "s3cret"},
		{URL: "http://git.example.com/o/c.git"},
		{URL: "https://git.example.com/o/c.git", Password: "s3cret"},
	} {
		if _, err := o.auth(); err != nil {
			t.Errorf("%s: %v", o.URL, err)
		}
	}
}

// dirFiles reads every regular file below dir by its slash-separated path
// relative to dir: the catalog files ReadState takes.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
