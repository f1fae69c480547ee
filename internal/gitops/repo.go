// Package gitops keeps the catalog repo: clone (go-git), seed from the
// template, state file, commit, push.
package gitops

import (
	"context"
	"errors"
	"fmt"
	redactpkg "github.com/operator-publish/publish/internal/redact"
	"github.com/operator-publish/publish/internal/scratch"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"

	"github.com/operator-publish/publish/internal/checkout"
)

func init() {
	// go-git's file transport runs git-upload-pack/git-receive-pack. Without
	// a git binary, serve local repos with go-git's in-process server.
	if _, err := exec.LookPath("git"); err != nil {
		client.InstallProtocol("file", server.DefaultServer)
	}
}

// Options says which catalog repo to use and how.
type Options struct {
	// URL is the catalog repo: an http(s):// or ssh URL, or a local path.
	URL string
	// Branch is the branch to publish to (default main).
	Branch string
	// Username and Password (or token) for HTTP(S) basic auth.
	Username, Password string
	// CABundle is extra PEM CA certificates for HTTPS.
	CABundle []byte
	// AuthorName and AuthorEmail are the commits' author (default: the
	// operator-publish bot, DefaultAuthorName and DefaultAuthorEmail).
	AuthorName, AuthorEmail string
	// CommitterName and CommitterEmail are the commits' committer (default:
	// the author).
	CommitterName, CommitterEmail string
	// Signer signs every commit (NewSigner: an OpenPGP or SSH key); nil
	// leaves commits unsigned.
	Signer git.Signer
	// SSHKey is the private key (OpenSSH or PEM) for an SSH catalog URL, and
	// SSHKeyPassphrase decrypts it; without a key the SSH agent is asked.
	SSHKey           []byte
	SSHKeyPassphrase string
	// KnownHostsFile holds the catalog server's SSH host key (known_hosts
	// format); default $SSH_KNOWN_HOSTS, else ~/.ssh/known_hosts and
	// /etc/ssh/ssh_known_hosts. InsecureIgnoreHostKey skips the check.
	KnownHostsFile        string
	InsecureIgnoreHostKey bool
	// Path is the directory of the catalog inside the repo (slash-separated,
	// relative, "" for the root): the catalog may share a repo, or a branch,
	// with other content, the package repo included.
	Path string
	// CreateBranch (--create-branch) lets a publish create Branch in a repo
	// that has other branches but not this one; without it that is a
	// *MissingBranchError (a typo such as "mian" would otherwise publish
	// where no cluster looks).
	CreateBranch bool
	// InitCatalog (--init-catalog) lets a publish seed the template into a
	// repo that holds files but no publish/state.yaml (CheckCatalog).
	InitCatalog bool
	// History makes catalog.OpenTip fetch the branch's whole history
	// rather than its tip commit alone: the gates between clusters date a
	// listing by the catalog commit that made it (docs/rollout.md).
	History bool
	// Timeout bounds each network operation (default 5 minutes).
	Timeout time.Duration
}

// The bot identity of catalog commits when none is configured.
const (
	DefaultAuthorName  = "operator-publish"
	DefaultAuthorEmail = "operator-publish@users.noreply.github.com"
)

// Repo is a working clone of the catalog repo in a temporary directory.
type Repo struct {
	// Dir is the root of the catalog in the working tree: the clone's root,
	// or Options.Path below it.
	Dir string
	// WorkTree is the root of the clone.
	WorkTree string
	// Empty reports that the branch had no commits when cloned.
	Empty bool
	// NewBranch reports that the repo has commits but not on this branch:
	// the first push creates it.
	NewBranch bool

	opts Options
	auth transport.AuthMethod
	repo *git.Repository
}

// UnreachableError says the catalog repo could not be cloned or pushed:
// wrong URL, network, credentials. It is an infrastructure error.
type UnreachableError struct {
	URL string
	Op  string
	Err error
}

