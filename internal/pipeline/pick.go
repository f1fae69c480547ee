package pipeline

import (
	"context"
	"fmt"
	"github.com/operator-publish/publish/internal/logging"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/kind"
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
// Paths are absolute or relative to o.Source, as lint's PATHs. Errors: a
// path that does not exist, leaves --source or holds no manifest
// (*PathError, a usage error), a package repo that cannot be scanned or
// read, a change detection that fails (naming o.Flag).
func pickVersions(ctx context.Context, o pickOptions) (*picked, error) {
	paths, err := sourcePaths(o.Source, o.Paths)
	if err != nil {
		return nil, err
	}
	ms, err := Scan(o.Source, o.PackagesDir)
	if err != nil {
		return nil, err
	}
	for i, rel := range paths {
		if !slices.ContainsFunc(ms, func(m *manifest.PackageManifest) bool { return Selected(m.Path, []string{rel}) }) {
			return nil, &PathError{Path: o.Paths[i], Reason: fmt.Sprintf("no %s below it (--packages-dir %s, relative to --source %s): nothing to pick", manifest.FileName, o.PackagesDir, o.Source)}
		}
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
		if Selected(v.Manifest.Path, paths) && (p.diff == nil || p.diff.Changed(k.Artifact, k.Version)) {
			v.Changed = true
			p.selected = append(p.selected, v)
		}
	}
	return p, nil
}

// sourcePaths returns paths (absolute, or relative to source) relative to
// source, slash-separated, for Selected; nil for none. Errors are
// *PathError: a path outside source (after links are resolved, as lint
// compares them: sourcePath), or one that does not exist.
func sourcePaths(source string, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	absSource, err := realPath(source)
	if err != nil {
		return nil, &PathError{Path: source, Reason: "--source: " + err.Error()}
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, _, _, err := sourcePath(source, absSource, p, "give files or directories of the package repo (relative to --source, or absolute)")
		if err != nil {
			return nil, err
		}
		out = append(out, rel)
	}
	return out, nil
}

// sourcePath resolves the PATH p (absolute, or relative to source;
// absSource is source's realPath) to its path relative to source,
// slash-separated, its real absolute path and what it is. Errors are
// *PathError: p outside source (what says what to give instead), or p
// missing.
func sourcePath(source, absSource, p, what string) (rel, abs string, st os.FileInfo, err error) {
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(source, p)
	}
	if abs, err = realPath(full); err != nil {
		return "", "", nil, &PathError{Path: p, Reason: err.Error()}
	}
	rel, err = filepath.Rel(absSource, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", "", nil, &PathError{Path: p, Reason: fmt.Sprintf("outside --source %s: %s", source, what)}
	}
	if st, err = os.Stat(abs); err != nil {
		return "", "", nil, &PathError{Path: p}
	}
	return filepath.ToSlash(rel), abs, st, nil
}

// readWith is prepare's Read step of a command over no cluster (package,
// mirror): readVersions with the registry client mc's source side, each
// bundle made slim as soon as it is read (kind.Prelint.SlimOnly: these
// commands lint nothing and need only the bundles' images and metadata),
// so that a command over a whole catalog never holds every bundle whole.
// A read over many bundles logs how far it is to logf every 10 s of now
// (progress).
func readWith(mc *mirror.Client, logf func(string, ...any), now func() time.Time) func(context.Context, []*model.Version) error {
	return func(ctx context.Context, vs []*model.Version) error {
		p := logging.NewProgress(logf, now, "read", "versions read", len(vs))
		defer p.End()
		pre := &kind.Prelint{SlimOnly: true, Progress: func(bool) { p.Step() }}
		return readVersions(ctx, kind.Env{Client: mc, Prelint: pre}, vs)
	}
}
