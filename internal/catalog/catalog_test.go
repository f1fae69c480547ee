package catalog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/crypto/ssh"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/testenv"
)

var when = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func opts(msg string) CommitOptions {
	return CommitOptionsFor(gitops.Options{}, msg, when)
}

func files(m map[string]string) []Change {
	b := map[string][]byte{}
	for p, c := range m {
		b[p] = []byte(c)
	}
	return Replace(nil, b)
}

// treeAt is the hash of the tree at p of commit c in s ("" when absent).
func treeAt(t *testing.T, s *memory.Storage, c plumbing.Hash, p string) string {
	t.Helper()
	commit, err := object.GetCommit(s, c)
	if err != nil {
		t.Fatal(err)
	}
	root, err := commit.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if p == "" {
		return root.Hash.String()
	}
	e, err := root.FindEntry(p)
	if err != nil {
		return ""
	}
	return e.Hash.String()
}

// TestWriteCommitObjects: without Git or a server, a change replaces only
// its files (every untouched subtree keeps its hash), removes files and
// whole directories (an emptied parent disappears), makes no commit when
// nothing changes, and sends exactly the objects that differ.
func TestWriteCommitObjects(t *testing.T) {
	s := memory.NewStorage()
	base, err := WriteCommit(s, plumbing.ZeroHash, "", files(catalogFiles()), opts("seed"))
	if err != nil {
		t.Fatal(err)
	}
	if base.Commit.IsZero() || len(base.Files) != len(catalogFiles()) {
		t.Fatalf("seed: %+v", base)
	}
	// Re-render etcd: its directory is replaced, one file changes.
	w, err := WriteCommit(s, base.Commit, "", Replace([]string{"rendered/global/etcd"}, map[string][]byte{
		"rendered/global/etcd/artifact.yaml": []byte("etcd artifact\n"),
		"rendered/global/etcd/v1.1.0.yaml":   []byte("etcd 1.1.0\n"),
		"publish/state.yaml":                 []byte("state: 2\n"),
	}), opts("etcd 1.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"publish/state.yaml", "rendered/global/etcd/v1.0.0.yaml", "rendered/global/etcd/v1.1.0.yaml"}; !reflect.DeepEqual(w.Files, want) {
		t.Errorf("files %v, want %v", w.Files, want)
	}
	for _, p := range []string{"rendered/global/redis", "rendered/other", "kustomize", "publish/generated", "README.md"} {
		if a, b := treeAt(t, s, base.Commit, p), treeAt(t, s, w.Commit, p); a != b || a == "" {
			t.Errorf("%s: %s before, %s after: an untouched path changed", p, a, b)
		}
	}
	// Sent: the commit, 2 blobs (state, v1.1.0), trees root, publish,
	// rendered, rendered/global, rendered/global/etcd.
	if len(w.Objects) != 8 {
		t.Errorf("%d objects to send, want 8", len(w.Objects))
	}
	if w.Objects[len(w.Objects)-1] != w.Commit {
		t.Error("the commit is not the last object")
	}

	// Nothing changes: no commit.
	noop, err := WriteCommit(s, w.Commit, "", Replace([]string{"rendered/global/etcd"}, map[string][]byte{
		"rendered/global/etcd/artifact.yaml": []byte("etcd artifact\n"),
		"rendered/global/etcd/v1.1.0.yaml":   []byte("etcd 1.1.0\n"),
	}), opts("noop"))
	if err != nil {
		t.Fatal(err)
	}
	if !noop.Commit.IsZero() || noop.Tree.String() != treeAt(t, s, w.Commit, "") || len(noop.Objects) != 0 {
		t.Errorf("a no-op change wrote %+v", noop)
	}

	// Deletions: a file, and a whole directory whose parent empties.
	d, err := WriteCommit(s, w.Commit, "", []Change{
		{Path: "README.md", Delete: true},
		{Path: "rendered/other/", Delete: true},
		{Path: "rendered/global/redis", Delete: true},
		{Path: "rendered/global/etcd", Delete: true},
		{Path: "no/such/dir", Delete: true},
	}, opts("delete"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"README.md", "rendered"} {
		if h := treeAt(t, s, d.Commit, p); h != "" {
			t.Errorf("%s still there (%s)", p, h)
		}
	}
	if a, b := treeAt(t, s, w.Commit, "publish"), treeAt(t, s, d.Commit, "publish"); a != b {
		t.Error("publish changed")
	}

	// Everything removed: the empty tree.
	e, err := WriteCommit(s, d.Commit, "", []Change{{Path: "", Delete: true}}, opts("empty"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Tree.String() != "4b825dc642cb6eb9a060e54bf8d69288fbee4904" {
		t.Errorf("empty tree %s", e.Tree)
	}
}

func TestWriteCommitRefusesBadPaths(t *testing.T) {
	s := memory.NewStorage()
	for _, cs := range [][]Change{
		{{Path: "../x", Data: []byte("x")}},
		{{Path: "/abs", Data: []byte("x")}},
		{{Path: ".git/config", Data: []byte("x")}},
		{{Path: "a//b", Data: []byte("x")}},
		{{Path: "a", Data: []byte("x")}, {Path: "a", Data: []byte("y")}},
		{{Path: "a", Data: []byte("x")}, {Path: "a/b", Data: []byte("y")}},
		{{Path: "a/b", Data: []byte("x")}, {Path: "a", Data: []byte("y")}},
	} {
		if _, err := WriteCommit(s, plumbing.ZeroHash, "", cs, opts("bad")); err == nil {
			t.Errorf("%+v: no error", cs)
		}
	}
	if _, err := WriteCommit(s, plumbing.ZeroHash, "../up", files(map[string]string{"a": "b"}), opts("bad")); err == nil || !strings.Contains(err.Error(), "--catalog-path") {
		t.Errorf("bad prefix: %v", err)
	}
}

func TestFullReadRequiredError(t *testing.T) {
	err := fmtWrap(FullReadRequired("the catalog has no %s yet", "publish/state.yaml"))
	var fr *FullReadRequiredError
	if !errors.As(err, &fr) || fr.Reason != "the catalog has no publish/state.yaml yet" {
		t.Fatalf("%v", err)
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("plan"), err) }

// backends are the two ways to reach a catalog repo: a local bare repo,
// and the same over Git smart HTTP with basic auth. Each returns the
// options and the bare repo's path (to check with the git CLI).
var backends = []struct {
	name string
	make func(t *testing.T) (gitops.Options, string)
}{
	{"local", func(t *testing.T) (gitops.Options, string) {
		bare := newBare(t)
		return gitops.Options{URL: bare}, bare
	}},
	{"http", func(t *testing.T) (gitops.Options, string) {
		srv := testenv.StartGitServer(t)
		url := srv.NewBareRepo(t, "catalog")
		return gitops.Options{URL: url, Username: srv.Username, Password: srv.Password}, filepath.Join(srv.Root, "catalog.git")
	}},
}

func openTip(t *testing.T, o gitops.Options) *Tip {
	t.Helper()
	tip, err := OpenTip(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tip.Close() })
	return tip
}

// commitPush commits changes on a fresh tip and pushes; it checks that the
// git CLI gives the same tree for the same changes in a worktree.
func commitPush(t *testing.T, o gitops.Options, bare string, changes []Change) *Written {
	t.Helper()
	tip := openTip(t, o)
	prefix, _ := gitops.CleanPath(o.Path)
	want := cliTree(t, bare, o.WithDefaults().Branch, prefix, changes)
	w, err := tip.Commit(changes, opts("change"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Tree.String() != want {
		t.Errorf("tree %s, the git CLI's worktree commit of the same changes gives %s", w.Tree, want)
	}
	if _, err := tip.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if !w.Commit.IsZero() {
		if got := run(t, bare, "rev-parse", "refs/heads/"+o.WithDefaults().Branch); got != w.Commit.String() {
			t.Fatalf("remote branch at %s, pushed %s", got, w.Commit)
		}
		if tip.Head() != w.Commit.String() {
			t.Errorf("tip shows %s after the push, want %s", tip.Head(), w.Commit)
		}
		run(t, bare, "fsck", "--strict", "--no-dangling")
	}
	return w
}

// TestTipCommitPush: against a local bare repo and a Git HTTP server: a
// change replaces only its files, deletions of files and whole
// directories, a no-op makes no commit; each tree equals the git CLI's.
func TestTipCommitPush(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			o, bare := b.make(t)
			head := seed(t, bare, "main", catalogFiles())
			before := map[string]string{}
			for _, p := range []string{"rendered/global/redis", "rendered/other", "kustomize", "publish/generated", "README.md"} {
				before[p] = run(t, bare, "rev-parse", head+":"+p)
			}
			w := commitPush(t, o, bare, Replace([]string{"rendered/global/etcd"}, map[string][]byte{
				"rendered/global/etcd/artifact.yaml": []byte("etcd artifact\n"),
				"rendered/global/etcd/v1.1.0.yaml":   []byte("etcd 1.1.0\n"),
				"publish/state.yaml":                 []byte("state: 2\n"),
			}))
			if w.Commit.IsZero() {
				t.Fatal("no commit")
			}
			for p, h := range before {
				if got := run(t, bare, "rev-parse", w.Commit.String()+":"+p); got != h {
					t.Errorf("%s: %s, was %s", p, got, h)
				}
			}
			if got := run(t, bare, "show", "main:rendered/global/etcd/v1.1.0.yaml"); got != "etcd 1.1.0" {
				t.Errorf("v1.1.0.yaml: %q", got)
			}
			if got := run(t, bare, "log", "--format=%an <%ae>|%s", "-1", "main"); got != gitops.DefaultAuthorName+" <"+gitops.DefaultAuthorEmail+">|change" {
				t.Errorf("commit: %q", got)
			}

			// Deletions.
			d := commitPush(t, o, bare, []Change{
				{Path: "README.md", Delete: true},
				{Path: "rendered/global/redis/", Delete: true},
				{Path: "rendered/other", Delete: true},
			})
			if want := []string{"README.md", "rendered/global/redis/artifact.yaml", "rendered/global/redis/v2.0.0.yaml", "rendered/other/redis/artifact.yaml"}; !reflect.DeepEqual(d.Files, want) {
				t.Errorf("files %v, want %v", d.Files, want)
			}
			if got := run(t, bare, "ls-tree", "--name-only", "main:rendered"); got != "global" {
				t.Errorf("rendered/: %q", got)
			}

			// No-op: the same bytes again.
			n := commitPush(t, o, bare, files(map[string]string{"publish/state.yaml": "state: 2\n"}))
			if !n.Commit.IsZero() {
				t.Errorf("a no-op change made commit %s", n.Commit)
			}
			if got := run(t, bare, "rev-parse", "main"); got != d.Commit.String() {
				t.Errorf("no-op moved the branch to %s", got)
			}
		})
	}
}

// TestCatalogPath: with --catalog-path the changes land below it and the
// rest of the repo keeps its trees.
func TestCatalogPath(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			o, bare := b.make(t)
			o.Path = "deploy/catalog/"
			fs := map[string]string{"src/main.go": "package main\n", "deploy/other.yaml": "x: 1\n"}
			for p, c := range catalogFiles() {
				fs["deploy/catalog/"+p] = c
			}
			head := seed(t, bare, "main", fs)
			tip := openTip(t, o)
			if data, ok, err := tip.ReadFile("publish/state.yaml"); err != nil || !ok || string(data) != "state: 1\n" {
				t.Fatalf("state: %q %v %v", data, ok, err)
			}
			got, err := tip.Files("rendered", func(p string, isDir bool) bool { return isDir && p == "rendered/other" })
			if err != nil || len(got) != 4 || string(got["rendered/global/etcd/v1.0.0.yaml"]) != "etcd 1.0.0\n" {
				t.Fatalf("files: %v %v", got, err)
			}
			w := commitPush(t, o, bare, append([]Change{{Path: "rendered/global/etcd", Delete: true}}, files(map[string]string{"publish/state.yaml": "state: 2\n"})...))
			if want := []string{"publish/state.yaml", "rendered/global/etcd/artifact.yaml", "rendered/global/etcd/v1.0.0.yaml"}; !reflect.DeepEqual(w.Files, want) {
				t.Errorf("files %v, want %v", w.Files, want)
			}
			for _, p := range []string{"src", "deploy/other.yaml", "deploy/catalog/rendered/global/redis", "deploy/catalog/kustomize"} {
				if a, b := run(t, bare, "rev-parse", head+":"+p), run(t, bare, "rev-parse", "main:"+p); a != b {
					t.Errorf("%s changed: %s -> %s", p, a, b)
				}
			}
			if got := run(t, bare, "show", "main:deploy/catalog/publish/state.yaml"); got != "state: 2" {
				t.Errorf("state: %q", got)
			}
		})
	}
}

