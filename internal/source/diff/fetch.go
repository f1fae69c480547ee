package diff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/redact"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// infiniteDepth is git's INFINITE_DEPTH: a fetch with this depth is
// `git fetch --unshallow`.
const infiniteDepth = 0x7fffffff

// gitCommand is the git binary of the fallback fetch; "" disables the
// fallback. goGitFetch false skips go-git (tests of the fallback).
var (
	gitCommand = "git"
	goGitFetch = true
)

// fetch asks origin for what the base resolution lacks: the full history
// of a shallow clone, the target branch, the base commit by hash. It tries
// go-git first and the git command second (go-git ignores the credentials
// helpers and http.extraheader that CI checkouts configure).
func (c *computer) fetch(ctx context.Context, s baseSpec, p *problem) error {
	rem, err := c.repo.Remote("origin")
	if err != nil {
		if errors.Is(err, git.ErrRemoteNotFound) {
			return errors.New(`the repo has no remote "origin" to fetch from`)
		}
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.FetchTimeout)
	defer cancel()
	url := ""
	if u := rem.Config().URLs; len(u) > 0 {
		url = redactURL(u[0])
	}

	specs := append([]config.RefSpec(nil), rem.Config().Fetch...)
	var branchSpec string
	if s.branch != "" {
		b := strings.TrimPrefix(s.branch, "refs/heads/")
		branchSpec = fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", b, b)
		specs = append(specs, config.RefSpec(branchSpec))
	}
	shallow := c.isShallow()
	what := "fetching"
	if shallow {
		what = "deepening the shallow clone from"
	}
	c.logf("diff: %s origin (%s)", what, url)
	start := time.Now()
	if err := c.fetchGoGit(ctx, specs, shallow); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("fetch from origin: %w", ctx.Err())
		}
		c.logf("diff: go-git fetch failed (%v); trying the git command", err)
		if err := c.reopen(); err != nil {
			return err
		}
		var args []string
		if c.isShallow() {
			args = append(args, "--unshallow")
		}
		args = append(args, "origin")
		if branchSpec != "" {
			args = append(args, branchSpec)
		}
		if gerr := c.gitFetch(ctx, args...); gerr != nil {
			return fmt.Errorf("go-git: %v; git: %v", err, gerr)
		}
	}
	if err := c.reopen(); err != nil {
		return err
	}
	if !p.hash.IsZero() && !c.hasCommit(p.hash) {
		if err := c.fetchHash(ctx, p.hash); err != nil {
			return err
		}
	}
	c.logf("diff: fetched from origin in %s", time.Since(start).Round(time.Millisecond))
	return nil
}

// fetchGoGit fetches specs from origin with go-git; a shallow clone is
// deepened to the full history and its shallow list repaired, because
// go-git does not apply the server's "unshallow" lines.
func (c *computer) fetchGoGit(ctx context.Context, specs []config.RefSpec, shallow bool) error {
	if !goGitFetch {
		return errors.New("go-git fetch disabled")
	}
	o := &git.FetchOptions{RemoteName: "origin", RefSpecs: specs, Tags: git.NoTags}
	if shallow {
		o.Depth = infiniteDepth
	}
	err := c.repo.FetchContext(ctx, o)
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return err
	}
	if shallow {
		return c.repairShallow()
	}
	return nil
}

// repairShallow drops from the shallow list every commit whose parents are
// now in the clone, and removes the shallow file when none is left.
func (c *computer) repairShallow() error {
	list, err := c.repo.Storer.Shallow()
	if err != nil {
		return err
	}
	var keep []plumbing.Hash
	for _, h := range list {
		cm, err := c.repo.CommitObject(h)
		if err != nil {
			keep = append(keep, h)
			continue
		}
		for _, ph := range cm.ParentHashes {
			if !c.hasCommit(ph) {
				keep = append(keep, h)
				break
			}
		}
	}
	if len(keep) == len(list) {
		return fmt.Errorf("the shallow clone was not deepened (%d shallow commits left)", len(keep))
	}
	if len(keep) == 0 {
		if fs, ok := c.repo.Storer.(*filesystem.Storage); ok {
			if err := fs.Filesystem().Remove("shallow"); err == nil || os.IsNotExist(err) {
				return c.loadShallow()
			}
		}
	}
	if err := c.repo.Storer.SetShallow(keep); err != nil {
		return err
	}
	return c.loadShallow()
}

// fetchHash fetches one commit by hash (servers that allow it: GitHub,
// GitLab; plain git-upload-pack over protocol v2).
func (c *computer) fetchHash(ctx context.Context, h plumbing.Hash) error {
	tmp := plumbing.ReferenceName("refs/publish-diff/base")
	o := &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{config.RefSpec(h.String() + ":" + tmp.String())},
		Tags:       git.NoTags,
	}
	err := errors.New("go-git fetch disabled")
	if goGitFetch {
		err = c.repo.FetchContext(ctx, o)
		_ = c.repo.Storer.RemoveReference(tmp)
	}
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("fetch %s from origin: %w", short(h), ctx.Err())
	}
	c.logf("diff: go-git fetch of %s failed (%v); trying the git command", short(h), err)
	if gerr := c.gitFetch(ctx, "origin", h.String()); gerr != nil {
		return fmt.Errorf("fetch %s: go-git: %v; git: %v", short(h), err, gerr)
	}
	return c.reopen()
}

func (c *computer) hasCommit(h plumbing.Hash) bool {
	_, err := c.repo.Storer.EncodedObject(plumbing.CommitObject, h)
	return err == nil
}

// gitFetch runs `git fetch --no-tags --quiet ARGS...` in the repo, with no
// terminal prompt, bounded by ctx.
func (c *computer) gitFetch(ctx context.Context, args ...string) error {
	if gitCommand == "" {
		return errors.New("the git command is disabled")
	}
	bin, err := exec.LookPath(gitCommand)
	if err != nil {
		return fmt.Errorf("the git command is not installed: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"fetch", "--no-tags", "--quiet"}, args...)...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(out.String()), "\n", " | ")), " ")
		if ctx.Err() != nil {
			return fmt.Errorf("git fetch: %w", ctx.Err())
		}
		return fmt.Errorf("git fetch %s: %v: %s", strings.Join(args, " "), err, redactURL(msg))
	}
	if err := c.reopen(); err != nil {
		return err
	}
	c.logf("diff: git fetch %s: done", strings.Join(args, " "))
	return nil
}

// redactURL drops user information from URLs in s (redact.Text).
func redactURL(s string) string { return redact.Text(s) }
