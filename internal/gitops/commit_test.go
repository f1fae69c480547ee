package gitops

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/crypto/ssh"

	"github.com/operator-publish/publish/internal/testenv"
)

func newBare(t *testing.T) string {
	t.Helper()
	bare := t.TempDir()
	if _, err := git.PlainInit(bare, true); err != nil {
		t.Fatal(err)
	}
	return bare
}

func write(t *testing.T, dir, p, content string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// files lists every file below dir (slash paths, .git excluded) with its
// content.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			data, _ := os.ReadFile(p)
			out[filepath.ToSlash(rel)] = string(data)
		}
		return nil
	})
	return out
}

// TestRefreshAfterRejectedPush: a clone whose push was rejected is, after
// Refresh, exactly a fresh clone of the new tip (its own commit, added and
// deleted files gone), and its next push goes through.
func TestRefreshAfterRejectedPush(t *testing.T) {
	ctx := context.Background()
	bare := newBare(t)
	when := time.Unix(1700000000, 0)
	seed, err := Clone(ctx, Options{URL: bare})
	if err != nil {
		t.Fatal(err)
	}
	defer seed.Close()
	write(t, seed.Dir, "a.yaml", "a: 1\n")
	write(t, seed.Dir, "dir/b.yaml", "b: 1\n")
	seed.Commit("seed", when)
	if err := seed.Push(ctx); err != nil {
		t.Fatal(err)
	}

	slow, _ := Clone(ctx, Options{URL: bare})
	defer slow.Close()
	fast, _ := Clone(ctx, Options{URL: bare})
	defer fast.Close()
	write(t, fast.Dir, "a.yaml", "a: 2\n")
	write(t, fast.Dir, "fast.yaml", "fast\n")
	fast.Commit("fast", when)
	if err := fast.Push(ctx); err != nil {
		t.Fatal(err)
	}

	write(t, slow.Dir, "slow-only.yaml", "slow\n")
	os.Remove(filepath.Join(slow.Dir, "dir/b.yaml"))
	write(t, slow.Dir, "untracked/x.yaml", "x\n")
	slow.Commit("slow", when)
	write(t, slow.Dir, "after-commit.yaml", "u\n")
	err = slow.Push(ctx)
	if !IsRejected(err) {
		t.Fatalf("push of a stale clone: %v, want a rejection IsRejected knows", err)
	}
	if err := slow.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, _ := Clone(ctx, Options{URL: bare})
	defer fresh.Close()
	if got, want := files(t, slow.Dir), files(t, fresh.Dir); !equalMaps(got, want) {
		t.Fatalf("after Refresh the clone has %v, a fresh clone %v", keys(got), keys(want))
	}
	write(t, slow.Dir, "slow.yaml", "slow\n")
	if h, err := slow.Commit("slow again", when); err != nil || h == "" {
		t.Fatalf("commit after Refresh: %q %v", h, err)
	}
	if err := slow.Push(ctx); err != nil {
		t.Fatalf("push after Refresh: %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRejectionStrings: the rejections real servers send are retried.
func TestRejectionStrings(t *testing.T) {
	for _, msg := range []string{
		"non-fast-forward update: refs/heads/main",
		"command error on refs/heads/main: fetch first",
		"error: cannot lock ref 'refs/heads/main': is at 1234 but expected 5678",
		"remote: GitLab: incorrect old value provided",
		"failed to update ref",
	} {
		err := &UnreachableError{URL: "https://x/y.git", Op: "push", Err: errorString(msg)}
		if !IsRejected(err) {
			t.Errorf("%q is not a rejection", msg)
		}
	}
	for _, msg := range []string{"authentication required", "repository not found", "dial tcp: connection refused"} {
		if IsRejected(&UnreachableError{URL: "https://x/y.git", Op: "push", Err: errorString(msg)}) {
			t.Errorf("%q is taken for a rejection", msg)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestCommitIdentityAndCatalogPath: author and committer as configured,
// the catalog below --catalog-path, other content of the repo untouched.
func TestCommitIdentityAndCatalogPath(t *testing.T) {
	ctx := context.Background()
	bare := newBare(t)
	other, _ := Clone(ctx, Options{URL: bare})
	write(t, other.Dir, "packages/x/manifest.yaml", "kind: PackageManifest\n")
	other.Commit("packages", time.Unix(1700000000, 0))
	if err := other.Push(ctx); err != nil {
		t.Fatal(err)
	}
	other.Close()

	o := Options{URL: bare, Path: "deploy/catalog/", AuthorName: "Release Bot", AuthorEmail: "bot@example.com", CommitterName: "CI", CommitterEmail: "ci@example.com"}
	r, err := Clone(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Dir != filepath.Join(r.WorkTree, "deploy", "catalog") {
		t.Fatalf("Dir %s, WorkTree %s", r.Dir, r.WorkTree)
	}
	write(t, r.Dir, "publish/state.yaml", "x\n")
	changed, _ := r.ChangedFiles()
	if strings.Join(changed, ",") != "publish/state.yaml" {
		t.Errorf("ChangedFiles %v, want paths relative to the catalog path", changed)
	}
	h, err := r.Commit("catalog", time.Unix(1700000001, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	repo, _ := git.PlainOpen(bare)
	c, err := repo.CommitObject(plumbing.NewHash(h))
	if err != nil {
		t.Fatal(err)
	}
	if c.Author.Name != "Release Bot" || c.Author.Email != "bot@example.com" || c.Committer.Name != "CI" || c.Committer.Email != "ci@example.com" {
		t.Errorf("author %v, committer %v", c.Author, c.Committer)
	}
	for _, p := range []string{"packages/x/manifest.yaml", "deploy/catalog/publish/state.yaml"} {
		if _, err := c.File(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if c.PGPSignature != "" {
		t.Error("unsigned by default, but the commit carries a signature")
	}

	for _, bad := range []string{"../x", "/..", "a/../../b", ".git"} {
		if _, err := Clone(ctx, Options{URL: bare, Path: bad}); err == nil {
			t.Errorf("--catalog-path %q accepted", bad)
		}
	}
}

// gitVerify runs `git verify-commit` on the commit h of the bare repo with
// extra configuration; it fails the test unless git accepts the signature.
func gitVerify(t *testing.T, bare, h string, env []string, cfg ...string) {
	t.Helper()
	gitBin := testenv.Require(t, "git", "git")
	args := append([]string{"-C", bare}, cfg...)
	args = append(args, "verify-commit", "-v", h)
	cmd := exec.Command(gitBin, args...)
	cmd.Env = append(os.Environ(), append([]string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git verify-commit: %v\n%s", err, out)
	}
	t.Logf("git verify-commit:\n%s", out)
}

func commitSigned(t *testing.T, key []byte, pass string) (bare, hash string) {
	t.Helper()
	ctx := context.Background()
	signer, err := NewSigner(key, pass)
	if err != nil {
		t.Fatal(err)
	}
	bare = newBare(t)
	r, err := Clone(ctx, Options{URL: bare, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	write(t, r.Dir, "a.yaml", "a\n")
	h, err := r.Commit("signed", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	return bare, h
}

// TestSSHSignedCommit: git itself verifies the SSH signature
// (gpg.format=ssh, allowed signers file).
func TestSSHSignedCommit(t *testing.T) {
	testenv.Require(t, "ssh-keygen", "openssh-client")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "test", []byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	key := pem.EncodeToMemory(block)
	if _, err := NewSigner(key, ""); err == nil || strings.Contains(err.Error(), "PRIVATE") {
		t.Errorf("encrypted key without a passphrase: %v", err)
	}
	bare, h := commitSigned(t, key, "s3cret")
	sshPub, _ := ssh.NewPublicKey(pub)
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	os.WriteFile(allowed, []byte(DefaultAuthorEmail+" "+string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(sshPub)))+"\n"), 0o644)
	gitVerify(t, bare, h, nil, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed)
}

// TestOpenPGPSignedCommit: gpg, through git, verifies the OpenPGP
// signature with the public key imported.
func TestOpenPGPSignedCommit(t *testing.T) {
	gpg := testenv.Require(t, "gpg", "gnupg")
	e, err := openpgp.NewEntity("Publish Bot", "", DefaultAuthorEmail, nil)
	if err != nil {
		t.Fatal(err)
	}
	var privBuf, pubBuf bytes.Buffer
	w, _ := armor.Encode(&privBuf, openpgp.PrivateKeyType, nil)
	if err := e.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, _ = armor.Encode(&pubBuf, openpgp.PublicKeyType, nil)
	e.Serialize(w)
	w.Close()
	bare, h := commitSigned(t, privBuf.Bytes(), "")

	home, err := os.MkdirTemp("", "gpg") // short path: gpg-agent's socket
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	os.Chmod(home, 0o700)
	imp := exec.Command(gpg, "--batch", "--homedir", home, "--import")
	imp.Stdin = &pubBuf
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	gitVerify(t, bare, h, []string{"GNUPGHOME=" + home})
}

func TestNewSignerRejectsGarbage(t *testing.T) {
	if _, err := NewSigner([]byte("not a key"), ""); err == nil {
		t.Fatal("garbage accepted as a signing key")
	}
}

// TestRefreshFromEmpty: two first publishes into an empty repo; the one
// that loses refreshes onto the other's commit and pushes on top.
func TestRefreshFromEmpty(t *testing.T) {
	ctx := context.Background()
	bare := newBare(t)
	when := time.Unix(1700000000, 0)
	a, _ := Clone(ctx, Options{URL: bare})
	defer a.Close()
	b, _ := Clone(ctx, Options{URL: bare})
	defer b.Close()
	if !a.Empty || !b.Empty {
		t.Fatal("clones of an empty repo are not Empty")
	}
	write(t, a.Dir, "a.yaml", "a\n")
	a.Commit("a", when)
	write(t, b.Dir, "b.yaml", "b\n")
	b.Commit("b", when)
	if err := a.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Push(ctx); !IsRejected(err) {
		t.Fatalf("second first-push: %v, want a rejection", err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := keys(files(t, b.Dir)); strings.Join(got, ",") != "a.yaml" {
		t.Fatalf("after Refresh: %v", got)
	}
	write(t, b.Dir, "b.yaml", "b\n")
	b.Commit("b again", when)
	if err := b.Push(ctx); err != nil {
		t.Fatal(err)
	}
}
