package check

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/crdcheck"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
)

const globalOverlay = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../../publish/generated/global\n"

// edgeOverlay renames the registry for the edge cluster.
const edgeOverlay = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../../publish/generated/edge\n" + "patches:\n- target: {kind: Artifact}\n  patch: |-\n    - op: replace\n      path: /spec/registry\n      value: registry.edge.example.com\n"

func version(v string, present bool) model.VersionRecord {
	return model.VersionRecord{Version: v, Tag: "v" + v, Present: present}
}

func records(tiny ...model.VersionRecord) []model.ArtifactRecord {
	return []model.ArtifactRecord{
		{Name: "other", Present: true, Registry: "reg.example.com", Repository: "ops/other-bundle", DisplayName: "Other", Versions: []model.VersionRecord{version("2.0.0", true)}},
		{Name: "tiny", Present: true, Registry: "reg.example.com", Repository: "ops/tiny-bundle", DisplayName: "Tiny", Versions: tiny},
	}
}

// catalogRepo is a Git repo holding a catalog below prefix ("" for the
// root), rendered for global and edge as publish renders it, and an olm
// cluster recorded in the state.
type catalogRepo struct {
	t      *testing.T
	root   string // the repo
	dir    string // the catalog
	repo   *git.Repository
	commit []plumbing.Hash
}

func newCatalog(t *testing.T, prefix string) *catalogRepo {
	t.Helper()
	c := &catalogRepo{t: t, root: t.TempDir()}
	c.dir = filepath.Join(c.root, filepath.FromSlash(prefix))
	var err error
	if c.repo, err = git.PlainInit(c.root, false); err != nil {
		t.Fatal(err)
	}
	c.write("kustomize/clusters/global/kustomization.yaml", globalOverlay)
	c.write("kustomize/clusters/edge/kustomization.yaml", edgeOverlay)
	c.write("rendered/olmc/catalogsource.yaml", "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nmetadata: {name: publish, namespace: olm}\nspec: {sourceType: grpc, image: reg.example.com/olm/publish-catalog@sha256:"+strings.Repeat("a", 64)+"}\n")
	c.publish(records(version("1.0.0", true), version("1.1.0", true)), "publish 1")
	return c
}

func (c *catalogRepo) write(p, data string) {
	c.t.Helper()
	full := filepath.Join(c.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *catalogRepo) read(p string) string {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(p)))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(data)
}

// publish renders arts for global and edge, as publish run does, writes
// the state and commits.
func (c *catalogRepo) publish(arts []model.ArtifactRecord, msg string) {
	c.t.Helper()
	keys := map[string]string{"olmc": "olm reg.example.com/olm/publish-catalog@sha256:" + strings.Repeat("a", 64)}
	for _, cl := range []string{"global", "edge"} {
		key, err := target.RenderIntoDir(c.dir, cl, render.Config{}, arts, "")
		if err != nil {
			c.t.Fatal(err)
		}
		keys[cl] = key
	}
	for cl, key := range keys {
		st := &gitops.State{Artifacts: arts, Rendered: map[string]string{cl: key}}
		data, err := st.Marshal()
		if err != nil {
			c.t.Fatal(err)
		}
		c.write(gitops.StatePath(cl), string(data))
	}
	c.commitAll(msg)
}

func (c *catalogRepo) commitAll(msg string) {
	c.t.Helper()
	wt, err := c.repo.Worktree()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		c.t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000+int64(len(c.commit)), 0)}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, AllowEmptyCommits: true})
	if err != nil {
		c.t.Fatal(err)
	}
	c.commit = append(c.commit, h)
}

func (c *catalogRepo) check(o Options) *Report {
	c.t.Helper()
	o.CatalogDir = c.dir
	o.Getenv = func(string) string { return "" }
	r, err := Run(context.Background(), o)
	if err != nil {
		c.t.Fatalf("check: %v", err)
	}
	return r
}