// TestEmptyRepoAndNewBranch: the first commit of an empty repo, and of a
// branch the repo does not have yet (the other branch untouched).
func TestEmptyRepoAndNewBranch(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			o, bare := b.make(t)
			tip := openTip(t, o)
			if tip.Head() != "" {
				t.Fatalf("empty repo: head %q", tip.Head())
			}
			if _, ok, err := tip.ReadFile("publish/state.yaml"); ok || err != nil {
				t.Fatalf("empty repo has a state: %v", err)
			}
			w := commitPush(t, o, bare, files(catalogFiles()))
			if w.Parent != plumbing.ZeroHash || w.Commit.IsZero() {
				t.Fatalf("first commit: %+v", w)
			}
			if got := run(t, bare, "rev-list", "--count", "main"); got != "1" {
				t.Errorf("%s commits", got)
			}
			o.Branch = "staging"
			o.Path = "catalog"
			var mb *gitops.MissingBranchError
			if tp, err := OpenTip(context.Background(), o); !errors.As(err, &mb) {
				if tp != nil {
					tp.Close()
				}
				t.Fatalf("a branch the repo lacks without --create-branch: %v, want *gitops.MissingBranchError", err)
			}
			o.CreateBranch = true
			tip = openTip(t, o)
			if tip.Head() != "" || !tip.NewBranch() {
				t.Fatalf("new branch: head %q, NewBranch %v", tip.Head(), tip.NewBranch())
			}
			nb := commitPush(t, o, bare, files(map[string]string{"publish/state.yaml": "state: staging\n"}))
			if got := run(t, bare, "show", "staging:catalog/publish/state.yaml"); got != "state: staging" || nb.Parent != plumbing.ZeroHash {
				t.Errorf("staging: %q", got)
			}
			if got := run(t, bare, "rev-parse", "main"); got != w.Commit.String() {
				t.Errorf("main moved to %s", got)
			}
		})
	}
}

