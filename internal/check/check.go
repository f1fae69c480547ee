// Package check is `publish check`: the review of the catalog repo's own
// pull requests (docs/catalog.md#reviewing-catalog-pull-requests-publish-check).
// In the catalog repo's CI it re-renders every cluster from
// publish/generated/<cluster> and the cluster's overlay (internal/render Build, the
// alauda target's render), reports every file of rendered/<cluster> that
// differs from the render (changed, missing or extra: a hand edit, an
// overlay changed but not rendered, a broken overlay), validates every
// rendered object against the CRDs built into the binary (internal/render,
// internal/crdcheck), and summarises what the change does on each cluster
// (artifacts and versions listed, delisted, relisted, removed, changed
// fields) from the rendered trees of a base commit and of the checkout.
// Nothing is written.
package check

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/crdcheck"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/source/diff"
)

// Rule IDs of the findings check reports (lint.Finding.Rule).
const (
	RuleDrift     = "check/drift"      // rendered/ differs from the render: changed, missing or extra file
	RuleOverlay   = "check/overlay"    // the overlay does not build
	RuleCRD       = "check/crd"        // an object the CRDs reject
	RuleState     = "check/state"      // a state file (publish/state/<cluster>.yaml) does not parse or validate
	RuleDeleted   = "check/deleted"    // an object removed from rendered/ (delisting never deletes)
	RuleNoOverlay = "check/no-overlay" // rendered/<cluster> without its overlay: not checked
)

// FlagError is an option of Run that cannot be used: a --catalog-dir
// that is not a directory, a --cluster the catalog lacks, a --base that
// does not resolve. The CLI exits 2 for it.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// Options configures Run.
type Options struct {
	// CatalogDir is the catalog checkout: the catalog root (the clone's
	// root, or the directory the catalog lives in below it). Default ".".
	CatalogDir string
	// Clusters are the clusters to check; empty: every cluster with an
	// overlay (kustomize/clusters/<cluster>) or a rendered/<cluster>; those
	// with both are checked, the others listed with the reason (no
	// overlay, not rendered yet), as are those of the olm target.
	Clusters []string
	// Base is the revision the summary compares with (--base); "" is, in
	// pull-request mode, the merge base with the target branch (as
	// `publish plan` finds it: internal/diff), else HEAD's first parent.
	Base string
	// PR is pull-request mode; TargetBranch its target branch ("" reads
	// the CI's variables, see diff.Options).
	PR           bool
	TargetBranch string
	// Fetch allows fetching from origin to find the base in a shallow
	// clone.
	Fetch bool
	// Getenv reads the CI environment; nil is os.Getenv.
	Getenv func(string) string
	// Log receives progress lines and warnings; nil discards them.
	Log io.Writer
}

// Report is what Run found.
type Report struct {
	// Base and Head are the commits compared by the summary; Base is ""
	// when there is none (every object counts as added), Head "" for a
	// directory outside Git. BaseFrom says where the base came from
	// (diff.FromFlag, FromMergeBase, FromCI, "parent", "none").
	Base, Head, BaseFrom string
	// Prefix is the catalog directory in its Git repo ("" for the root):
	// the findings' paths start with it.
	Prefix string
	// Clusters is every cluster met, sorted by name.
	Clusters []Cluster
	// Findings are the problems, at their files (paths relative to the
	// repository root), sorted.
	Findings []lint.Finding
	// Warnings are notes for the log (a base that could not be used).
	Warnings []string
}

// Cluster is the result for one cluster.
type Cluster struct {
	Name string
	// Checked says the cluster was re-rendered and validated; otherwise
	// Skipped says why not.
	Checked bool
	Skipped string
	// Files is how many files of rendered/<cluster> were compared, Objects
	// how many objects were validated against the CRDs, Problems how many
	// error findings are about this cluster.
	Files, Objects, Problems int
	// Changes is what the change does on this cluster, by artifact
	// (sorted); Other the files of objects that belong to no artifact.
	Changes []ArtifactChange
	Other   []FileChange
}

// Errors returns how many findings are errors (exit 1 when any).
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == lint.Error {
			n++
		}
	}
	return n
}

