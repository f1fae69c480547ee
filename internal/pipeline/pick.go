package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/source"
	"github.com/operator-publish/publish/internal/source/diff"
)

// pickOptions say which versions of the package repo a command that
// takes paths picks (`publish package`, `publish mirror`): those whose
// manifests are below Paths (none: all) and, when Changed, those of them
// changed since Base (change detection, as run does).
type pickOptions struct {
	Source, PackagesDir string
	Paths               []string
	Changed             bool
	Base                string
	NoFetch             bool
	// Flag names the flag that asked for change detection, for its
	// errors ("--changed", "--base").
	Flag string
	Log  io.Writer
}

// picked is what pickVersions gives: the package repo (opened once), the
// manifests scanned, and the versions picked, each marked Changed (to be
// read), in the order of the scan.
type picked struct {
	repo     *source.Repo
	ms       []*manifest.PackageManifest
	selected []*model.Version
	// diff is change detection's answer when Changed, else nil.
	diff *diff.Result
}

// pickVersions scans the package repo and picks the versions o asks for.
// Errors: a path that does not exist (*PathError, a usage error), a
// package repo that cannot be scanned or read, a change detection that
// fails (naming o.Flag).
func pickVersions(ctx context.Context, o pickOptions) (*picked, error) {
	for _, p := range o.Paths {
		if _, err := os.Stat(filepath.Join(o.Source, p)); err != nil {
			return nil, &PathError{Path: p}
		}
	}
	ms, err := Scan(o.Source, o.PackagesDir)
	if err != nil {
		return nil, err
	}
	repo, err := source.Open(o.Source)
	if err != nil {
		return nil, err
	}
	p := &picked{repo: repo, ms: ms}
	if o.Changed {
		p.diff, err = diff.Compute(ctx, diff.Options{Repo: o.Source, Source: repo, PackagesDir: o.PackagesDir, Base: o.Base, Fetch: !o.NoFetch, Log: o.Log})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Flag, err)
		}
	}
	for _, v := range model.NewVersions(ms) {
		k := v.Key()
		if Selected(v.Manifest.Path, o.Paths) && (p.diff == nil || p.diff.Changed(k.Artifact, k.Version)) {
			v.Changed = true
			p.selected = append(p.selected, v)
		}
	}
	return p, nil
}

// readPicked reads what each of vs ships (its kind: the bundle image) and
// refuses any that could not be read: an *InputError listing each at its
// manifest line. Registry failures are returned as they are.
func readPicked(ctx context.Context, mc *mirror.Client, vs []*model.Version) error {
	if err := readVersions(ctx, mc, vs); err != nil {
		return err
	}
	var bad []error
	for _, v := range vs {
		if v.ReadErr != nil {
			bad = append(bad, fmt.Errorf("%s: %s %s: %w", v.Where(), v.Kind(), v.Ref(), v.ReadErr))
		}
	}
	if len(bad) > 0 {
		return inputErr(errors.Join(bad...))
	}
	return nil
}
