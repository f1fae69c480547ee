package diff

import "context"

// ResolveBase resolves the base commit the way Compute does (Options.Base;
// in pull-request mode the merge base of HEAD and the target branch, or
// CI_MERGE_REQUEST_DIFF_BASE_SHA; else Options.StateCommit), fetching from
// origin when Options.Fetch allows it, but diffs nothing: it is the base of
// a comparison made elsewhere (`publish check` compares the rendered trees
// of the catalog repo). Options.PackagesDir is ignored. The Result has
// Base, Head, BaseFrom, All (no usable base: Base is ""), Warnings and
// Fetched; Changes is empty. Errors as Compute's.
func ResolveBase(ctx context.Context, o Options) (*Result, error) {
	o.PackagesDir = "."
	c, _, _, err := start(ctx, o, "repo")
	if c == nil {
		return nil, err
	}
	return c.finish(), err
}
