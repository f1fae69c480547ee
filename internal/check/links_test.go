package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinkInRendered: a symbolic link committed in rendered/<cluster>
// (here to a file of the catalog that is no rendered object), or
// rendered/<cluster> itself a link, is what Argo CD or Flux would apply
// like any file, yet no render wrote it: check reports it, as it reports
// an extra file.
func TestLinkInRendered(t *testing.T) {
	c := newCatalog(t, "")
	c.write("kustomize/clusters/global/notes/crb.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: everyone-admin}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: Group, name: system:authenticated, apiGroup: rbac.authorization.k8s.io}]\n")
	link := "rendered/global/tiny/clusterrolebinding_everyone-admin.yaml"
	if err := os.Symlink("../../../kustomize/clusters/global/notes/crb.yaml", filepath.Join(c.dir, filepath.FromSlash(link))); err != nil {
		t.Fatal(err)
	}
	c.commitAll("a link in rendered/")
	hasLink := func(r *Report, p string) bool {
		for _, f := range r.Findings {
			if f.Path == p && strings.Contains(f.Message, "symbolic link") {
				return true
			}
		}
		return false
	}
	if r := c.check(Options{}); !hasLink(r, link) {
		t.Errorf("findings %+v, want one at %s naming the link (%s)", r.Findings, link, r.Text())
	}
	// rendered/<cluster> itself a link (to another cluster's files).
	c = newCatalog(t, "")
	if err := os.RemoveAll(filepath.Join(c.dir, "rendered/edge")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("global", filepath.Join(c.dir, "rendered/edge")); err != nil {
		t.Fatal(err)
	}
	if r := c.check(Options{}); !hasLink(r, "rendered/edge") || r.Errors() == 0 {
		t.Errorf("findings %+v, want an error at rendered/edge naming the link (%s)", r.Findings, r.Text())
	}
}
