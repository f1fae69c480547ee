package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinkInRendered: a symbolic link committed in rendered/<cluster>
// (here to a file of the catalog that is no rendered object) is what
// Argo CD or Flux would apply like any file, yet no render wrote it:
// check reports it, as it reports an extra file.
func TestLinkInRendered(t *testing.T) {
	c := newCatalog(t, "")
	c.write("kustomize/clusters/global/notes/crb.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: everyone-admin}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: Group, name: system:authenticated, apiGroup: rbac.authorization.k8s.io}]\n")
	link := "rendered/global/tiny/clusterrolebinding_everyone-admin.yaml"
	if err := os.Symlink("../../../kustomize/clusters/global/notes/crb.yaml", filepath.Join(c.dir, filepath.FromSlash(link))); err != nil {
		t.Fatal(err)
	}
	c.commitAll("a link in rendered/")
	r := c.check(Options{})
	for _, f := range r.Findings {
		if f.Path == link && strings.Contains(f.Message, "link") {
			return
		}
	}
	t.Errorf("findings %+v, want one at %s naming the link (%s)", r.Findings, link, r.Text())
}