// Run checks the catalog checkout of o (see the package comment) and
// returns the report; problems in the catalog are findings, not errors.
// Errors: a catalog directory that cannot be read, a Git repo that cannot
// be read, a --base that does not resolve.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.CatalogDir == "" {
		o.CatalogDir = "."
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	dir, err := filepath.Abs(o.CatalogDir)
	if err != nil {
		return nil, err
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	head, err := catalog.OpenDir(dir)
	if err != nil {
		return nil, &FlagError{fmt.Errorf("--catalog-dir %s: %w", o.CatalogDir, err)}
	}
	r := &Report{Head: head.Head()}
	gitRoot := repoRoot(dir)
	if gitRoot != "" {
		rel, err := filepath.Rel(gitRoot, dir)
		if err == nil && rel != "." {
			r.Prefix = filepath.ToSlash(rel)
		}
	}
	c := &checker{o: o, r: r, head: head, dir: dir, log: logw}
	if err := c.readState(); err != nil {
		return nil, err
	}
	if err := c.generatedBases(); err != nil {
		return nil, err
	}
	if err := c.oddRendered(); err != nil {
		return nil, err
	}
	clusters, err := c.clusters()
	if err != nil {
		return nil, err
	}
	v, err := crdcheck.Alauda()
	if err != nil {
		return nil, err
	}
	c.v = v
	for i := range clusters {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if clusters[i].Skipped == "" {
			if err := c.cluster(&clusters[i]); err != nil {
				return nil, err
			}
		}
	}
	gone, err := c.summary(ctx, clusters, gitRoot)
	if err != nil {
		return nil, err
	}
	r.Clusters = append(clusters, gone...)
	sort.Slice(r.Clusters, func(i, j int) bool { return r.Clusters[i].Name < r.Clusters[j].Name })
	sortFindings(r.Findings)
	return r, nil
}

// repoRoot returns the working tree root of the Git repo containing dir,
// "" outside Git.
func repoRoot(dir string) string {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return ""
	}
	wt, err := repo.Worktree()
	if err != nil {
		return ""
	}
	root := wt.Filesystem.Root()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	return root
}

type checker struct {
	o    Options
	r    *Report
	head *catalog.Dir
	dir  string
	// cat is the catalog read into memory for the render (catalog), once.
	cat render.Files
	log io.Writer
	v   *crdcheck.Validator
	// rendered is the render key the state files record per cluster.
	rendered map[string]string
}

// catalog returns the catalog checked, read into memory once: what the
// render builds from.
func (c *checker) catalog() (render.Files, error) {
	if c.cat == nil {
		files, err := c.head.Files("", nil)
		if err != nil {
			return nil, err
		}
		c.cat = files
	}
	return c.cat, nil
}

// at returns the repository-relative path of a catalog path.
func (c *checker) at(p string) string {
	if c.r.Prefix == "" {
		return p
	}
	return c.r.Prefix + "/" + p
}

func (c *checker) add(f lint.Finding) {
	f.Path = c.at(f.Path)
	if f.Severity == "" {
		f.Severity = lint.Error
	}
	c.r.Findings = append(c.r.Findings, f)
}

func (c *checker) logf(format string, args ...any) {
	fmt.Fprintf(c.log, format+"\n", args...)
}

// readState reads the state files (publish/state/<cluster>.yaml, or the
// older publish/state.yaml of a catalog not upgraded yet): what check
// needs of them is which target rendered each cluster; a file that does
// not parse is a finding.
func (c *checker) readState() error {
	c.rendered = map[string]string{}
	if data, ok, err := c.head.ReadFile(gitops.LegacyStatePath); err != nil {
		return err
	} else if ok {
		s, err := gitops.ParseLegacyState(data)
		if err != nil {
			c.add(lint.Finding{Rule: RuleState, Path: gitops.LegacyStatePath, Line: 1, Message: err.Error()})
		} else {
			for cl, k := range s.Rendered {
				c.rendered[cl] = k
			}
		}
	}
	files, err := c.head.Files(gitops.StateDir, nil)
	if err != nil {
		return err
	}
	for _, p := range sortedKeys(files) {
		cl, ok := gitops.StateCluster(p)
		if !ok {
			continue
		}
		s, err := gitops.ParseState(p, files[p])
		if err != nil {
			c.add(lint.Finding{Rule: RuleState, Path: p, Line: 1, Message: err.Error()})
			continue
		}
		c.rendered[cl] = s.Rendered[cl]
	}
	return nil
}