// TestConcurrentPushRejected: two runs start from the same tip; the second
// push is refused with the typed error (gitops.IsRejected too), the first
// commit stays, and the second run, on a new tip, publishes on top of it.
func TestConcurrentPushRejected(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			o, bare := b.make(t)
			seed(t, bare, "main", catalogFiles())
			ctx := context.Background()
			a, c := openTip(t, o), openTip(t, o)
			wa, err := a.Commit(files(map[string]string{"rendered/global/etcd/v1.1.0.yaml": "a\n"}), opts("run a"))
			if err != nil {
				t.Fatal(err)
			}
			wc, err := c.Commit(files(map[string]string{"rendered/global/redis/v2.1.0.yaml": "c\n"}), opts("run c"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Push(ctx, wa); err != nil {
				t.Fatal(err)
			}
			_, err = c.Push(ctx, wc)
			var rej *RejectedError
			if !gitops.IsRejected(err) || !errors.As(err, &rej) || rej.Found != wa.Commit.String() || rej.Expected != wc.Parent.String() {
				t.Fatalf("second push: %v", err)
			}
			if !strings.Contains(err.Error(), "moved on") {
				t.Errorf("message: %v", err)
			}
			if got := run(t, bare, "rev-parse", "main"); got != wa.Commit.String() {
				t.Fatalf("remote at %s, want the first push %s", got, wa.Commit)
			}
			// Retry on the new tip.
			c2 := openTip(t, o)
			w2, err := c2.Commit(files(map[string]string{"rendered/global/redis/v2.1.0.yaml": "c\n"}), opts("run c again"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c2.Push(ctx, w2); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"rendered/global/etcd/v1.1.0.yaml", "rendered/global/redis/v2.1.0.yaml"} {
				run(t, bare, "cat-file", "-e", "main:"+p)
			}
			// A stale commit written on a parent the server no longer has
			// as its tip is refused by the server itself too (the old
			// value of the update command), not only by the check of the
			// advertised refs: push wa again, now stale.
			stale := *wa
			stale.Parent = wc.Parent
			checkAdvertised = false
			defer func() { checkAdvertised = true }()
			_, err = PushCommit(ctx, a.remote, a.store, &stale)
			if !gitops.IsRejected(err) || !errors.As(err, &rej) || rej.Reason == "" {
				t.Errorf("stale push: %v", err)
			}
			t.Logf("stale push: %v", err)
			if got := run(t, bare, "rev-parse", "main"); got != w2.Commit.String() {
				t.Errorf("the stale push moved the branch to %s", got)
			}
		})
	}
}

