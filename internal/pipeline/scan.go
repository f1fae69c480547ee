package pipeline

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/source/diff"
)

// checkScanned stops a run before any registry is touched when a manifest
// file did not parse or a repo-wide rule fails: the files are linted (no
// registry access) and the findings returned as a *LintError.
func checkScanned(ctx context.Context, o Options, files []manifest.File, ms []*manifest.PackageManifest, scanErr error) error {
	if scanErr == nil && !hasErrors(lint.Repo(ms)) {
		return nil
	}
	all := model.NewVersions(ms)
	for _, v := range all {
		v.Changed = true // every finding counts
	}
	fs, err := lintStage(ctx, o.Lint, o.Cluster, nil, files, all)
	if err != nil {
		return err
	}
	fs = append(fs, unreadFindings(scanErr, files)...)
	if hasErrors(fs) {
		return &InputError{Err: &LintError{Findings: fs}}
	}
	if scanErr != nil {
		return inputErr(scanErr)
	}
	return nil
}

// pathSet is the set of paths.
func pathSet(paths []string) map[string]bool {
	out := make(map[string]bool, len(paths))
	for _, p := range paths {
		out[p] = true
	}
	return out
}

// scopedScan reads and parses the manifests of every artifact a change
// touches: the files changed since the base (dr) or since the published
// state (since), the uncommitted ones (dirty), and the other versions of
// their artifacts, which the state records by path. Manifest paths are
// relative to source; diff paths to the worktree root, below prefix. A
// recorded file that is gone or not a regular file makes the incremental
// way inapplicable (*catalog.FullReadRequiredError).
func scopedScan(source, prefix string, idx *gitops.StateIndex, dr, since *diff.Result, dirty []string) ([]manifest.File, []*manifest.PackageManifest, error, map[string]bool, error) {
	want, gone := scanPaths(prefix, dr, since, dirty)
	// The published versions of an artifact, by path.
	published := func(name string) ([]string, error) {
		a, ok, err := idx.Artifact(name)
		if err != nil {
			return nil, catalog.FullReadRequired("%v", err)
		}
		if !ok || !a.Present {
			return nil, nil
		}
		var out []string
		for _, v := range a.Versions {
			if !v.Present || gone[v.Path] {
				continue
			}
			if v.Path == "" {
				return nil, catalog.FullReadRequired("%s does not record manifest paths (written by an older publish)", idx.Path)
			}
			out = append(out, v.Path)
		}
		return out, nil
	}
	touched := map[string]bool{}
	for _, r := range []*diff.Result{dr, since} {
		for _, c := range r.Changes {
			touched[c.Artifact] = true
		}
		for _, c := range r.Moved { // read again, from the new path
			touched[c.Artifact] = true
		}
	}
	for a := range touched {
		ps, err := published(a)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		for _, p := range ps {
			want[p] = true
		}
	}
	read := map[string]bool{}
	var files []manifest.File
	var ms []*manifest.PackageManifest
	var errs []error
	for len(want) > 0 {
		paths := make([]string, 0, len(want))
		for p := range want {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		want = map[string]bool{}
		for _, p := range paths {
			if read[p] {
				continue
			}
			read[p] = true
			full := filepath.Join(source, filepath.FromSlash(p))
			st, err := os.Lstat(full)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil, nil, nil, nil, catalog.FullReadRequired("%s is recorded in %s but gone without a change in the package repo's history", p, idx.Path)
				}
				return nil, nil, nil, nil, err
			}
			if !st.Mode().IsRegular() {
				return nil, nil, nil, nil, catalog.FullReadRequired("%s is not a regular file", p)
			}
			data, err := manifest.ReadFile(full, p)
			if err != nil {
				errs = append(errs, err) // too large: a finding, as in the full scan
				continue
			}
			files = append(files, manifest.File{Path: p, Data: data})
			m, err := manifest.Parse(p, data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ms = append(ms, m)
			// A version moved into another artifact brings that
			// artifact's versions in too.
			if !touched[m.Artifact] {
				touched[m.Artifact] = true
				ps, err := published(m.Artifact)
				if err != nil {
					return nil, nil, nil, nil, err
				}
				for _, q := range ps {
					want[q] = true
				}
			}
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	manifest.Sort(ms)
	return files, ms, errors.Join(errs...), touched, nil
}

// scanPaths returns the manifest paths (relative to the source, whose
// path in the worktree is prefix) that the changes of dr and since and
// the dirty files name (want), and those the changes remove or move away
// (gone).
func scanPaths(prefix string, dr, since *diff.Result, dirty []string) (want, gone map[string]bool) {
	rel := func(p string) (string, bool) { return strings.CutPrefix(p, prefix) }
	want, gone = pathSet(dirty), map[string]bool{}
	for _, r := range []*diff.Result{dr, since} {
		for _, c := range append(append([]diff.Change(nil), r.Changes...), r.Moved...) {
			if c.Kind == diff.Removed {
				if p, ok := rel(c.Path); ok {
					gone[p] = true
				}
				continue
			}
			if c.OldPath != "" && c.OldPath != c.Path {
				if p, ok := rel(c.OldPath); ok {
					gone[p] = true
				}
			}
			if p, ok := rel(c.Path); ok {
				want[p] = true
			}
		}
		for _, inv := range r.Invalid {
			if p, ok := rel(inv); ok {
				want[p] = true
			}
		}
	}
	return want, gone
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
