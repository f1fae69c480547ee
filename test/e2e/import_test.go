package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/testenv"
)

// importRBAC is the Role docs/after-sync.md gives `publish import`: get and
// list on the Alauda objects of the namespace, nothing else.
const importRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: publish-import, namespace: cpaas-system}
rules:
- apiGroups: [app.alauda.io]
  resources: [artifacts, artifactversions]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: publish-import, namespace: cpaas-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: publish-import}
subjects:
- {kind: ServiceAccount, name: publish-import, namespace: cpaas-system}
`

// TestImport is the story of a team that published tiny 1.0.0 and 1.1.0
// with violet and moves to publish: the real kube-apiserver with the
// Alauda CRDs holds the Artifact and ArtifactVersions as violet creates
// them (names <artifact>-<tag>, labels, ownerReferences, status
// Present/Success), the bundles are at the destination registry.
// `publish import`, as a service account with get and list only, commits
// the state and rendered objects and writes the PackageManifests; then
// `publish run` of the package repo renders no new ArtifactVersion name,
// and every rendered object matches the imported one field by field:
// applied as Argo CD / Flux apply it, nothing is created and no field
// violet set changes. Then the bad inputs: a catalog already published
// by run, a duplicate version (AlreadyAdd), an unreachable cluster.
func TestImport(t *testing.T) {
	shared := testenv.RequireShared(t)
	srv := startAPIServer(t)
	ctx := context.Background()
	k := srv.client(t)
	k.installAlaudaCRDs(t, ctx, shared)
	k.namespace(t, ctx, "cpaas-system")
	for _, u := range objects(t, "importRBAC", []byte(importRBAC)) {
		if err := k.apply(ctx, u, false); err != nil {
			t.Fatal(err)
		}
	}
	kc := srv.kubeconfig(t, "system:serviceaccount:cpaas-system:publish-import")

	e := newEnv(t)
	versions := []string{"1.0.0", "1.1.0"}
	for _, v := range versions {
		e.pushTiny(v)
		e.writeManifest("tiny", v, e.src.Ref("tiny/bundle:v"+v))
	}
	e.commit("tiny 1.0.0 and 1.1.0")
	// violet push: the images at the destination, under the mapping run
	// uses (--dst-registry <dst>/mirror).
	var images []string
	for _, v := range versions {
		for _, img := range []string{"tiny/manager:v" + v, "tiny/worker:v" + v, "tiny/bundle:v" + v} {
			images = append(images, "--image", e.src.Ref(img))
		}
	}
	if out, code := e.cli(append([]string{"mirror", "--dst-registry", e.dst.Host + "/mirror", "--ca-file", e.caFile,
		"--src-username", e.src.Username, "--dst-username", e.dst.Username}, images...)...); code != 0 {
		t.Fatalf("mirror: exit %d\n%s", code, out)
	}
	// violet's objects.
	art := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "app.alauda.io/v1alpha1", "kind": "Artifact",
		"metadata": map[string]any{"name": "tiny", "namespace": "cpaas-system", "labels": map[string]any{"cpaas.io/library": "platform"}},
		"spec": map[string]any{"type": "bundle", "present": true, "registry": e.dst.Host, "repository": "mirror/tiny/bundle",
			"displayName": "Tiny", "artifactVersionSelector": map[string]any{"matchLabels": map[string]any{"cpaas.io/artifact-version": "tiny"}}},
	}}
	// violet creates its objects (a create, its own field manager), so
	// that a server-side apply of the catalog owns none of their fields.
	violetCreate := metav1.CreateOptions{FieldManager: "violet"}
	live, err := k.dyn.Resource(artifactGVR).Namespace("cpaas-system").Create(ctx, art, violetCreate)
	if err != nil {
		t.Fatal(err)
	}
	violetAV := func(name, tag string) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "app.alauda.io/v1alpha1", "kind": "ArtifactVersion",
			"metadata": map[string]any{"name": name, "namespace": "cpaas-system",
				"labels":          map[string]any{"cpaas.io/artifact-version": "tiny", "cpaas.io/library": "platform"},
				"ownerReferences": []any{map[string]any{"apiVersion": "app.alauda.io/v1alpha1", "kind": "Artifact", "name": "tiny", "uid": string(live.GetUID())}}},
			"spec": map[string]any{"tag": tag, "present": true},
		}}
		ri := k.dyn.Resource(artifactVersionGVR).Namespace("cpaas-system")
		got, err := ri.Create(ctx, u, violetCreate)
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedMap(got.Object, map[string]any{"phase": "Present", "reason": "Success", "version": strings.TrimPrefix(tag, "v")}, "status")
		if _, err := ri.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range versions {
		violetAV("tiny-v"+v, "v"+v)
	}
	before := snapshot(t, k)

	manifests := filepath.Join(t.TempDir(), "packages")
	os.MkdirAll(manifests, 0o755)
	imp := func(catalogURL string, extra ...string) (string, int) {
		t.Helper()
		return e.cli(append([]string{"import", "--kubeconfig", kc, "--catalog", catalogURL, "--catalog-username", e.git.Username,
			"--ca-file", e.caFile, "--dst-username", e.dst.Username}, extra...)...)
	}

	t.Run("dry-run", func(t *testing.T) {
		out, code := imp(e.catalogURL, "--dry-run", "--manifests-dir", manifests)
		if code != 0 || !strings.Contains(out, "would import Artifact tiny (listed, "+e.dst.Host+"/mirror/tiny/bundle)") ||
			!strings.Contains(out, "tiny 1.1.0 tag v1.1.0 as ArtifactVersion tiny-v1.1.0 (listed)") ||
			!strings.Contains(out, "would write catalog publish/state/global.yaml") || !strings.Contains(out, "dry run: nothing written") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if n := len(e.branches(e.catalogURL)); n != 0 {
			t.Errorf("the dry run pushed %d branches", n)
		}
		if entries, _ := os.ReadDir(manifests); len(entries) != 0 {
			t.Errorf("the dry run wrote %v", entries)
		}
	})

	t.Run("import", func(t *testing.T) {
		out, code := imp(e.catalogURL, "--manifests-dir", manifests)
		if code != 0 || !strings.Contains(out, "commit ") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		t.Logf("%s", out)
		_, tree := e.catalog()
		state := fileIn(t, tree, "publish/state/global.yaml")
		for _, v := range versions {
			if !strings.Contains(state, "objectName: tiny-v"+v) {
				t.Errorf("the state does not record tiny-v%s:\n%s", v, state)
			}
			fileIn(t, tree, "rendered/global/tiny/artifactversion_tiny-v"+v+".yaml")
			p := filepath.Join(manifests, "tiny", v, "manifest.yaml")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			pm, err := manifest.Parse(p, data)
			if err != nil {
				t.Fatalf("%s does not parse: %v", p, err)
			}
			if want := e.dst.Host + "/mirror/tiny/bundle:v" + v; pm.Spec.Artifact != want || pm.Version.String() != v {
				t.Errorf("%s: spec.artifact %s version %s, want %s %s", p, pm.Spec.Artifact, pm.Version, want, v)
			}
		}
		// Nothing in the cluster changed.
		if after := snapshot(t, k); !reflect.DeepEqual(before, after) {
			t.Errorf("import changed the cluster:\n%v\n%v", before, after)
		}
		// Again: known, no commit.
		out, code = imp(e.catalogURL)
		if code != 0 || !strings.Contains(out, "known     Artifact tiny") || !strings.Contains(out, "no change: nothing committed") {
			t.Errorf("second import: exit %d\n%s", code, out)
		}
	})

	t.Run("run-adopts", func(t *testing.T) {
		if out, errOut, code := e.publish(); code != 0 {
			t.Fatalf("publish run: exit %d\n%s\n%s", code, out, errOut)
		}
		_, tree := e.catalog()
		rendered := map[string]*unstructured.Unstructured{}
		tree.Files().ForEach(func(f *object.File) error {
			if strings.HasPrefix(f.Name, "rendered/global/") {
				data, _ := f.Contents()
				for _, u := range objects(t, f.Name, []byte(data)) {
					rendered[u.GetKind()+"/"+u.GetName()] = u
				}
			}
			return nil
		})
		var names []string
		for n := range rendered {
			names = append(names, n)
		}
		sort.Strings(names)
		if want := []string{"Artifact/tiny", "ArtifactVersion/tiny-v1.0.0", "ArtifactVersion/tiny-v1.1.0"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("rendered %v, want the imported names %v", names, want)
		}
		// Field by field: every field the catalog renders has violet's
		// value; what it adds (none here) is listed.
		var added []string
		for n, u := range rendered {
			gvr := artifactGVR
			if u.GetKind() == "ArtifactVersion" {
				gvr = artifactVersionGVR
			}
			got, err := k.dyn.Resource(gvr).Namespace("cpaas-system").Get(ctx, u.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range fieldDiff("", u.Object, got.Object) {
				if d.missing {
					added = append(added, n+" "+d.path)
				} else {
					t.Errorf("%s: %s is %v in the cluster, the catalog renders %v", n, d.path, d.live, d.want)
				}
			}
		}
		// The only field ours adds: the description, which run takes from
		// the CSV when the manifest has none (violet set none).
		sort.Strings(added)
		if want := []string{"Artifact/tiny .spec.description"}; !reflect.DeepEqual(added, want) {
			t.Errorf("the catalog adds %v to violet's objects, want only %v", added, want)
		}
		// Applied as the engines apply it: nothing new, nothing violet set
		// changes, only the added fields appear.
		for _, u := range rendered {
			if err := k.apply(ctx, u, false); err != nil {
				t.Fatal(err)
			}
		}
		after := snapshot(t, k)
		if a, ok := after["Artifact/tiny"]; ok {
			if desc, _, _ := unstructured.NestedString(a, "spec", "description"); desc == "" {
				t.Error("the applied Artifact has no description")
			}
			unstructured.RemoveNestedField(a, "spec", "description")
		}
		if !reflect.DeepEqual(before, after) {
			t.Errorf("applying the catalog changed the cluster beyond the added fields:\nbefore %v\nafter  %v", before, after)
		}

		// A later run (the incremental way: only tiny is read again) keeps
		// the imported names and names the new version itself.
		e.pushTiny("1.2.0")
		e.writeManifest("tiny", "1.2.0", e.src.Ref("tiny/bundle:v1.2.0"))
		e.commit("tiny 1.2.0")
		if out, errOut, code := e.publish(); code != 0 || strings.Contains(errOut, "reading the whole package repo") {
			t.Fatalf("publish run: exit %d\n%s\n%s", code, out, errOut)
		}
		_, tree = e.catalog()
		for _, n := range []string{"tiny-v1.0.0", "tiny-v1.1.0", "tiny.v1.2.0"} {
			fileIn(t, tree, "rendered/global/tiny/artifactversion_"+n+".yaml")
		}
		if _, err := tree.File("rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"); err == nil {
			t.Error("the incremental run renamed an imported ArtifactVersion")
		}
	})

	t.Run("already-published", func(t *testing.T) {
		// A catalog that run published first names tiny.v1.0.0: import
		// refuses, saying what differs.
		url := e.git.NewBareRepo(t, "published")
		if out, errOut, code := e.publish("--catalog", url); code != 0 {
			t.Fatalf("publish run: exit %d\n%s\n%s", code, out, errOut)
		}
		head := e.branches(url)
		out, code := imp(url)
		if code != 1 || !strings.Contains(out, "already in the catalog's state of this cluster") || !strings.Contains(out, "tag v1.0.0 is ArtifactVersion tiny-v1.0.0 in the cluster, tiny.v1.0.0 in the catalog") {
			t.Errorf("exit %d\n%s", code, out)
		}
		if !reflect.DeepEqual(head, e.branches(url)) {
			t.Error("import committed to a catalog it refused")
		}
	})

	t.Run("duplicate", func(t *testing.T) {
		violetAV("tiny-v1.1.0-again", "v1.1.0")
		ri := k.dyn.Resource(artifactVersionGVR).Namespace("cpaas-system")
		got, _ := ri.Get(ctx, "tiny-v1.1.0-again", metav1.GetOptions{})
		unstructured.SetNestedMap(got.Object, map[string]any{"phase": "Pending", "reason": "AlreadyAdd", "version": "1.1.0"}, "status")
		if _, err := ri.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		url := e.git.NewBareRepo(t, "duplicate")
		out, code := imp(url, "--manifests-dir", t.TempDir())
		if code != 1 || !strings.Contains(out, "tiny-v1.1.0 holds it: delete the others (kubectl -n cpaas-system delete artifactversion tiny-v1.1.0-again)") {
			t.Errorf("exit %d\n%s", code, out)
		}
		if n := len(e.branches(url)); n != 0 {
			t.Error("import committed with a conflict")
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		// A server that accepts connections and closes them at once.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		bad := filepath.Join(t.TempDir(), "kubeconfig")
		os.WriteFile(bad, []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster: {server: 'https://%s', insecure-skip-tls-verify: true}\nusers:\n- name: x\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: x, user: x}\ncurrent-context: x\n", l.Addr())), 0o600)
		out, code := e.cli("import", "--kubeconfig", bad, "--catalog", e.catalogURL)
		if code != 2 || !strings.Contains(out, "cannot be reached") || !strings.Contains(out, "--kubeconfig") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
}

// cli runs the binary with args and the world's secrets in the
// environment; it returns stdout and stderr together, and the exit code.
func (e *env) cli(args ...string) (string, int) {
	e.t.Helper()
	cmd := exec.Command(publishBin, args...)
	cmd.Env = append(os.Environ(),
		"PUBLISH_SRC_PASSWORD="+e.src.Password,
		"PUBLISH_DST_PASSWORD="+e.dst.Password,
		"PUBLISH_CATALOG_PASSWORD="+e.git.Password,
		"DOCKER_CONFIG="+e.t.TempDir(),
	)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	for _, secret := range []string{e.src.Password, e.dst.Password, e.git.Password} {
		if strings.Contains(b.String(), secret) {
			e.t.Fatalf("publish printed a password:\n%s", b.String())
		}
	}
	return b.String(), code
}

// branches lists the branches of the catalog repo url and their commits.
func (e *env) branches(url string) map[string]string {
	e.t.Helper()
	r := git.NewRemote(memStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := r.List(&git.ListOptions{Auth: &githttp.BasicAuth{Username: e.git.Username, Password: e.git.Password}})
	out := map[string]string{}
	if err != nil {
		if strings.Contains(err.Error(), "remote repository is empty") {
			return out
		}
		e.t.Fatal(err)
	}
	for _, ref := range refs {
		if ref.Name().IsBranch() {
			out[ref.Name().String()] = ref.Hash().String()
		}
	}
	return out
}

// snapshot is every Artifact and ArtifactVersion of cpaas-system by name:
// labels, ownerReferences, spec and status (not the managed fields and
// resource version an apply that changes nothing still updates).
func snapshot(t *testing.T, k *kube) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, kv := range []struct {
		kind string
		list func() (*unstructured.UnstructuredList, error)
	}{
		{"Artifact", func() (*unstructured.UnstructuredList, error) {
			return k.dyn.Resource(artifactGVR).Namespace("cpaas-system").List(context.Background(), metav1.ListOptions{})
		}},
		{"ArtifactVersion", func() (*unstructured.UnstructuredList, error) {
			return k.dyn.Resource(artifactVersionGVR).Namespace("cpaas-system").List(context.Background(), metav1.ListOptions{})
		}},
	} {
		l, err := kv.list()
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range l.Items {
			// Through YAML: comparable maps of plain values.
			data, _ := yaml.Marshal(map[string]any{"labels": u.GetLabels(), "owners": u.GetOwnerReferences(), "spec": u.Object["spec"], "status": u.Object["status"]})
			var m map[string]any
			if err := yaml.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			out[kv.kind+"/"+u.GetName()] = m
		}
	}
	return out
}

// fieldDiffEntry is one field the catalog renders that the live object
// lacks (missing) or holds with another value.
type fieldDiffEntry struct {
	path       string
	missing    bool
	want, live any
}

// fieldDiff compares every leaf of want (a rendered object) with live.
func fieldDiff(path string, want, live any) []fieldDiffEntry {
	wm, ok := want.(map[string]any)
	if !ok {
		if live == nil {
			return []fieldDiffEntry{{path: path, missing: true, want: want}}
		}
		if !reflect.DeepEqual(want, live) {
			return []fieldDiffEntry{{path: path, want: want, live: live}}
		}
		return nil
	}
	lm, _ := live.(map[string]any)
	var out []fieldDiffEntry
	for k, v := range wm {
		var lv any
		if lm != nil {
			lv = lm[k]
		}
		out = append(out, fieldDiff(path+"."+k, v, lv)...)
	}
	return out
}