// TestSignedCommit: the SSH signature of a commit written from objects is
// the one `git verify-commit` accepts.
func TestSignedCommit(t *testing.T) {
	testenv.Require(t, "ssh-keygen", "openssh-client")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gitops.NewSigner(pem.EncodeToMemory(block), "")
	if err != nil {
		t.Fatal(err)
	}
	bare := newBare(t)
	o := gitops.Options{URL: bare, Signer: signer}
	tip := openTip(t, o)
	w, err := tip.Commit(files(map[string]string{"a.yaml": "a\n"}), CommitOptionsFor(o, "signed", when))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tip.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	sshPub, _ := ssh.NewPublicKey(pub)
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	os.WriteFile(allowed, []byte(gitops.DefaultAuthorEmail+" "+string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(sshPub)))+"\n"), 0o644)
	run(t, bare, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", w.Commit.String())
}

// TestViewsAgree: the full read of a checkout (Dir) and the read of the
// branch tip's objects (Tip) give the same head, state and files.
func TestViewsAgree(t *testing.T) {
	bare := newBare(t)
	head := seed(t, bare, "main", catalogFiles())
	wt := filepath.Join(t.TempDir(), "wt")
	run(t, ".", "clone", "-q", bare, wt)
	dir, err := OpenDir(wt)
	if err != nil {
		t.Fatal(err)
	}
	tip := openTip(t, gitops.Options{URL: bare})
	for _, v := range []View{dir, tip} {
		if v.Head() != head {
			t.Errorf("%T: head %q, want %s", v, v.Head(), head)
		}
		if data, ok, err := v.ReadFile("publish/state.yaml"); !ok || err != nil || string(data) != "state: 1\n" {
			t.Errorf("%T: state %q %v %v", v, data, ok, err)
		}
		for _, p := range []string{"rendered", "missing", "rendered/global"} {
			if _, ok, err := v.ReadFile(p); ok || err != nil {
				t.Errorf("%T: ReadFile(%s) of a directory or nothing: %v %v", v, p, ok, err)
			}
		}
	}
	skip := func(p string, isDir bool) bool { return isDir && (p == "rendered" || p == "publish") }
	for _, tc := range []struct {
		dir  string
		skip func(string, bool) bool
	}{{"", nil}, {"", skip}, {"rendered/global", nil}, {"nothing/here", nil}, {"README.md", nil}} {
		a, err := dir.Files(tc.dir, tc.skip)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tip.Files(tc.dir, tc.skip)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("Files(%q): dir %v, tip %v", tc.dir, keys(a), keys(b))
		}
	}
	if all, _ := tip.Files("", nil); len(all) != len(catalogFiles()) {
		t.Errorf("%d files, want %d", len(all), len(catalogFiles()))
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestModesAndReplacements: an executable file rewritten stays
// executable, a file replaced by a directory and a directory by a file
// give the git CLI's tree.
func TestModesAndReplacements(t *testing.T) {
	bare := newBare(t)
	wt := t.TempDir()
	run(t, wt, "init", "-q", "-b", "main")
	writeFile(t, wt, "bin/run.sh", "#!/bin/sh\n")
	writeFile(t, wt, "a", "file\n")
	writeFile(t, wt, "d/x.yaml", "x\n")
	run(t, wt, "update-index", "--add", "--chmod=+x", "bin/run.sh")
	run(t, wt, "add", "-A")
	run(t, wt, "update-index", "--chmod=+x", "bin/run.sh")
	run(t, wt, "commit", "-q", "-m", "seed")
	run(t, wt, "push", "-q", bare, "main")
	o := gitops.Options{URL: bare}
	commitPush(t, o, bare, []Change{
		{Path: "bin/run.sh", Data: []byte("#!/bin/sh\necho\n")},
		{Path: "a", Delete: true},
		{Path: "a/b.yaml", Data: []byte("b\n")},
		{Path: "d", Delete: true},
		{Path: "d", Data: []byte("now a file\n")},
	})
	if got := run(t, bare, "ls-tree", "main", "bin/run.sh"); !strings.HasPrefix(got, "100755 ") {
		t.Errorf("bin/run.sh: %s", got)
	}
}
