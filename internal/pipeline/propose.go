package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/delivery"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/gitops"
)

// ProposeOptions configures ProposeFiles.
type ProposeOptions struct {
	// Catalog is the catalog repo and its branch, the pull request's base.
	Catalog gitops.Options
	// Forge opens the catalog repo's forge (as Options.Forge).
	Forge func() (forge.Forge, error)
	// Branch is the rolling branch the proposal is pushed to; it must not
	// be the catalog branch.
	Branch string
	// Files are written below the catalog root (--catalog-path), by path.
	Files map[string][]byte
	// Message is the commit message; Title, Body and Labels the pull
	// request's.
	Message, Title, Body string
	Labels               []string
	// Log receives what was done; nil discards.
	Log io.Writer
}

// ProposeFiles proposes Files as a pull request on the catalog repo, the
// way pull-request delivery proposes a cluster's change: one commit on the
// catalog branch's tip, pushed to Branch (replacing whatever it held, the
// old value checked), and one pull request from Branch into the catalog
// branch, opened or updated. When the tip already has the files, nothing
// is proposed (Action ""). Errors: the forge's (a token that may not open
// pull requests, *forge.PermissionError), the catalog's, an input error for
// Branch equal to the catalog branch or no forge.
func ProposeFiles(ctx context.Context, o ProposeOptions) (*delivery.Result, error) {
	o.Catalog = o.Catalog.WithDefaults()
	if o.Branch == o.Catalog.Branch {
		return nil, inputErr(fmt.Errorf("the pull-request branch %s is the catalog branch (--catalog-branch): use another", o.Branch))
	}
	if o.Forge == nil {
		return nil, inputErr(errors.New("a pull request needs the forge of the catalog repo: give --forge-token (and --forge, --forge-api-url for a self-hosted forge)"))
	}
	f, err := o.Forge()
	if err != nil {
		return nil, inputErr(err)
	}
	if err := f.Check(ctx); err != nil {
		return nil, err
	}
	tip, err := catalog.OpenTip(ctx, o.Catalog)
	if err != nil {
		return nil, err
	}
	defer tip.Close()
	paths := make([]string, 0, len(o.Files))
	for p := range o.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var changes []catalog.Change
	for _, p := range paths {
		changes = append(changes, catalog.Change{Path: p, Data: o.Files[p]})
	}
	w, err := tip.Commit(changes, catalog.CommitOptionsFor(o.Catalog, o.Message, time.Now()))
	if err != nil {
		return nil, fmt.Errorf("committing the pull-request branch %s: %w", o.Branch, err)
	}
	res := &delivery.Result{Branch: o.Branch}
	if w.Commit.IsZero() {
		logLine(o.Log, "pull request: the catalog branch %s already has these files: nothing to propose", o.Catalog.Branch)
		return res, nil
	}
	if _, err := tip.PushBranch(ctx, w, o.Branch); err != nil {
		return nil, err
	}
	res.Commit = w.Commit.String()
	ch := forge.Change{Title: o.Title, Body: o.Body, Labels: o.Labels}
	pr, err := f.Find(ctx, o.Branch, o.Catalog.Branch)
	if err != nil {
		return nil, err
	}
	if pr == nil {
		if pr, err = f.Create(ctx, o.Branch, o.Catalog.Branch, ch); err != nil {
			return nil, err
		}
		res.Action = "opened"
	} else {
		if pr, err = f.Update(ctx, pr.Number, ch); err != nil {
			return nil, err
		}
		res.Action = "updated"
	}
	res.Number, res.URL = pr.Number, pr.URL
	logLine(o.Log, "pull request: %s #%d (%s) from %s", res.Action, pr.Number, pr.URL, o.Branch)
	return res, nil
}

func logLine(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