// generatedBases checks every generated base: publish/generated/<cluster>
// (and publish/generated itself in a catalog not upgraded yet).
func (c *checker) generatedBases() error {
	files, err := c.head.Files(render.GeneratedDir, nil)
	if err != nil {
		return err
	}
	bases := map[string]bool{}
	for p := range files {
		rest := strings.TrimPrefix(p, render.GeneratedDir+"/")
		if rest == "kustomization.yaml" {
			bases[render.GeneratedDir] = true
		} else if cl, r, ok := strings.Cut(rest, "/"); ok && r == "kustomization.yaml" {
			bases[render.GeneratedBase(cl)] = true
		}
	}
	for _, b := range sortedKeys(bases) {
		if err := c.generatedBase(b); err != nil {
			return err
		}
	}
	return nil
}

// generatedBase checks that base/kustomization.yaml lists exactly the
// object files of base (publish/generated/<cluster>): the overlays are
// built from those files (render.Build), but the next incremental
// `publish run` splices that list, and a hand edit of it would stop the
// run.
func (c *checker) generatedBase(base string) error {
	kp := base + "/kustomization.yaml"
	data, ok, err := c.head.ReadFile(kp)
	if err != nil || !ok {
		return err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yamlUnmarshal(data, &k); err != nil {
		c.add(lint.Finding{Rule: RuleDrift, Path: kp, Line: 1, Message: "does not parse: " + err.Error() + " (it is written by publish: restore it from the catalog's Git history)"})
		return nil
	}
	files, err := c.head.Files(base, nil)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
		if _, ok := files[base+"/"+r]; !ok {
			c.add(lint.Finding{Rule: RuleDrift, Path: kp, Line: keyLine(data, "resources"), Message: fmt.Sprintf("lists %s, which %s does not hold (it is written by publish: restore it from the catalog's Git history)", r, base)})
		}
	}
	for _, p := range sortedKeys(files) {
		r := strings.TrimPrefix(p, base+"/")
		if strings.Count(r, "/") == 1 && !listed[r] {
			c.add(lint.Finding{Rule: RuleDrift, Path: kp, Line: keyLine(data, "resources"), Message: fmt.Sprintf("does not list %s (it is written by publish: restore it from the catalog's Git history)", r)})
		}
	}
	return nil
}