func (e *UnreachableError) Error() string {
	hint := "check --catalog, the network and --catalog-username/--catalog-password"
	if !strings.Contains(e.URL, "://") {
		hint = "check --catalog: a local catalog must be an existing Git repository (bare or not)"
	}
	if isSSH(e.URL) {
		hint = "check --catalog, the network, --catalog-ssh-key (or the SSH agent) and that the key may push"
		if m := e.Err.Error(); strings.Contains(m, "knownhosts") || strings.Contains(m, "host key") {
			hint = "the server's SSH host key is not the one in known_hosts (--catalog-known-hosts, $SSH_KNOWN_HOSTS, ~/.ssh/known_hosts): check the fingerprint with the server's admin and update the file; --insecure-ignore-host-key skips the check, only on a trusted network"
		}
	}
	if isRejected(e.Err) {
		hint = "the catalog branch moved on while this run worked (another publish, or a manual push): rerun; the next run starts from the new tip"
	} else if errors.Is(e.Err, transport.ErrAuthenticationRequired) || errors.Is(e.Err, transport.ErrAuthorizationFailed) {
		hint = "the catalog repo refused the credentials: check --catalog-username/--catalog-password (PUBLISH_CATALOG_USERNAME/PUBLISH_CATALOG_PASSWORD) and that the account may push"
	} else if errors.Is(e.Err, transport.ErrRepositoryNotFound) {
		hint = "no repository at that URL: create it (it may be empty) or fix --catalog"
	} else if errors.Is(e.Err, syscall.ENOSPC) || errors.Is(e.Err, syscall.EDQUOT) {
		hint = "this machine's disk is full, not the catalog repo at fault: free space in " + os.TempDir() + ", or point TMPDIR at a larger disk"
	}
	var h interface{ Hint() string }
	if errors.As(e.Err, &h) {
		hint = h.Hint() // the cause knows better (catalog.RefusedError)
	}
	msg := strings.Join(strings.Fields(e.Err.Error()), " ")
	msg = strings.TrimSuffix(msg, ":")
	return fmt.Sprintf("catalog repo %s: %s failed: %s (%s)", redact(e.URL), e.Op, msg, hint)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// redact drops the whole user information of a URL (a token given as the
// user name too): redact.URL.
func redact(u string) string { return redactpkg.URL(u) }

func (o *Options) defaults() {
	if o.Branch == "" {
		o.Branch = "main"
	}
	if o.AuthorName == "" {
		o.AuthorName = DefaultAuthorName
	}
	if o.AuthorEmail == "" {
		o.AuthorEmail = DefaultAuthorEmail
	}
	if o.CommitterName == "" {
		o.CommitterName = o.AuthorName
	}
	if o.CommitterEmail == "" {
		o.CommitterEmail = o.AuthorEmail
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
}

// endpoint returns the URL go-git should use: absolute for local paths.
func (o *Options) endpoint() (string, error) {
	u := o.URL
	if u == "" {
		return "", errors.New("no catalog repo: set --catalog URL|PATH")
	}
	if strings.Contains(u, "://") || isSSH(u) {
		return u, nil
	}
	abs, err := filepath.Abs(u)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", &UnreachableError{URL: u, Op: "open", Err: fmt.Errorf("no such directory")}
	}
	return abs, nil
}

// Clone clones the branch of the catalog repo into a new temporary
// directory. An empty repo, or one without that branch, gives an empty
// working tree on a new branch (Empty true). Errors: *UnreachableError.
func Clone(ctx context.Context, o Options) (*Repo, error) {
	o.defaults()
	url, err := o.endpoint()
	if err != nil {
		return nil, err
	}
	sub, err := cleanPath(o.Path)
	if err != nil {
		return nil, err
	}
	o.Path = sub
	auth, err := o.auth()
	if err != nil {
		return nil, err
	}
	dir, err := scratch.MkdirTemp("", "catalog")
	if err != nil {
		return nil, err
	}
	r := &Repo{Dir: filepath.Join(dir, filepath.FromSlash(sub)), WorkTree: dir, opts: o, auth: auth}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var repo *git.Repository
	err = RetryEarlyClose(func() (err error) {
		repo, err = git.PlainCloneContext(cctx, dir, false, &git.CloneOptions{
			URL:           url,
			Auth:          auth,
			ReferenceName: plumbing.NewBranchReferenceName(o.Branch),
			SingleBranch:  true,
			CABundle:      o.CABundle,
		})
		return err
	})
	switch {
	case err == nil:
	case errors.Is(err, transport.ErrEmptyRemoteRepository) || isNoBranch(err):
		os.RemoveAll(dir)
		if !errors.Is(err, transport.ErrEmptyRemoteRepository) {
			if berr := checkBranch(ctx, o, url); berr != nil {
				return nil, berr
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		repo, err = git.PlainInitWithOptions(dir, &git.PlainInitOptions{
			InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(o.Branch)},
		})
		if err != nil {
			return nil, err
		}
		if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
			return nil, err
		}
		r.Empty = true
		if !errors.Is(err, transport.ErrEmptyRemoteRepository) {
			r.NewBranch = true
		}
	default:
		os.RemoveAll(dir)
		return nil, &UnreachableError{URL: o.URL, Op: "clone", Err: err}
	}
	r.repo = repo
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// cleanPath checks --catalog-path: relative, inside the repo, no "..".
func cleanPath(p string) (string, error) {
	if p == "" || p == "." || p == "/" {
		return "", nil
	}
	c := path.Clean(strings.Trim(filepath.ToSlash(p), "/"))
	if !filepath.IsLocal(c) || strings.HasPrefix(c, ".git/") || c == ".git" {
		return "", fmt.Errorf("--catalog-path %q: want a directory inside the catalog repo such as catalog or deploy/catalog (relative, no ..)", p)
	}
	return c, nil
}

func isNoBranch(err error) bool {
	var nm git.NoMatchingRefSpecError
	return errors.As(err, &nm) || errors.Is(err, plumbing.ErrReferenceNotFound) ||
		strings.Contains(err.Error(), "couldn't find remote ref")
}

// Close removes the working clone.
func (r *Repo) Close() error { return os.RemoveAll(r.WorkTree) }

// Seed writes every file of tmpl (rooted at root inside tmpl) that does not
// exist yet in the working tree. User files are never overwritten; nothing
// is written outside the working tree or through a symbolic link
// (checkout.Dir, *checkout.LinkError).
func (r *Repo) Seed(tmpl fs.FS, root string) error {
	dir, err := checkout.Open(r.Dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	return fs.WalkDir(tmpl, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if err := dir.NoLinks(rel); err != nil {
			return err
		}
		if _, err := os.Lstat(filepath.Join(r.Dir, filepath.FromSlash(rel))); err == nil {
			return nil
		}
		data, err := fs.ReadFile(tmpl, p)
		if err != nil {
			return err
		}
		return dir.WriteFile(rel, data)
	})
}

// Seed adds to the catalog files (slash-separated paths relative to its
// root, in memory) every file below root of the template tmpl that files
// lacks; files it has are kept as they are, and so is a file of files
// where a template directory goes, or a directory where a template file
// goes: that template file is not added, so that files stays a tree Git
// can hold.
func Seed(files map[string][]byte, tmpl fs.FS, root string) error {
	dirs := map[string]bool{}
	for p := range files {
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	return fs.WalkDir(tmpl, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if _, ok := files[rel]; ok || dirs[rel] {
			return nil
		}
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			if _, ok := files[dir]; ok {
				return nil // a user's file where the template has a directory
			}
		}
		data, err := fs.ReadFile(tmpl, p)
		files[rel] = data
		return err
	})
}

// Commit stages every change of the working tree (additions, edits,
// deletions) and commits it with msg. It returns the new commit hash, or ""
// when nothing changed (no commit is made).
func (r *Repo) Commit(msg string, when time.Time) (string, error) {
	wt, err := r.repo.Worktree()
	if err != nil {
		return "", err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("staging catalog changes: %w", err)
	}
	st, err := wt.Status()
	if err != nil {
		return "", err
	}
	if st.IsClean() {
		return "", nil
	}
	author := &object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: when}
	committer := &object.Signature{Name: r.opts.CommitterName, Email: r.opts.CommitterEmail, When: when}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: author, Committer: committer, Signer: r.opts.Signer})
	if err != nil {
		return "", fmt.Errorf("committing catalog: %w", err)
	}
	return h.String(), nil
}