func findings(r *Report, rule string) []lint.Finding {
	var out []lint.Finding
	for _, f := range r.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

// oneFinding fails unless r has exactly one error, of rule at path.
func oneFinding(t *testing.T, r *Report, rule, path, says string) lint.Finding {
	t.Helper()
	if r.Errors() != 1 {
		t.Fatalf("%d errors, want 1: %+v", r.Errors(), r.Findings)
	}
	fs := findings(r, rule)
	if len(fs) != 1 || fs[0].Path != path || fs[0].Severity != lint.Error || !strings.Contains(fs[0].Message, says) {
		t.Fatalf("findings %+v, want one %s error at %s saying %q", r.Findings, rule, path, says)
	}
	return fs[0]
}

func TestCleanCatalog(t *testing.T) {
	c := newCatalog(t, "")
	r := c.check(Options{})
	if r.Errors() != 0 || len(r.Findings) != 0 {
		t.Fatalf("findings on a clean catalog: %+v", r.Findings)
	}
	got := map[string]Cluster{}
	for _, cl := range r.Clusters {
		got[cl.Name] = cl
	}
	for _, n := range []string{"global", "edge"} {
		if cl := got[n]; !cl.Checked || cl.Files != 5 || cl.Objects != 5 || cl.Problems != 0 {
			t.Errorf("cluster %s: %+v, want checked, 5 files and objects", n, cl)
		}
	}
	if cl := got["olmc"]; cl.Checked || !strings.Contains(cl.Skipped, "olm target") {
		t.Errorf("olm cluster: %+v, want not checked because of the olm target", cl)
	}
	if r.BaseFrom != "none" || r.Base != "" {
		t.Errorf("first commit: base %q from %q, want none", r.Base, r.BaseFrom)
	}
	if !strings.Contains(r.Text(), "check ok") || !strings.Contains(r.Markdown(), "**check ok**") {
		t.Errorf("report:\n%s\n%s", r.Text(), r.Markdown())
	}
	// Only the chosen cluster.
	r = c.check(Options{Clusters: []string{"edge"}})
	if len(r.Clusters) != 1 || r.Clusters[0].Name != "edge" || !r.Clusters[0].Checked {
		t.Errorf("--cluster edge: %+v", r.Clusters)
	}
	if _, err := Run(context.Background(), Options{CatalogDir: c.dir, Clusters: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "--cluster nope") {
		t.Errorf("unknown cluster: %v", err)
	}
}

// TestNotChecked: a cluster that is not re-rendered (here the olm
// cluster) is named in the verdict beside the ones that were; when no
// cluster at all is re-rendered, the report says that nothing was checked
// and never "check ok".
func TestNotChecked(t *testing.T) {
	c := newCatalog(t, "")
	r := c.check(Options{})
	if r.Checked() != 2 {
		t.Errorf("%d clusters checked, want 2", r.Checked())
	}
	for _, s := range []string{r.Text(), r.Markdown()} {
		if !strings.Contains(s, "check ok") || !strings.Contains(s, "not checked: olmc") {
			t.Errorf("report of 2 checked clusters and an olm one:\n%s", s)
		}
	}
	r = c.check(Options{Clusters: []string{"olmc"}})
	if r.Checked() != 0 {
		t.Errorf("%d clusters checked, want 0", r.Checked())
	}
	for _, s := range []string{r.Text(), r.Markdown()} {
		if strings.Contains(s, "check ok") || !strings.Contains(s, "nothing checked") || !strings.Contains(s, "olmc") {
			t.Errorf("report of an olm cluster alone:\n%s", s)
		}
	}
}

func TestHandEdit(t *testing.T) {
	c := newCatalog(t, "")
	p := "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"
	c.write(p, strings.Replace(c.read(p), "tag: v1.0.0", "tag: v1.0.1", 1))
	f := oneFinding(t, c.check(Options{}), RuleDrift, p, "differs from what kustomize/clusters/global renders")
	if lines := strings.Split(c.read(p), "\n"); f.Line < 1 || !strings.Contains(lines[f.Line-1], "v1.0.1") {
		t.Errorf("finding at line %d, want the edited line", f.Line)
	}
}

func TestMissingAndExtraFile(t *testing.T) {
	c := newCatalog(t, "")
	gone := "rendered/edge/tiny/artifactversion_tiny.v1.1.0.yaml"
	os.Remove(filepath.Join(c.dir, gone))
	oneFinding(t, c.check(Options{}), RuleDrift, gone, "missing")

	c = newCatalog(t, "")
	extra := "rendered/global/tiny/artifactversion_tiny.v9.0.0.yaml"
	c.write(extra, strings.ReplaceAll(c.read("rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"), "1.0.0", "9.0.0"))
	oneFinding(t, c.check(Options{}), RuleDrift, extra, "extra")
}

func TestBrokenOverlay(t *testing.T) {
	c := newCatalog(t, "")
	c.write("kustomize/clusters/edge/kustomization.yaml", strings.Replace(globalOverlay, "generated/global", "generated/edge", 1)+"- ../missing-base\n")
	r := c.check(Options{})
	oneFinding(t, r, RuleOverlay, "kustomize/clusters/edge/kustomization.yaml", "kustomize build")
	for _, cl := range r.Clusters {
		if cl.Name == "edge" && cl.Problems != 1 || cl.Name == "global" && cl.Problems != 0 {
			t.Errorf("cluster %s: %d problems", cl.Name, cl.Problems)
		}
	}
}

// TestCRDRejects: an overlay patch that sets a wrong type is found twice,
// at the file: the render differs from rendered/, and the object the
// overlay renders fails its CRD; a hand edit that does the same fails the
// CRD at its line.
func TestCRDRejects(t *testing.T) {
	c := newCatalog(t, "")
	c.write("kustomize/clusters/global/kustomization.yaml", globalOverlay+"patches:\n- target: {kind: ArtifactVersion, name: tiny.v1.0.0}\n  patch: |-\n    - op: replace\n      path: /spec/present\n      value: maybe\n")
	r := c.check(Options{})
	p := "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"
	crd := findings(r, RuleCRD)
	if len(crd) != 1 || crd[0].Path != p || !strings.Contains(crd[0].Message, "as kustomize/clusters/global renders it") || !strings.Contains(crd[0].Message, "present") {
		t.Errorf("CRD findings %+v, want one at %s", crd, p)
	}
	if d := findings(r, RuleDrift); len(d) != 1 || d[0].Path != p {
		t.Errorf("drift findings %+v, want one at %s", d, p)
	}

	c = newCatalog(t, "")
	c.write(p, strings.Replace(c.read(p), "present: true", "present: maybe", 1))
	r = c.check(Options{})
	crd = findings(r, RuleCRD)
	if len(crd) != 1 || crd[0].Path != p || crd[0].Severity != lint.Error {
		t.Fatalf("CRD findings %+v, want one at %s", crd, p)
	}
	if lines := strings.Split(c.read(p), "\n"); !strings.Contains(lines[crd[0].Line-1], "present: maybe") {
		t.Errorf("CRD finding at line %d (%q), want the present line", crd[0].Line, lines[crd[0].Line-1])
	}
}

// TestSummary: a change that adds a version and delists another names
// both, on each cluster; the base is HEAD's parent, --base, or the merge
// base with the target branch in pull-request mode. Findings and the
// summary name files from the repo root when the catalog is below it.
func TestSummary(t *testing.T) {
	c := newCatalog(t, "catalog")
	wt, _ := c.repo.Worktree()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("feature"), Create: true}); err != nil {
		t.Fatal(err)
	}
	c.publish(records(version("1.0.0", false), version("1.1.0", true), version("1.2.0", true)), "publish 2")
	want := []VersionChange{{Version: "v1.0.0", Action: Delisted}, {Version: "v1.2.0", Action: Listed}}
	for name, o := range map[string]Options{
		"parent": {},
		"flag":   {Base: c.commit[0].String()},
		"pr":     {PR: true, TargetBranch: "master"},
	} {
		r := c.check(o)
		if r.Errors() != 0 || r.Base != c.commit[0].String() || r.Prefix != "catalog" {
			t.Fatalf("%s: base %s (%s), prefix %q, findings %+v", name, r.Base, r.BaseFrom, r.Prefix, r.Findings)
		}
		for _, cl := range r.Clusters {
			switch cl.Name {
			case "global", "edge":
				if len(cl.Changes) != 1 || cl.Changes[0].Artifact != "tiny" || cl.Changes[0].Action != "" || !equalVersions(cl.Changes[0].Versions, want) {
					t.Errorf("%s: cluster %s changes %+v, want tiny %+v", name, cl.Name, cl.Changes, want)
				}
			default:
				if len(cl.Changes) != 0 || len(cl.Other) != 0 {
					t.Errorf("%s: cluster %s changed: %+v %+v", name, cl.Name, cl.Changes, cl.Other)
				}
			}
		}
		for _, s := range []string{"global: tiny: v1.0.0 delisted, v1.2.0 listed", "edge: tiny: v1.0.0 delisted, v1.2.0 listed", "olmc: no change"} {
			if !strings.Contains(r.Text(), s) {
				t.Errorf("%s: text lacks %q:\n%s", name, s, r.Text())
			}
		}
		if md := r.Markdown(); !strings.Contains(md, "#### `edge`") || !strings.Contains(md, "| `tiny` | — | `v1.0.0` delisted, `v1.2.0` listed |") {
			t.Errorf("%s: markdown:\n%s", name, md)
		}
	}

	// A deleted object is a warning; a hand edit is found at its path
	// from the repo root.
	p := "rendered/edge/tiny/artifactversion_tiny.v1.0.0.yaml"
	os.Remove(filepath.Join(c.dir, p))
	c.write("rendered/global/other/artifact_other.yaml", strings.Replace(c.read("rendered/global/other/artifact_other.yaml"), "displayName: Other", "displayName: Changed", 1))
	r := c.check(Options{})
	t.Logf("text:\n%s\nmarkdown:\n%s", r.Text(), r.Markdown())
	if d := findings(r, RuleDeleted); len(d) != 1 || d[0].Path != "catalog/"+p || d[0].Severity != lint.Warning {
		t.Errorf("deleted: %+v", d)
	}
	if d := findings(r, RuleDrift); len(d) != 2 || d[0].Path != "catalog/rendered/edge/tiny/artifactversion_tiny.v1.0.0.yaml" || d[1].Path != "catalog/rendered/global/other/artifact_other.yaml" {
		t.Errorf("drift: %+v", d)
	}
	for _, cl := range r.Clusters {
		if cl.Name == "global" && (len(cl.Changes) != 2 || cl.Changes[0].Artifact != "other" || cl.Changes[0].Action != Changed || strings.Join(cl.Changes[0].Fields, ",") != "spec.displayName") {
			t.Errorf("global changes %+v, want other's displayName changed", cl.Changes)
		}
	}
}