// firstDiff returns the first line (1-based) where a and b differ, and
// both lines (shortened).
func firstDiff(a, b []byte) (int, string, string) {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; ; i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y || i >= len(la) || i >= len(lb) {
			return i + 1, shorten(x), shorten(y)
		}
	}
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func union(a, b map[string][]byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string][]byte{a, b} {
		for p := range m {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// summary compares rendered/ of the base and of the checkout, and returns
// the clusters whose rendered/<cluster> the change removes (when no
// cluster was chosen).
func (c *checker) summary(ctx context.Context, clusters []Cluster, gitRoot string) ([]Cluster, error) {
	var base catalog.View
	switch {
	case gitRoot == "" || c.r.Head == "":
		c.r.BaseFrom = diff.FromNone
		c.warn("the catalog directory is not a Git checkout with a commit: no base, every rendered object counts as added")
	default:
		rev, from, err := c.baseRev(ctx, gitRoot)
		if err != nil {
			return nil, err
		}
		c.r.BaseFrom = from
		if rev != "" {
			t, err := catalog.OpenRev(gitRoot, c.r.Prefix, rev)
			if err != nil {
				if c.o.Base != "" {
					return nil, &FlagError{fmt.Errorf("--base %s: %w", c.o.Base, err)}
				}
				return nil, err
			}
			defer t.Close()
			c.r.Base = t.Head()
			base = t
		}
	}
	byName := map[string]*Cluster{}
	for i := range clusters {
		byName[clusters[i].Name] = &clusters[i]
	}
	var old map[string][]byte
	if base != nil {
		var err error
		if old, err = base.Files(render.RenderedDir, nil); err != nil {
			return nil, err
		}
	}
	now, err := c.head.Files(render.RenderedDir, nil)
	if err != nil {
		return nil, err
	}
	split := func(files map[string][]byte) map[string]map[string][]byte {
		out := map[string]map[string][]byte{}
		for p, data := range files {
			rest := strings.TrimPrefix(p, render.RenderedDir+"/")
			cl, _, ok := strings.Cut(rest, "/")
			if !ok {
				continue
			}
			if out[cl] == nil {
				out[cl] = map[string][]byte{}
			}
			out[cl][p] = data
		}
		return out
	}
	oldBy, nowBy := split(old), split(now)
	var gone []Cluster
	for _, name := range union(toBytes(oldBy), toBytes(nowBy)) {
		cl := byName[name]
		if cl == nil {
			if len(c.o.Clusters) > 0 {
				continue // a cluster not chosen (--cluster) is not summarised
			}
			// rendered/<cluster> exists at the base only.
			gone = append(gone, Cluster{Name: name, Skipped: "this change removes " + render.RenderedDir + "/" + name + ": Argo CD or Flux would prune every object of the cluster"})
			cl = &gone[len(gone)-1]
		}
		changes, other, deleted := compare(name, oldBy[name], nowBy[name])
		cl.Changes, cl.Other = changes, other
		for _, p := range deleted {
			c.add(lint.Finding{Rule: RuleDeleted, Severity: lint.Warning, Path: p,
				Message: "this change deletes " + p + ": Argo CD or Flux would prune the object from cluster " + name + " (publish delists with present: false and never deletes)",
				Hint:    "keep the file; to hide a version, delist it in the package repo"})
		}
	}
	return gone, nil
}

func toBytes(m map[string]map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for k := range m {
		out[k] = nil
	}
	return out
}

func (c *checker) warn(msg string) {
	c.r.Warnings = append(c.r.Warnings, msg)
	fmt.Fprintln(c.log, "warning: "+msg)
}

// baseRev resolves the base: --base; in pull-request mode the merge base
// with the target branch (diff.ResolveBase, as `publish plan`); else
// HEAD's first parent. "" with a warning when there is none.
func (c *checker) baseRev(ctx context.Context, gitRoot string) (rev, from string, err error) {
	if c.o.Base == "" && !c.o.PR {
		repo, err := git.PlainOpenWithOptions(gitRoot, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
		if err != nil {
			return "", "", err
		}
		cm, err := repo.CommitObject(plumbingHash(c.r.Head))
		if err != nil {
			return "", "", err
		}
		if len(cm.ParentHashes) == 0 {
			c.warn("HEAD has no parent and no --base was given: every rendered object counts as added")
			return "", diff.FromNone, nil
		}
		c.logf("check: base %s = HEAD's first parent (not a pull request; --base picks another)", cm.ParentHashes[0].String()[:12])
		return cm.ParentHashes[0].String(), "parent", nil
	}
	res, err := diff.ResolveBase(ctx, diff.Options{Repo: gitRoot, Base: c.o.Base, PR: c.o.PR, TargetBranch: c.o.TargetBranch, Fetch: c.o.Fetch, Getenv: c.o.Getenv, Log: c.log})
	if err != nil {
		return "", "", err
	}
	for _, w := range res.Warnings {
		c.r.Warnings = append(c.r.Warnings, strings.Replace(w, "every version counts as changed", "every rendered object counts as added", 1))
	}
	if res.All {
		if c.o.Base != "" {
			return "", "", &FlagError{fmt.Errorf("--base %s: %s", c.o.Base, strings.Join(res.Warnings, "; "))}
		}
		return "", res.BaseFrom, nil
	}
	return res.Base, res.BaseFrom, nil
}

// relPath is p without the rendered/<cluster>/ prefix.
func relPath(cluster, p string) string {
	return strings.TrimPrefix(p, path.Join(render.RenderedDir, cluster)+"/")
}
