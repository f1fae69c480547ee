package diff

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// ResolveBase resolves the base commit the way Compute does (Options.Base;
// in pull-request mode the merge base of HEAD and the target branch, or
// CI_MERGE_REQUEST_DIFF_BASE_SHA; else Options.StateCommit), fetching from
// origin when Options.Fetch allows it, but diffs nothing: it is the base of
// a comparison made elsewhere (`publish check` compares the rendered trees
// of the catalog repo). Options.PackagesDir is ignored. The Result has
// Base, Head, BaseFrom, All (no usable base: Base is ""), Warnings and
// Fetched; Changes is empty. Errors as Compute's.
func ResolveBase(ctx context.Context, o Options) (*Result, error) {
	if o.Repo == "" {
		o.Repo = "."
	}
	o.PackagesDir = "."
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 5 * time.Minute
	}
	c := &computer{o: o, res: &Result{}}
	if err := c.open(); err != nil {
		return nil, err
	}
	head, err := c.repo.Head()
	if err != nil {
		return nil, fmt.Errorf("repo %s: no HEAD commit: %w", c.root, err)
	}
	headCommit, err := c.repo.CommitObject(head.Hash())
	if err != nil {
		return nil, fmt.Errorf("repo %s: reading HEAD commit %s: %w", c.root, head.Hash(), err)
	}
	c.res.Head = head.Hash().String()
	base, err := c.resolveBase(ctx, headCommit)
	if err != nil || base == nil {
		return c.finish(), err
	}
	c.res.Base = base.Hash.String()
	return c.finish(), nil
}
