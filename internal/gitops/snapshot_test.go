package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/testenv"
)

func sampleState() *State {
	return &State{
		Source:   Source{Repo: "https://git.example.com/ops/packages.git", Commit: strings.Repeat("a", 40)},
		Rendered: map[string]string{"global": "sha256:" + strings.Repeat("b", 64)},
		Artifacts: []model.ArtifactRecord{
			{Name: "alpha", Present: true, Registry: "reg.example.com", Repository: "mirror/alpha/bundle",
				Description: "line one\nline two: with a colon\n- and a dash", Versions: []model.VersionRecord{
					{Version: "1.0.0", Tag: "v1.0.0", Present: true, Path: "packages/alpha/1.0.0/manifest.yaml",
						BundleDigest: "sha256:" + strings.Repeat("c", 64),
						Images:       []model.Image{{Source: "quay.io/a/b:1", Destination: "reg.example.com/mirror/a/b:1", Digest: "sha256:" + strings.Repeat("d", 64)}}},
					{Version: "0.9.0", Tag: "v0.9.0", Present: false, Path: "packages/alpha/0.9.0/manifest.yaml"},
				}},
			{Name: "beta.operator", Present: false, Registry: "reg.example.com", Repository: "mirror/beta/bundle",
				Versions: []model.VersionRecord{{Version: "2.0.0", Tag: "v2.0.0", Present: false}}},
			{Name: "gamma", Present: true, Versions: []model.VersionRecord{}},
		},
	}
}

// TestSplitState: every artifact of a state written by Marshal is found and
// parses to what ParseState reads; a state not in that form is refused.
func TestSplitState(t *testing.T) {
	data, err := sampleState().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	whole, err := ParseState(data)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := SplitState(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := idx.Names(); !reflect.DeepEqual(got, []string{"alpha", "beta.operator", "gamma"}) {
		t.Fatalf("names: %v", got)
	}
	if idx.Header.Source != whole.Source || !reflect.DeepEqual(idx.Header.Rendered, whole.Rendered) || len(idx.Header.Artifacts) != 0 {
		t.Errorf("header: %+v", idx.Header)
	}
	for _, want := range whole.Artifacts {
		got, ok, err := idx.Artifact(want.Name)
		if err != nil || !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("artifact %s: %v %v\n got %+v\nwant %+v", want.Name, ok, err, got, want)
		}
	}
	if _, ok, err := idx.Artifact("delta"); ok || err != nil {
		t.Errorf("unknown artifact: %v %v", ok, err)
	}
	flow := "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishState\nartifacts: [{name: alpha, present: true, registry: r, repository: x, versions: []}]\n"
	if _, err := SplitState([]byte(flow)); err == nil {
		t.Error("a state in flow style was split")
	}
	if _, err := SplitState([]byte("artifacts:\n- present: true\n")); err == nil {
		t.Error("an entry without a name was accepted")
	}
}

// TestSnapshotOverHTTP: the tip of a catalog behind a real Git smart-HTTP
// server with basic auth is read without a checkout; a missing branch is
// an empty snapshot, wrong credentials an *UnreachableError.
func TestSnapshotOverHTTP(t *testing.T) {
	testenv.Short(t, "needs git http-backend")
	srv := testenv.StartGitServer(t)
	url := srv.NewBareRepo(t, "catalog")
	o := Options{URL: url, Username: srv.Username, Password: srv.Password}
	ctx := context.Background()
	r, err := Clone(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, _ := sampleState().Marshal()
	files := map[string]string{StatePath: string(data), "kustomize/clusters/global/kustomization.yaml": "resources: []\n", "rendered/global/alpha/a.yaml": "a: 1\n"}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(r.Dir, p)), 0o755)
		os.WriteFile(filepath.Join(r.Dir, p), []byte(c), 0o644)
	}
	if _, err := r.Commit("seed", time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}

	s, err := OpenSnapshot(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Head == "" {
		t.Fatal("no head")
	}
	st, err := s.State()
	if err != nil || len(st.Artifacts) != 3 {
		t.Fatalf("state: %v %+v", err, st)
	}
	got, err := s.Files("", func(p string, isDir bool) bool { return isDir && p == "rendered" })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got["kustomize/clusters/global/kustomization.yaml"]) != "resources: []\n" {
		t.Errorf("files: %v", got)
	}
	if _, ok, err := s.ReadFile("rendered/global/none.yaml"); ok || err != nil {
		t.Errorf("missing file: %v %v", ok, err)
	}

	// A branch the repo lacks is refused (issue 13: a typo publishes where
	// no cluster looks), unless it is to be created.
	_, err = OpenSnapshot(ctx, Options{URL: url, Username: srv.Username, Password: srv.Password, Branch: "elsewhere"})
	var mb *MissingBranchError
	if !errors.As(err, &mb) || strings.Join(mb.Branches, ",") != "main" || strings.Contains(err.Error(), srv.Password) {
		t.Fatalf("missing branch: %v", err)
	}
	other, err := OpenSnapshot(ctx, Options{URL: url, Username: srv.Username, Password: srv.Password, Branch: "elsewhere", CreateBranch: true})
	if err != nil || other.Head != "" {
		t.Fatalf("missing branch: %v %+v", err, other)
	}
	other.Close()
	_, err = OpenSnapshot(ctx, Options{URL: url, Username: srv.Username, Password: "wrong"})
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("wrong password: %v", err)
	}
	if strings.Contains(err.Error(), srv.Password) {
		t.Error("the error shows the password")
	}
}

func TestFileDiff(t *testing.T) {
	before := map[string][]byte{"a.yaml": []byte("x: 1\ny: 2\n"), "gone.yaml": []byte("g: 1\n"), "same.yaml": []byte("s: 1\n")}
	after := map[string][]byte{"a.yaml": []byte("x: 1\ny: 3\n"), "new.yaml": []byte("n: 1\n"), "same.yaml": []byte("s: 1\n")}
	files, patch, err := FileDiff(before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{{"a.yaml", "modified"}, {"gone.yaml", "deleted"}, {"new.yaml", "added"}}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("files: %+v", files)
	}
	for _, s := range []string{"-y: 2", "+y: 3", "+n: 1", "-g: 1", "--- a/a.yaml", "+++ b/new.yaml"} {
		if !strings.Contains(patch, s) {
			t.Errorf("patch lacks %q:\n%s", s, patch)
		}
	}
	if f, p, _ := FileDiff(before, before); f != nil || p != "" {
		t.Errorf("no change: %v %q", f, p)
	}
}
