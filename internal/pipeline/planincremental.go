package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/diff"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// notIncremental says the incremental plan does not apply: a
// *catalog.FullReadRequiredError, whose reason PlanRun logs before it makes
// the plan the full way. Any other error is an error.
func notIncremental(format string, args ...any) error {
	return catalog.FullReadRequired(format, args...)
}

// planIncremental makes the plan with work that grows with the change, not
// with the repo: it reads only the manifests of the artifacts that changed
// since the last publish (the other versions come from publish/state.yaml,
// which records where each was read from), and only their objects of the
// catalog, from Git objects of the branch tip, without checking the catalog
// out. It applies when the catalog was published by this version of
// publish (paths and a render key in the state), change detection has a
// base, the state's source commit is in the package repo's history and the
// overlays are unchanged; otherwise it returns *catalog.FullReadRequiredError and the
// caller makes the plan the full way, with the same result.
func planIncremental(ctx context.Context, o PlanOptions) (*Plan, error) {
	if o.Changed != nil {
		return nil, notIncremental("a change set was given")
	}
	var snap catalog.View
	snap, err := catalog.OpenTip(ctx, o.Catalog)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	if snap.Head() == "" {
		return nil, notIncremental("the catalog branch has no commits")
	}
	data, ok, err := snap.ReadFile(gitops.StatePath)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notIncremental("the catalog has no %s yet", gitops.StatePath)
	}
	idx, err := gitops.SplitState(data)
	if err != nil {
		return nil, notIncremental("%v", err)
	}
	header := idx.Header
	key := header.Rendered[o.Cluster]
	if header.Source.Commit == "" || key == "" || len(idx.Names()) == 0 {
		return nil, notIncremental("the catalog has no render key or source commit for cluster %s", o.Cluster)
	}

	// The overlays, materialised to compute the render key and to render
	// the changed artifacts.
	root, err := os.MkdirTemp("", "publish-plan-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	overlay, err := snap.Files("", func(p string, isDir bool) bool {
		return isDir && (p == render.RenderedDir || p == "publish")
	})
	if err != nil {
		return nil, err
	}
	if err := render.Write(root, nil, overlay); err != nil {
		return nil, err
	}
	if err := render.CheckOverlay(root, o.Cluster); err != nil {
		return nil, inputErr(err)
	}
	if k, err := render.Key(root, o.Cluster, o.Render); err != nil {
		return nil, err
	} else if k != key {
		return nil, notIncremental("the overlays or the render configuration changed since the last publish")
	}

	dr, err := diff.Compute(ctx, diff.Options{
		Repo: o.Options.Source, PackagesDir: o.PackagesDir, Base: o.Base,
		PR: o.PR, TargetBranch: o.TargetBranch,
		StateCommit: header.Source.Commit, Fetch: !o.NoFetch, Log: o.logWriter(),
	})
	if err != nil {
		return nil, fmt.Errorf("change detection: %w", err)
	}
	if dr.All {
		return nil, notIncremental("change detection has no base")
	}
	since := dr // the changes since the published state
	if dr.Base != header.Source.Commit {
		since, err = diff.Compute(ctx, diff.Options{Repo: o.Options.Source, PackagesDir: o.PackagesDir, Base: header.Source.Commit})
		if err != nil || since.All {
			return nil, notIncremental("the published source commit %s is not in the package repo", short(header.Source.Commit))
		}
	}
	prefix, err := sourcePrefix(o.Options.Source)
	if err != nil {
		return nil, notIncremental("%v", err)
	}
	files, ms, scanErr, touched, err := scopedScan(o.Options.Source, prefix, idx, dr, since)
	if err != nil {
		return nil, err
	}
	// Only the touched artifacts can change: the plan is made with their
	// part of the state alone.
	state := &gitops.State{Source: header.Source, Rendered: header.Rendered}
	for _, n := range sortedKeys(touched) {
		a, ok, err := idx.Artifact(n)
		if err != nil {
			return nil, notIncremental("%v", err)
		}
		if ok {
			state.Artifacts = append(state.Artifacts, a)
		}
	}

	p := &Plan{SchemaVersion: PlanSchemaVersion, Cluster: o.Cluster, Artifacts: []PlanArtifact{}, Findings: []lint.Finding{}, Files: []gitops.FileChange{},
		Source: PlanSource{Head: dr.Head, Base: dr.Base, BaseFrom: dr.BaseFrom, Warnings: dr.Warnings}}
	mc, err := newClient(o.Mirror, ms)
	if err != nil {
		return nil, err
	}
	if h := mc.DstHost(); h != "" {
		for _, a := range state.Artifacts {
			if a.Present && a.Registry != h {
				return nil, notIncremental("the destination registry changed since the last publish")
			}
		}
	}

	r := &run{Options: o.Options, mc: mc, changed: dr.Changed, diff: dr}
	sub, err := planContent(ctx, r, p, files, model.NewVersions(ms), scanErr, state)
	if err != nil {
		return nil, err
	}

	// Render the touched artifacts whose objects change.
	gen, err := render.Generated(o.Render, sub)
	if err != nil {
		return nil, inputErr(err)
	}
	changed := map[string]bool{}
	oldGen := map[string][]byte{}
	for _, a := range sub {
		dir := render.GeneratedDir + "/" + a.Name
		fs, err := snap.Files(dir, nil)
		if err != nil {
			return nil, err
		}
		for k, v := range fs {
			oldGen[k] = v
		}
	}
	for k, v := range gen {
		if art, ok := generatedArtifact(k); ok && !bytes.Equal(oldGen[k], v) {
			changed[art] = true
		}
	}
	for k := range oldGen {
		if art, ok := generatedArtifact(k); ok && gen[k] == nil {
			changed[art] = true
		}
	}
	if len(changed) > 0 {
		var only []model.ArtifactRecord
		for _, a := range sub {
			if changed[a.Name] {
				only = append(only, a)
			}
		}
		g, err := render.Generated(o.Render, only)
		if err != nil {
			return nil, inputErr(err)
		}
		if err := render.Write(root, []string{render.GeneratedDir}, g); err != nil {
			return nil, err
		}
		out, err := render.BuildOnly(root, o.Cluster, changed)
		if err != nil {
			return nil, inputErr(err)
		}
		if err := render.Validate(o.Cluster, out); err != nil {
			return nil, inputErr(err)
		}
		before := render.Files{}
		for art := range changed {
			fs, err := snap.Files(path.Join(render.RenderedDir, o.Cluster, art), nil)
			if err != nil {
				return nil, err
			}
			for k, v := range fs {
				before[k] = v
			}
		}
		for k := range out {
			if _, ok := before[k]; !ok {
				if data, ok, err := snap.ReadFile(k); err != nil {
					return nil, err
				} else if ok {
					before[k] = data
				}
			}
		}
		// The diff names files as Git does, from the repo root (below
		// --catalog-path); the file list is relative to the catalog.
		repoPath := func(fs render.Files) render.Files {
			sub := strings.Trim(path.Clean("/"+filepath.ToSlash(o.Catalog.Path)), "/")
			if sub == "" {
				return fs
			}
			out := render.Files{}
			for k, v := range fs {
				out[sub+"/"+k] = v
			}
			return out
		}
		files, patch, err := gitops.FileDiff(repoPath(before), repoPath(out))
		if err != nil {
			return nil, err
		}
		p.Diff = patch
		for _, f := range files {
			f.Path = strings.TrimPrefix(f.Path, strings.Trim(path.Clean("/"+filepath.ToSlash(o.Catalog.Path)), "/")+"/")
			p.Files = append(p.Files, f)
		}
	}
	p.summarise()
	return p, nil
}