// Push pushes the branch to origin. Errors: *UnreachableError, wrapping
// go-git's error (a rejected non-fast-forward update included).
func (r *Repo) Push(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	ref := plumbing.NewBranchReferenceName(r.opts.Branch)
	err := r.repo.PushContext(cctx, &git.PushOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		Auth:       r.auth,
		CABundle:   r.opts.CABundle,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return &UnreachableError{URL: r.opts.URL, Op: "push to " + r.opts.Branch, Err: err}
	}
	return nil
}

// Refresh makes the clone the current tip of the branch again after a
// rejected push: it fetches the branch, resets the working tree hard to
// its tip (the local commit is dropped) and removes untracked files. The
// caller renders again on top. Errors: *UnreachableError.
func (r *Repo) Refresh(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	ref := plumbing.NewBranchReferenceName(r.opts.Branch)
	remoteRef := plumbing.NewRemoteReferenceName("origin", r.opts.Branch)
	err := RetryEarlyClose(func() error {
		return r.repo.FetchContext(cctx, &git.FetchOptions{
			RemoteName: "origin",
			RefSpecs:   []config.RefSpec{config.RefSpec("+" + ref + ":" + remoteRef)},
			Auth:       r.auth,
			CABundle:   r.opts.CABundle,
			Tags:       git.NoTags,
			Force:      true,
		})
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return &UnreachableError{URL: r.opts.URL, Op: "fetch " + r.opts.Branch, Err: err}
	}
	tip, err := r.repo.Reference(remoteRef, true)
	if err != nil {
		return &UnreachableError{URL: r.opts.URL, Op: "fetch " + r.opts.Branch, Err: err}
	}
	wt, err := r.repo.Worktree()
	if err != nil {
		return err
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(ref, tip.Hash())); err != nil {
		return err
	}
	if err := wt.Reset(&git.ResetOptions{Commit: tip.Hash(), Mode: git.HardReset}); err != nil {
		return fmt.Errorf("resetting the catalog clone to %s: %w", tip.Hash(), err)
	}
	if err := wt.Clean(&git.CleanOptions{Dir: true}); err != nil {
		return fmt.Errorf("cleaning the catalog clone: %w", err)
	}
	r.Empty, r.NewBranch = false, false
	return os.MkdirAll(r.Dir, 0o755)
}

// rel maps a path of the clone (slash-separated) to the catalog root:
// "", false when it is outside Options.Path.
func (r *Repo) rel(p string) (string, bool) {
	if r.opts.Path == "" {
		return p, true
	}
	if strings.HasPrefix(p, r.opts.Path+"/") {
		return strings.TrimPrefix(p, r.opts.Path+"/"), true
	}
	return "", false
}

// ChangedFiles lists the paths (slash-separated) that differ between the
// working tree and HEAD, relative to the catalog root (Options.Path), for
// reports.
func (r *Repo) ChangedFiles() ([]string, error) {
	wt, err := r.repo.Worktree()
	if err != nil {
		return nil, err
	}
	st, err := wt.Status()
	if err != nil {
		return nil, err
	}
	var out []string
	for p := range st {
		if rp, ok := r.rel(path.Clean(p)); ok {
			out = append(out, rp)
		}
	}
	return out, nil
}

// FileChange is one file a commit would change.
type FileChange struct {
	Path   string `json:"path"`
	Change string `json:"change"` // added, modified, deleted
}

// Preview commits the working tree to the local clone only (never pushed)
// and returns the files below prefix ("" for all) that the commit changes
// against the branch tip, sorted, and their unified diff. Nothing changed:
// no files and "". Used by `publish plan`; the clone must not be pushed
// afterwards.
func (r *Repo) Preview(prefix string) ([]FileChange, string, error) {
	var base *object.Tree
	if head, err := r.repo.Head(); err == nil {
		c, err := r.repo.CommitObject(head.Hash())
		if err != nil {
			return nil, "", err
		}
		if base, err = c.Tree(); err != nil {
			return nil, "", err
		}
	}
	h, err := r.Commit("publish plan preview (never pushed)", time.Unix(0, 0))
	if err != nil || h == "" {
		return nil, "", err
	}
	c, err := r.repo.CommitObject(plumbing.NewHash(h))
	if err != nil {
		return nil, "", err
	}
	next, err := c.Tree()
	if err != nil {
		return nil, "", err
	}
	if base == nil {
		base = &object.Tree{}
	}
	changes, err := object.DiffTree(base, next)
	if err != nil {
		return nil, "", err
	}
	var keep object.Changes
	var files []FileChange
	for _, ch := range changes {
		p, kind := ch.To.Name, "modified"
		switch {
		case ch.From.Name == "":
			kind = "added"
		case ch.To.Name == "":
			p, kind = ch.From.Name, "deleted"
		}
		p, inside := r.rel(p)
		if !inside || prefix != "" && !strings.HasPrefix(p, prefix) {
			continue
		}
		keep = append(keep, ch)
		files = append(files, FileChange{Path: p, Change: kind})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	if len(keep) == 0 {
		return nil, "", nil
	}
	patch, err := keep.Patch()
	if err != nil {
		return nil, "", err
	}
	return files, patch.String(), nil
}

// isRejected reports whether a push failed because the branch moved on: the
// rejections servers really return (go-git's non-fast-forward, "fetch
// first", "cannot lock ref", GitLab's "incorrect old value provided",
// "failed to update ref").
func isRejected(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, git.ErrNonFastForwardUpdate) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "fetch first", "cannot lock ref", "incorrect old value provided", "failed to update ref", "stale info"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// IsRejected reports whether err (from Push) says that the branch moved on,
// so that fetching, re-rendering and pushing again can succeed.
func IsRejected(err error) bool {
	var ue *UnreachableError
	return errors.As(err, &ue) && isRejected(ue.Err)
}
