package check

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
)

// The clusters of a catalog: which to check, and each re-rendered and
// compared with its rendered/<cluster>.

// renderedOffline reports whether the target that rendered the cluster,
// as its state file's render key tells (target.RenderedBy), can render it
// again from the catalog alone (target.Capabilities.RenderFromCatalog).
func (c *checker) renderedOffline(cluster string) bool {
	return target.RenderedBy(c.rendered[cluster]).Caps.RenderFromCatalog
}

// notOffline is why a cluster that only a run can render (the olm
// target's, the one target that cannot) is not re-rendered.
const notOffline = "rendered by the olm target (publish/state/): its CatalogSource names the catalog image by digest, which only a run that builds and pushes the image can render; not checked"

func subdirs(dir string) (map[string]bool, error) {
	out := map[string]bool{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() {
			out[e.Name()] = true
		}
	}
	return out, nil
}

// clusters decides which clusters to check and why the others are not.
func (c *checker) clusters() ([]Cluster, error) {
	overlays, err := subdirs(filepath.Join(c.dir, filepath.FromSlash(render.ClustersDir)))
	if err != nil {
		return nil, err
	}
	rendered, err := subdirs(filepath.Join(c.dir, render.RenderedDir))
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	if len(c.o.Clusters) > 0 {
		cat, err := c.catalog()
		if err != nil {
			return nil, err
		}
		for _, n := range c.o.Clusters {
			if err := render.CheckOverlay(cat, n); err != nil && !rendered[n] {
				return nil, &FlagError{fmt.Errorf("--cluster %s: the catalog at %s has neither %s/%s nor %s/%s", n, c.o.CatalogDir, render.ClustersDir, n, render.RenderedDir, n)}
			}
			names[n] = true
		}
	} else {
		for n := range overlays {
			names[n] = true
		}
		for n := range rendered {
			names[n] = true
		}
	}
	var out []Cluster
	for n := range names {
		cl := Cluster{Name: n}
		switch {
		case !c.renderedOffline(n):
			cl.Skipped = notOffline
		case !overlays[n]:
			cl.Skipped = fmt.Sprintf("no overlay %s/%s: not checked", render.ClustersDir, n)
			c.add(lint.Finding{Rule: RuleNoOverlay, Severity: lint.Warning, Path: render.RenderedDir + "/" + n,
				Message: fmt.Sprintf("%s/%s has no overlay %s/%s, so it cannot be re-rendered: not checked", render.RenderedDir, n, render.ClustersDir, n),
				Hint:    "restore the overlay, or leave rendered/" + n + " as it is while clusters still sync it"})
		case !rendered[n]:
			cl.Skipped = fmt.Sprintf("not rendered yet (no %s/%s): `publish run --cluster %s` renders it", render.RenderedDir, n, n)
		}
		out = append(out, cl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// cluster re-renders one cluster and compares and validates its files.
func (c *checker) cluster(cl *Cluster) error {
	before := len(c.r.Findings)
	defer func() {
		for _, f := range c.r.Findings[before:] {
			if f.Severity == lint.Error {
				cl.Problems++
			}
		}
	}()
	cl.Checked = true
	dir := render.RenderedDir + "/" + cl.Name
	have, err := c.head.Files(dir, nil)
	if err != nil {
		return err
	}
	cl.Files = len(have)
	c.validate(cl, have, "")
	cat, err := c.catalog()
	if err != nil {
		return err
	}
	want, err := render.Build(cat, cl.Name)
	if err != nil {
		var oe *render.OverlayError
		if !errors.As(err, &oe) {
			return err
		}
		c.add(lint.Finding{Rule: RuleOverlay, Path: overlayFile(c.dir, cl.Name), Message: err.Error(),
			Hint: "fix the overlay: `kustomize build " + render.ClustersDir + "/" + cl.Name + "` must build from " + render.GeneratedBase(cl.Name)})
		return nil
	}
	c.logf("check: %s: re-rendered %d files from %s through %s/%s", cl.Name, len(want), render.GeneratedBase(cl.Name), render.ClustersDir, cl.Name)
	hint := "render it again (`publish render --cluster " + cl.Name + "`, or the next `publish run`) instead of editing " + dir + " by hand"
	changed := render.Files{}
	for _, p := range union(have, want) {
		h, inHave := have[p]
		w, inWant := want[p]
		switch {
		case !inHave:
			changed[p] = w
			c.add(lint.Finding{Rule: RuleDrift, Path: p, Message: fmt.Sprintf("missing: %s/%s renders this file from %s, but %s lacks it (deleted by hand, or the overlay or the generated base changed without a render)", render.ClustersDir, cl.Name, render.GeneratedBase(cl.Name), dir), Hint: hint})
		case !inWant:
			c.add(lint.Finding{Rule: RuleDrift, Path: p, Line: 1, Message: fmt.Sprintf("extra: %s/%s does not render this file from %s (added by hand, or the overlay or the generated base changed without a render)", render.ClustersDir, cl.Name, render.GeneratedBase(cl.Name)), Hint: hint})
		case !bytes.Equal(h, w):
			changed[p] = w
			line, got, exp := firstDiff(h, w)
			c.add(lint.Finding{Rule: RuleDrift, Path: p, Line: line, Message: fmt.Sprintf("differs from what %s/%s renders from %s (a hand edit, or the overlay or the generated base changed without a render): line %d is %q, the render has %q", render.ClustersDir, cl.Name, render.GeneratedBase(cl.Name), line, got, exp), Hint: hint})
		}
	}
	// What the overlay would render, where it differs: an overlay patch
	// that sets a wrong type shows here even when rendered/ was not
	// updated.
	c.validate(cl, changed, fmt.Sprintf(" (as %s/%s renders it)", render.ClustersDir, cl.Name))
	return nil
}

// validate checks every Alauda object of files against the CRDs.
func (c *checker) validate(cl *Cluster, files render.Files, how string) {
	for _, p := range sortedKeys(files) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yamlUnmarshal(files[p], &head); err != nil {
			if how == "" {
				c.add(lint.Finding{Rule: RuleCRD, Path: p, Line: 1, Message: "not a Kubernetes object: " + err.Error()})
			}
			continue
		}
		if !c.v.Knows(head.APIVersion, head.Kind) {
			continue
		}
		if how == "" {
			cl.Objects++
		}
		if err := c.v.Validate(files[p]); err != nil {
			line := 1
			if how == "" {
				line = crdErrorLine(files[p], err)
			}
			c.add(lint.Finding{Rule: RuleCRD, Path: p, Line: line, Message: "the CRD rejects this object" + how + ": " + err.Error(),
				Hint: "the API server would refuse it, or drop the field: fix the overlay patch or the file"})
		}
	}
}

// overlayFile is the file of the overlay to annotate: its kustomization.
func overlayFile(root, cluster string) string {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		p := render.ClustersDir + "/" + cluster + "/" + n
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err == nil {
			return p
		}
	}
	return render.ClustersDir + "/" + cluster
}

// oddRendered reports every entry of rendered/ that is neither a
// directory nor a regular file: a symbolic link (rendered/<cluster> one,
// or a file below it) or anything else Git cannot hold as a file. The
// catalog is read without them (catalog.Dir), so no comparison sees
// them, yet Argo CD or Flux would apply what a link points to.
func (c *checker) oddRendered() error {
	root := filepath.Join(c.dir, render.RenderedDir)
	err := filepath.WalkDir(root, func(full string, e fs.DirEntry, err error) error {
		if err != nil {
			if full == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if e.IsDir() || e.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(c.dir, full)
		if err != nil {
			return err
		}
		p := filepath.ToSlash(rel)
		what := "not a regular file (" + e.Type().String() + ")"
		if e.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(full)
			what = fmt.Sprintf("a symbolic link (to %q)", target)
		}
		c.add(lint.Finding{Rule: RuleDrift, Path: p,
			Message: fmt.Sprintf("extra: %s; publish renders only regular files into %s, and Argo CD or Flux would apply what a link points to", what, render.RenderedDir),
			Hint:    "remove it (git rm " + p + ") and render again"})
		return nil
	})
	return err
}