// generatedArtifact returns the artifact of a file below publish/generated.
func generatedArtifact(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, render.GeneratedDir+"/")
	art, _, nested := strings.Cut(rest, "/")
	return art, ok && nested
}

// sourcePrefix returns the path of source relative to its Git worktree
// root ("" when source is the root), slash-separated, with a trailing '/'.
func sourcePrefix(source string) (string, error) {
	repo, err := git.PlainOpenWithOptions(source, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return "", err
	}
	src, err := filepath.Abs(source)
	if err == nil {
		src, err = filepath.EvalSymlinks(src)
	}
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(top, src)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is not inside its Git worktree %s", source, top)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel) + "/", nil
}

// scopedScan reads and parses the manifests of every artifact a change
// touches: the files changed since the base (dr) or since the published
// state (since), and the other versions of their artifacts, which the state
// records by path. Manifest paths are relative to source; diff paths to the
// worktree root, below prefix. A recorded file that is gone or a link
// makes the incremental plan inapplicable (*catalog.FullReadRequiredError).
func scopedScan(source, prefix string, idx *gitops.StateIndex, dr, since *diff.Result) ([]manifest.File, []*manifest.PackageManifest, error, map[string]bool, error) {
	rel := func(p string) (string, bool) { return strings.CutPrefix(p, prefix) }
	gone := map[string]bool{}
	want := map[string]bool{}
	for _, r := range []*diff.Result{dr, since} {
		for _, c := range r.Changes {
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
	// The published versions of an artifact, by path.
	published := func(name string) ([]string, error) {
		a, ok, err := idx.Artifact(name)
		if err != nil || !ok || !a.Present {
			return nil, err
		}
		var out []string
		for _, v := range a.Versions {
			if !v.Present || gone[v.Path] {
				continue
			}
			if v.Path == "" {
				return nil, notIncremental("publish/state.yaml does not record manifest paths (written by an older publish)")
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
					return nil, nil, nil, nil, notIncremental("%s is recorded in publish/state.yaml but gone without a change in the package repo's history", p)
				}
				return nil, nil, nil, nil, err
			}
			if !st.Mode().IsRegular() {
				return nil, nil, nil, nil, notIncremental("%s is not a regular file", p)
			}
			data, err := os.ReadFile(full)
			if err != nil {
				return nil, nil, nil, nil, err
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

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