func equalVersions(a, b []VersionChange) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Version != b[i].Version || a[i].Action != b[i].Action || len(a[i].Fields) != 0 {
			return false
		}
	}
	return true
}

func TestGeneratedKustomization(t *testing.T) {
	c := newCatalog(t, "")
	k := c.read(render.GeneratedKustomization("global"))
	c.write(render.GeneratedKustomization("global"), strings.Replace(k, "- tiny/artifactversion_tiny.v1.0.0.yaml\n", "", 1))
	f := oneFinding(t, c.check(Options{}), RuleDrift, render.GeneratedKustomization("global"), "does not list tiny/artifactversion_tiny.v1.0.0.yaml")
	if f.Line < 2 {
		t.Errorf("line %d, want the resources line", f.Line)
	}
}

func TestBadState(t *testing.T) {
	c := newCatalog(t, "")
	c.write(gitops.StatePath("edge"), "apiVersion: nope\n")
	oneFinding(t, c.check(Options{}), RuleState, gitops.StatePath("edge"), "edge.yaml")
}

// TestClusterRemoved: a change that removes a whole rendered/<cluster>
// says so, with a warning at each file.
func TestClusterRemoved(t *testing.T) {
	c := newCatalog(t, "")
	os.RemoveAll(filepath.Join(c.dir, "rendered/edge"))
	os.RemoveAll(filepath.Join(c.dir, "kustomize/clusters/edge"))
	c.commitAll("drop edge")
	r := c.check(Options{})
	if r.Errors() != 0 || len(findings(r, RuleDeleted)) != 5 {
		t.Fatalf("findings %+v, want 5 deletion warnings", r.Findings)
	}
	var edge *Cluster
	for i := range r.Clusters {
		if r.Clusters[i].Name == "edge" {
			edge = &r.Clusters[i]
		}
	}
	if edge == nil || edge.Checked || !strings.Contains(edge.Skipped, "removes rendered/edge") || len(edge.Changes) != 2 {
		t.Fatalf("edge: %+v", edge)
	}
	if !strings.Contains(r.Text(), "edge: tiny: artifact removed; v1.0.0 removed, v1.1.0 removed") {
		t.Errorf("text:\n%s", r.Text())
	}
}

// TestCRDErrorLine: a CRD finding is at the line of the first field the
// validator names, here one in the second item of a list; at line 1 when
// the error names no field of the file.
func TestCRDErrorLine(t *testing.T) {
	v, err := crdcheck.Alauda()
	if err != nil {
		t.Fatal(err)
	}
	obj := `apiVersion: app.alauda.io/v1alpha1
kind: Artifact
metadata:
  name: tiny
  namespace: ns
spec:
  present: true
  type: bundle
  registry: reg.example.com
  repository: ops/tiny-bundle
  artifactVersionSelector: {}
  tagPatterns:
  - name: a
    regex: x
    maxQuantity: 1
  - name: 2
    regex: y
    maxQuantity: 1
`
	err = v.Validate([]byte(obj))
	if err == nil {
		t.Fatal("name: 2 accepted")
	}
	if l := crdErrorLine([]byte(obj), err); l != 16 {
		t.Errorf("line %d, want 16 (spec.tagPatterns[1].name): %v", l, err)
	}
	if l := crdErrorLine([]byte(obj), errors.New("spec.present: no")); l != 1 {
		t.Errorf("line %d for an error that is no *ObjectError, want 1", l)
	}
}
