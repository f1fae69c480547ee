package e2e

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/testenv"
)

// FluxVersion is the version of Flux's source-controller and
// kustomize-controller that hack/flux/build.sh builds and these tests run.
const FluxVersion = "v1.9.6"

var (
	gitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	ociRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
	kustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// fluxDir is $PUBLISH_FLUX, else the directory hack/flux/build.sh caches
// (~/.cache/operator-publish/flux/<FluxVersion>): source-controller,
// kustomize-controller and crds/. Missing: skip, or fail when integration
// tests are required.
func fluxDir(t *testing.T) string {
	t.Helper()
	testenv.Short(t, "integration test")
	d := os.Getenv("PUBLISH_FLUX")
	if d == "" {
		if c, err := os.UserCacheDir(); err == nil {
			d = filepath.Join(c, "operator-publish", "flux", FluxVersion)
		}
	}
	for _, p := range []string{"source-controller", "kustomize-controller", "crds"} {
		if _, err := os.Stat(filepath.Join(d, p)); err != nil || d == "" {
			testenv.Skipf(t, "this test needs Flux's source-controller and kustomize-controller %s: run hack/flux/build.sh (it caches them in ~/.cache/operator-publish/flux), or set PUBLISH_FLUX to the directory it prints", FluxVersion)
		}
	}
	return d
}

// startFlux installs the Flux CRDs of dir/crds into the API server and runs
// source-controller and kustomize-controller against it, as the admin,
// with leader election off and every listener (metrics, health probes,
// source-controller's artifact server) on a loopback port that was free a
// moment ago; a controller that reports the address in use is started again
// on fresh ports. Both are stopped at cleanup. It returns once both
// controllers answer their readiness probe (and source-controller's
// artifact server serves), with the number of times source-controller was
// started. taken, when not 0, is the artifact server's port at the first
// start (a port another process holds, to take the restart path).
func startFlux(t *testing.T, ctx context.Context, srv *apiServer, k *kube, taken int) (sourceStarts int) {
	t.Helper()
	dir := fluxDir(t)
	k.installCRDs(t, ctx, filepath.Join(dir, "crds"))
	k.namespace(t, ctx, "flux-system")
	env := []string{"KUBECONFIG=" + srv.kubeconfig(t, ""), "RUNTIME_NAMESPACE=flux-system"}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	// The artifact server is a plain file server of the storage path: a
	// marker file there, served back, says the server on that port is ours.
	storage := t.TempDir()
	marker := make([]byte, 16)
	rand.Read(marker)
	markerName := "ready-" + hex.EncodeToString(marker)
	if err := os.WriteFile(filepath.Join(storage, markerName), marker, 0o644); err != nil {
		t.Fatal(err)
	}
	get := func(ctx context.Context, url string) ([]byte, bool) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b, resp.StatusCode == http.StatusOK
	}
	var health, artifacts string
	startOnFreePorts(ctx, t, "source-controller", 3, func(attempt int, ports []int) *process {
		sourceStarts = attempt
		if attempt == 1 && taken != 0 {
			ports[2] = taken
		}
		health = fmt.Sprintf("127.0.0.1:%d", ports[1])
		artifacts = fmt.Sprintf("127.0.0.1:%d", ports[2])
		return startProcessEnv(t, env, filepath.Join(dir, "source-controller"),
			"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]),
			"--health-addr", health,
			"--storage-addr", artifacts, "--storage-adv-addr", artifacts,
			"--storage-path", storage,
			"--enable-leader-election=false",
			"--log-level", "debug")
	}, func(ctx context.Context) (bool, error) {
		if _, ok := get(ctx, "http://"+health+"/readyz"); !ok {
			return false, nil
		}
		b, ok := get(ctx, "http://"+artifacts+"/"+markerName)
		return ok && string(b) == string(marker), nil
	})
	startOnFreePorts(ctx, t, "kustomize-controller", 2, func(_ int, ports []int) *process {
		health = fmt.Sprintf("127.0.0.1:%d", ports[1])
		return startProcessEnv(t, env, filepath.Join(dir, "kustomize-controller"),
			"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]),
			"--health-addr", health,
			"--enable-leader-election=false",
			"--log-level", "debug")
	}, func(ctx context.Context) (bool, error) {
		_, ok := get(ctx, "http://"+health+"/readyz")
		return ok, nil
	})
	t.Logf("Flux %s: source-controller (artifacts on %s) and kustomize-controller running", FluxVersion, artifacts)
	return sourceStarts
}

// fluxTemplate renders the catalog template's own Flux objects
// (catalog-repo-template/<dir>/*.yaml, as the catalog repo carries them)
// through a kustomization a user would write beside them, with patches
// (the YAML list of its patches field): the test's patches point the
// source at the test server with its credentials and change nothing else.
func fluxTemplate(t *testing.T, dir, patches string) []*unstructured.Unstructured {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	entries, err := os.ReadDir("../../catalog-repo-template/" + dir)
	if err != nil {
		t.Fatal(err)
	}
	var resources []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join("../../catalog-repo-template", dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fs.WriteFile("/flux/"+e.Name(), data)
		resources = append(resources, "flux/"+e.Name())
	}
	patch := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\npatches:%s", strings.Join(resources, ", "), patches)
	fs.WriteFile("/kustomization.yaml", []byte(patch))
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/")
	if err != nil {
		t.Fatalf("kustomize build of the template's Flux objects: %v", err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return objects(t, "flux/", out)
}

// requestReconcile sets reconcile.fluxcd.io/requestedAt on the object, as
// `flux reconcile` does: the controller reconciles it now, whatever its
// interval. It returns the annotation's value, which the controller copies
// to status.lastHandledReconcileAt once it has handled the request.
func (k *kube) requestReconcile(t *testing.T, ctx context.Context, gvr schema.GroupVersionResource, ns, name string) string {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, token)
	if _, err := k.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotating %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return token
}

// readyCondition returns the status and message of the Ready condition of
// a Flux object.
func readyCondition(u *unstructured.Unstructured) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "", ""
}

// waitApplied watches the Kustomization ns/name until it is Ready with
// status.lastAppliedRevision equal to revision (Flux's "main@sha1:<commit>"),
// and fails t with the last status seen when ctx ends first.
func (k *kube) waitApplied(t *testing.T, ctx context.Context, ns, name, revision string) {
	t.Helper()
	if _, err := k.waitKustomization(ctx, ns, name, func(u *unstructured.Unstructured) bool {
		applied, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		status, _ := readyCondition(u)
		return status == "True" && applied == revision
	}); err != nil {
		src, _ := k.dyn.Resource(gitRepositoryGVR).Namespace(ns).Get(context.Background(), "operator-catalog", metav1.GetOptions{})
		var srcState string
		if src != nil {
			s, m := readyCondition(src)
			rev, _, _ := unstructured.NestedString(src.Object, "status", "artifact", "revision")
			srcState = fmt.Sprintf("Ready=%s (%s), artifact %q", s, m, rev)
		}
		t.Fatalf("Kustomization %s/%s did not apply %s: %v; GitRepository %s", ns, name, revision, err, srcState)
	}
}

// waitKustomization watches the Kustomization ns/name until done returns
// true for it, and returns it; when ctx ends first, the error names the
// last Ready condition and revisions seen.
func (k *kube) waitKustomization(ctx context.Context, ns, name string, done func(*unstructured.Unstructured) bool) (*unstructured.Unstructured, error) {
	return k.waitObject(ctx, kustomizationGVR, ns, name, func(u *unstructured.Unstructured) string {
		applied, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		attempted, _, _ := unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
		handled, _, _ := unstructured.NestedString(u.Object, "status", "lastHandledReconcileAt")
		status, msg := readyCondition(u)
		return fmt.Sprintf("Ready=%s (%s), lastAppliedRevision %q, lastAttemptedRevision %q, lastHandledReconcileAt %q", status, msg, applied, attempted, handled)
	}, done)
}

// waitObject watches the object ns/name of gvr until done returns true for
// it, and returns it; when ctx ends first, the error says what describe
// says of the last version seen.
func (k *kube) waitObject(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, describe func(*unstructured.Unstructured) string, done func(*unstructured.Unstructured) bool) (*unstructured.Unstructured, error) {
	ri := k.dyn.Resource(gvr).Namespace(ns)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return ri.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return ri.Watch(ctx, o)
		},
	}
	var last string
	ev, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		last = describe(u)
		return done(u), nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w; last seen %s", err, last)
	}
	return ev.Object.(*unstructured.Unstructured), nil
}

// fluxAdded reports whether a label or annotation key is one Flux adds to
// the objects it applies.
func fluxAdded(key string) bool {
	return strings.HasPrefix(key, "kustomize.toolkit.fluxcd.io/") || strings.HasPrefix(key, "kustomization.toolkit.fluxcd.io/")
}

// jsonValue is v as encoding/json decodes it (numbers float64), so values
// decoded from YAML and from the API server compare equal.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// rendered keeps of got only what want has: the keys of want's maps, at
// every depth (lists element by element), so that fields the API server
// adds (defaults, managed fields, status, uid) drop out.
func rendered(want, got any) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := map[string]any{}
		for key, wv := range w {
			if gv, ok := g[key]; ok {
				out[key] = rendered(wv, gv)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return got
		}
		out := make([]any, len(g))
		for i := range g {
			out[i] = rendered(w[i], g[i])
		}
		return out
	}
	return got
}

// checkCluster compares the Artifact and ArtifactVersion objects in the
// API server with the files under rendered/global of the catalog tree:
// the same set of objects, each with the rendered fields' values, and its
// labels and annotations exactly the rendered ones plus Flux's. It returns
// the live objects by "Kind/name".
func (k *kube) checkCluster(t *testing.T, ctx context.Context, tree *object.Tree) map[string]*unstructured.Unstructured {
	t.Helper()
	want := map[string]*unstructured.Unstructured{}
	tree.Files().ForEach(func(f *object.File) error {
		if !strings.HasPrefix(f.Name, "rendered/global/") || !strings.HasSuffix(f.Name, ".yaml") {
			return nil
		}
		data, _ := f.Contents()
		for _, u := range objects(t, f.Name, []byte(data)) {
			want[u.GetKind()+"/"+u.GetName()] = u
		}
		return nil
	})
	live := map[string]*unstructured.Unstructured{}
	for kind, gvr := range map[string]schema.GroupVersionResource{"Artifact": artifactGVR, "ArtifactVersion": artifactVersionGVR} {
		list, err := k.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			live[kind+"/"+list.Items[i].GetName()] = &list.Items[i]
		}
	}
	var wantKeys, liveKeys []string
	for key := range want {
		wantKeys = append(wantKeys, key)
	}
	for key := range live {
		liveKeys = append(liveKeys, key)
	}
	sort.Strings(wantKeys)
	sort.Strings(liveKeys)
	if !reflect.DeepEqual(wantKeys, liveKeys) {
		t.Fatalf("objects in the cluster %v, rendered/global has %v", liveKeys, wantKeys)
	}
	for key, w := range want {
		l := live[key]
		if w.GetNamespace() != l.GetNamespace() {
			t.Errorf("%s: namespace %q in the cluster, %q rendered", key, l.GetNamespace(), w.GetNamespace())
		}
		wv, lv := jsonValue(t, w.Object), jsonValue(t, l.Object)
		if got := rendered(wv, lv); !reflect.DeepEqual(got, wv) {
			wb, _ := json.Marshal(wv)
			gb, _ := json.Marshal(got)
			t.Errorf("%s in the cluster differs from rendered/global:\ncluster:  %s\nrendered: %s", key, gb, wb)
		}
		for what, pair := range map[string][2]map[string]string{
			"labels":      {w.GetLabels(), l.GetLabels()},
			"annotations": {w.GetAnnotations(), l.GetAnnotations()},
		} {
			extra := map[string]string{}
			for key, v := range pair[1] {
				if _, ok := pair[0][key]; !ok && !fluxAdded(key) {
					extra[key] = v
				}
			}
			if len(extra) > 0 {
				t.Errorf("%s: %s in the cluster beyond the rendered ones and Flux's: %v", key, what, extra)
			}
		}
	}
	return live
}

// fluxSource is how a Flux story gets the catalog to the cluster.
type fluxSource struct {
	gvr schema.GroupVersionResource // of the template's source, named operator-catalog
	// apply applies the template's Flux objects (once, after the first run).
	apply func(t *testing.T)
	// args are added to every `publish run` (--oci for OCI).
	args []string
	// deliver makes the catalog commit's rendered/global reachable by the
	// source (nothing for Git; a push for OCI) and returns the revision
	// Flux reports for it.
	deliver func(t *testing.T, commit *object.Commit, tree *object.Tree) string
}

// fluxStory is the list of steps of the Flux tests, for either source: a first run,
// an upgrade (a new ArtifactVersion), a version delist, an artifact delist
// (present: false, no object deleted: the template does not prune) and a
// relist. Each step runs publish, delivers, asks Flux to reconcile the
// source and the Kustomization (reconcile.fluxcd.io/requestedAt), watches
// the Kustomization until it is Ready on the step's revision, and compares
// the cluster with rendered/global. The time from `publish run` exit to
// Ready is logged, not asserted. The template's Kustomization waits for
// the objects' health (wait, healthCheckExprs) and no platform runs here:
// a platformStandIn in cpaas-system, started first and stopped at t's
// cleanup, writes their status as the platform would, so the real
// kustomize-controller evaluates the template's health checks on every
// step. fluxStory returns the stand-in and the last step's revision.
func fluxStory(t *testing.T, ctx context.Context, k *kube, e *env, src fluxSource, what string) (*platformStandIn, string) {
	const ns, ksName = "flux-system", "operator-catalog-global"
	platform := startPlatform(t, ctx, k, "cpaas-system")
	var applied bool
	var revision string
	step := func(name string, extra ...string) map[string]*unstructured.Unstructured {
		t.Helper()
		if out, errOut, code := e.publish(append(append([]string(nil), src.args...), extra...)...); code != 0 {
			t.Fatalf("%s: publish run: exit %d\n%s\n%s", name, code, out, errOut)
		}
		exited := time.Now()
		commits, tree := e.catalog()
		revision = src.deliver(t, commits[0], tree)
		if !applied {
			src.apply(t)
			applied = true
		} else {
			k.requestReconcile(t, ctx, src.gvr, ns, "operator-catalog")
			k.requestReconcile(t, ctx, kustomizationGVR, ns, ksName)
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		k.waitApplied(t, wctx, ns, ksName, revision)
		t.Logf("%s (%s): Flux Ready on %s %s after publish run exited", name, what, revision, time.Since(exited).Round(time.Millisecond))
		return k.checkCluster(t, ctx, tree)
	}
	present := func(live map[string]*unstructured.Unstructured, key string) bool {
		t.Helper()
		u, ok := live[key]
		if !ok {
			t.Fatalf("no %s in the cluster", key)
		}
		p, found, _ := unstructured.NestedBool(u.Object, "spec", "present")
		return found && p
	}

	live := step("first run")
	if len(live) != 2 || !present(live, "Artifact/tiny") || !present(live, "ArtifactVersion/tiny.v1.0.0") {
		t.Fatalf("after the first run the cluster has %v", keys(live))
	}

	e.pushTiny("1.1.0")
	e.writeManifest("tiny", "1.1.0", e.src.Ref("tiny/bundle:v1.1.0"))
	e.commit("tiny 1.1.0")
	live = step("upgrade")
	if len(live) != 3 || !present(live, "ArtifactVersion/tiny.v1.1.0") || !present(live, "ArtifactVersion/tiny.v1.0.0") {
		t.Fatalf("after the upgrade the cluster has %v", keys(live))
	}

	os.RemoveAll(filepath.Join(e.source, "packages", "tiny", "1.0.0"))
	e.commit("remove tiny 1.0.0")
	live = step("version delist")
	if len(live) != 3 || present(live, "ArtifactVersion/tiny.v1.0.0") || !present(live, "ArtifactVersion/tiny.v1.1.0") || !present(live, "Artifact/tiny") {
		t.Fatalf("after the version delist the cluster has %v", keys(live))
	}

	os.RemoveAll(filepath.Join(e.source, "packages", "tiny"))
	e.commit("remove tiny")
	// tiny is the only operator: delisting it is delisting everything.
	live = step("artifact delist", "--allow-empty")
	if len(live) != 3 || present(live, "Artifact/tiny") || present(live, "ArtifactVersion/tiny.v1.1.0") {
		t.Fatalf("after the artifact delist the cluster has %v", keys(live))
	}

	e.writeManifest("tiny", "1.1.0", e.src.Ref("tiny/bundle:v1.1.0"))
	e.commit("tiny 1.1.0 again")
	live = step("relist")
	if len(live) != 3 || !present(live, "Artifact/tiny") || !present(live, "ArtifactVersion/tiny.v1.1.0") || present(live, "ArtifactVersion/tiny.v1.0.0") {
		t.Fatalf("after the relist the cluster has %v", keys(live))
	}
	return platform, revision
}

// startFluxCluster is the API server with the CRDs of ../shared/crds and
// Flux running against it; taken as for startFlux.
func startFluxCluster(t *testing.T, ctx context.Context, taken int) (*apiServer, *kube, int) {
	t.Helper()
	testenv.Short(t, "integration test: starts etcd, kube-apiserver and Flux")
	shared := testenv.RequireShared(t)
	fluxDir(t)
	srv := startAPIServer(t)
	k := srv.client(t)
	k.installAlaudaCRDs(t, ctx, shared)
	k.namespace(t, ctx, "cpaas-system")
	n := startFlux(t, ctx, srv, k, taken)
	return srv, k, n
}

func (k *kube) applyAll(t *testing.T, ctx context.Context, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		if err := k.apply(ctx, u, false); err != nil {
			t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// TestFluxGit is the Git path of the Flux tests: real Flux controllers (source-
// and kustomize-controller, hack/flux/build.sh) apply the catalog that
// `publish run` pushed to the Git smart-HTTP server (basic auth) through
// the catalog template's own flux/ objects (fluxStory). The Kustomization's
// revision is the catalog commit. It also runs dryRunSyncObjects, takes
// the path of a port taken before source-controller's artifact server
// binds it, and ends with fluxHealth (the health subtest): the template's
// health checks in the real kustomize-controller for every fixture state.
func TestFluxGit(t *testing.T) {
	ctx := context.Background()
	// The artifact server's first port is taken (as by another process
	// between freePort and the start): source-controller exits saying so
	// and is started again on fresh ports. Its health probe answers before
	// that: only the artifact server serving the marker counts as ready.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, k, n := startFluxCluster(t, ctx, taken.Addr().(*net.TCPAddr).Port)
	if n != 2 {
		t.Fatalf("source-controller started %d times, want 2 (the taken artifact port, then a fresh one)", n)
	}

	t.Run("dry-run", func(t *testing.T) { dryRunSyncObjects(t, ctx, k) })

	e := tinyEnv(t)
	const secretName = "operator-catalog-auth"
	k.applyAll(t, ctx, []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": secretName, "namespace": "flux-system"},
		"type":       "Opaque",
		"stringData": map[string]any{"username": e.git.Username, "password": e.git.Password},
	}}})
	platform, revision := fluxStory(t, ctx, k, e, fluxSource{
		gvr: gitRepositoryGVR,
		apply: func(t *testing.T) {
			// The template's Flux objects, pointed at the test Git server.
			k.applyAll(t, ctx, fluxTemplate(t, "flux", fmt.Sprintf(`
- target: {kind: GitRepository, name: operator-catalog}
  patch: |
    - op: replace
      path: /spec/url
      value: %s
    - op: add
      path: /spec/secretRef
      value: {name: %s}
`, e.catalogURL, secretName)))
		},
		deliver: func(t *testing.T, commit *object.Commit, _ *object.Tree) string {
			return "main@sha1:" + commit.Hash.String()
		},
	}, "Git")

	// flux/adopt.yaml applies adopt/flux (its Job and RBAC) once the
	// catalog is Ready (dependsOn); asked now rather than at Flux's
	// dependency requeue (30 s). No kube-controller-manager runs here: the
	// Job is created, not run.
	commits, _ := e.catalog()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	k.requestReconcile(t, wctx, kustomizationGVR, "flux-system", "operator-catalog-adopt")
	k.waitApplied(t, wctx, "flux-system", "operator-catalog-adopt", "main@sha1:"+commits[0].Hash.String())

	t.Run("health", func(t *testing.T) { fluxHealth(t, ctx, k, platform, revision) })
}

// TestFluxOCI is the OCI path of the Flux tests: each `publish run --oci`
// pushes rendered/global of its catalog commit to the Debian
// docker-registry (TLS, htpasswd) as the OCI catalog (internal/ocicatalog,
// tag global, the cluster name) with the destination credentials, and
// records its digest in publish/state.yaml; the template's flux/oci/
// objects, pointed at it with the registry's credentials (secretRef, a
// dockerconfigjson Secret) and CA (certSecretRef), pull and apply it
// (fluxStory). The Kustomization's revision is global@<the recorded
// digest>, the tag points at it, and the OCIRepository's artifact carries
// the package-repo commit.
func TestFluxOCI(t *testing.T) {
	ctx := context.Background()
	_, k, _ := startFluxCluster(t, ctx, 0)
	e := tinyEnv(t)
	ref := e.dst.Ref("platform/operator-catalog:global")
	ca, err := os.ReadFile(e.dst.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(e.dst.Username + ":" + e.dst.Password))
	dockerConfig := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q,"auth":%q}}}`, e.dst.Host, e.dst.Username, e.dst.Password, auth)
	// publish run --cosign-key signs each catalog it pushes; the
	// OCIRepository verifies it with the public key.
	privPEM, pubPEM, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(keyFile, privPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	k.applyAll(t, ctx, []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata":   map[string]any{"name": "operator-catalog-cosign", "namespace": "flux-system"},
			"stringData": map[string]any{"cosign.pub": string(pubPEM)},
		}},
		{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
			"metadata":   map[string]any{"name": "operator-catalog-registry", "namespace": "flux-system"},
			"stringData": map[string]any{".dockerconfigjson": dockerConfig},
		}},
		{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata":   map[string]any{"name": "operator-catalog-registry-ca", "namespace": "flux-system"},
			"stringData": map[string]any{"ca.crt": string(ca)},
		}},
	})
	var sourceCommit string
	fluxStory(t, ctx, k, e, fluxSource{
		gvr: ociRepositoryGVR,
		apply: func(t *testing.T) {
			k.applyAll(t, ctx, fluxTemplate(t, "flux/oci", fmt.Sprintf(`
- target: {kind: OCIRepository, name: operator-catalog}
  patch: |
    - op: replace
      path: /spec/url
      value: oci://%s
    - op: add
      path: /spec/secretRef
      value: {name: operator-catalog-registry}
    - op: add
      path: /spec/certSecretRef
      value: {name: operator-catalog-registry-ca}
    - op: add
      path: /spec/verify
      value: {provider: cosign, secretRef: {name: operator-catalog-cosign}}
`, strings.TrimSuffix(ref, ":global"))))
		},
		args: []string{"--oci", strings.TrimSuffix(ref, ":global"), "--cosign-key", keyFile},
		deliver: func(t *testing.T, _ *object.Commit, tree *object.Tree) string {
			// publish run pushed the artifact: the state records it and
			// the tag points at it.
			f, err := tree.File("publish/state/global.yaml")
			if err != nil {
				t.Fatal(err)
			}
			data, err := f.Contents()
			if err != nil {
				t.Fatal(err)
			}
			var state struct {
				OCI map[string]struct{ Ref, Digest string } `json:"oci"`
			}
			if err := yaml.Unmarshal([]byte(data), &state); err != nil {
				t.Fatal(err)
			}
			rec := state.OCI["global"]
			if rec.Ref != ref || rec.Digest == "" {
				t.Fatalf("publish/state.yaml records the OCI catalog %+v, want %s", rec, ref)
			}
			desc, err := remote.Head(mustRef(t, ref), e.dst.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			if desc.Digest.String() != rec.Digest {
				t.Fatalf("%s points at %s, the state records %s", ref, desc.Digest, rec.Digest)
			}
			head, err := e.repo.Head()
			if err != nil {
				t.Fatal(err)
			}
			sourceCommit = head.Hash().String()
			return "global@" + rec.Digest
		},
	}, "OCI")
	src, err := k.dyn.Resource(ociRepositoryGVR).Namespace("flux-system").Get(ctx, "operator-catalog", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta, _, _ := unstructured.NestedStringMap(src.Object, "status", "artifact", "metadata")
	if meta[ocicatalog.RevisionAnnotation] != sourceCommit {
		t.Errorf("OCIRepository artifact metadata %v, want %s %s", meta, ocicatalog.RevisionAnnotation, sourceCommit)
	}
	if status, reason := condition(src, "SourceVerified"); status != "True" {
		t.Errorf("the signed catalog: SourceVerified %s (%s)", status, reason)
	}

	// The same catalog at another tag, unsigned (the signature is a
	// referrer of the digest, so the artifact must differ): refused.
	img, err := ocicatalog.BuildFiles(map[string][]byte{"kustomization.yaml": []byte("resources: []\n")}, "rendered/unsigned", ocicatalog.Meta{Source: "unsigned"})
	if err != nil {
		t.Fatal(err)
	}
	unsigned, _ := name.NewTag(strings.TrimSuffix(ref, ":global") + ":unsigned")
	if _, err := ocicatalog.PushImage(ctx, img, unsigned, e.dst.Options()...); err != nil {
		t.Fatal(err)
	}
	repo := src.DeepCopy()
	repo.SetName("unsigned-catalog")
	repo.SetResourceVersion("")
	repo.SetUID("")
	repo.SetManagedFields(nil)
	repo.SetGeneration(0)
	repo.SetCreationTimestamp(metav1.Time{})
	delete(repo.Object, "status")
	unstructured.SetNestedField(repo.Object, "unsigned", "spec", "ref", "tag")
	k.applyAll(t, ctx, []*unstructured.Unstructured{repo})
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	got, err := k.waitObject(wctx, ociRepositoryGVR, "flux-system", "unsigned-catalog", func(u *unstructured.Unstructured) string {
		status, msg := readyCondition(u)
		return fmt.Sprintf("Ready=%s (%s)", status, msg)
	}, func(u *unstructured.Unstructured) bool {
		verified, _ := condition(u, "SourceVerified")
		ready, _ := readyCondition(u)
		return verified == "False" && ready == "False"
	})
	if err != nil {
		t.Fatalf("the unsigned catalog: %v", err)
	}
	if status, msg := readyCondition(got); status != "False" || got.Object["status"].(map[string]any)["artifact"] != nil {
		t.Errorf("the unsigned catalog: Ready %s (%s), artifact %v", status, msg, got.Object["status"].(map[string]any)["artifact"])
	}
	_, reason := condition(got, "SourceVerified")
	t.Logf("Flux refuses the unsigned catalog: %s", reason)
}

// condition returns the status and message of the condition typ of a
// Flux object.
func condition(u *unstructured.Unstructured, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "", ""
}

// dryRunSyncObjects: the API server, with the Flux CRDs and Argo CD's
// Application CRD, accepts in a server-side dry run every object of
// docs/syncing.md and the template's Flux and Argo CD objects (the OCI
// ones included), with its placeholders.
func dryRunSyncObjects(t *testing.T, ctx context.Context, k *kube) {
	k.namespace(t, ctx, "argocd")
	doc, err := os.ReadFile("../../docs/syncing.md")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	check := func(where string, u *unstructured.Unstructured) {
		if strings.HasPrefix(u.GetAPIVersion(), "kustomize.config.k8s.io/") {
			return // kustomize's input, not an object
		}
		if err := k.apply(ctx, u, true); err != nil {
			t.Errorf("%s: the API server rejects %s %s: %v", where, u.GetKind(), u.GetName(), err)
		}
		kinds[u.GetKind()]++
	}
	blocks := strings.Split(string(doc), "```yaml\n")
	for i, b := range blocks[1:] {
		end := strings.Index(b, "```")
		if end < 0 {
			t.Fatalf("docs/syncing.md: YAML block %d does not end", i+1)
		}
		for _, u := range objects(t, "docs/syncing.md", []byte(b[:end])) {
			check(fmt.Sprintf("docs/syncing.md block %d", i+1), u)
		}
	}
	for _, f := range []string{"flux/gitrepository.yaml", "flux/kustomization.yaml", "flux/adopt.yaml", "flux/oci/ocirepository.yaml", "flux/oci/kustomization.yaml", "argocd/application.yaml", "argocd/application-adopt.yaml", "argocd/application-oci.yaml"} {
		data, err := os.ReadFile("../../catalog-repo-template/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objects(t, f, data) {
			check("catalog-repo-template/"+f, u)
		}
	}
	// The per-cluster objects, as Flux and Argo CD make them for the
	// cluster edge: the Flux Kustomization after post-build substitution,
	// and the Application the ApplicationSet's Git directory generator
	// makes for rendered/edge.
	data, err := os.ReadFile("../../catalog-repo-template/flux/clusters/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objects(t, "flux/clusters/kustomization.yaml", []byte(strings.ReplaceAll(string(data), "${CLUSTER}", "edge"))) {
		check("catalog-repo-template/flux/clusters/kustomization.yaml", u)
	}
	for _, u := range applicationSetApps(t, "edge") {
		check("catalog-repo-template/argocd/applicationset.yaml", u)
	}
	t.Logf("server-side dry run accepted: %v", kinds)
	for _, kind := range []string{"GitRepository", "OCIRepository", "Kustomization", "Application", "Secret"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s was checked", kind)
		}
	}
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for key := range m {
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

// TestRenderedFields: the comparison of TestFluxGit drops what the API
// server adds and nothing else.
func TestRenderedFields(t *testing.T) {
	want := jsonValue(t, map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"present": true, "tags": []any{map[string]any{"n": 1}}}})
	got := jsonValue(t, map[string]any{"metadata": map[string]any{"name": "a", "uid": "x"}, "spec": map[string]any{"present": true, "default": 2, "tags": []any{map[string]any{"n": 1, "d": 3}}}, "status": map[string]any{}})
	if r := rendered(want, got); !reflect.DeepEqual(r, want) {
		t.Errorf("added fields kept: %v", r)
	}
	for _, changed := range []map[string]any{
		{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"present": false, "tags": []any{map[string]any{"n": 1}}}},
		{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"tags": []any{map[string]any{"n": 1}}}},
		{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"present": true, "tags": []any{map[string]any{"n": 1}, map[string]any{"n": 2}}}},
		{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"present": true, "tags": []any{map[string]any{"n": 2}}}},
	} {
		if r := rendered(want, jsonValue(t, changed)); reflect.DeepEqual(r, want) {
			t.Errorf("%v compares equal to %v", changed, want)
		}
	}
}

// TestFluxTemplatesAgree: the catalog template's two Flux Kustomizations,
// from Git (flux/kustomization.yaml) and from OCI (flux/oci/...), are the
// same object but for their source and path, so the OCI path gets the same
// health checks (wait, timeout, retryInterval, healthCheckExprs), which
// Flux evaluates only with wait or healthChecks set, for both kinds.
func TestFluxTemplatesAgree(t *testing.T) {
	read := func(f string) map[string]any {
		data, err := os.ReadFile("../../catalog-repo-template/" + f)
		if err != nil {
			t.Fatal(err)
		}
		objs := objects(t, f, data)
		if len(objs) != 1 {
			t.Fatalf("%s: %d objects, want 1", f, len(objs))
		}
		return objs[0].Object
	}
	git, oci := read("flux/kustomization.yaml"), read("flux/oci/kustomization.yaml")
	for key, want := range map[string][2]any{"path": {"./rendered/global", "./"}, "sourceRef": {
		map[string]any{"kind": "GitRepository", "name": "operator-catalog"},
		map[string]any{"kind": "OCIRepository", "name": "operator-catalog"}}} {
		for i, u := range []map[string]any{git, oci} {
			spec := u["spec"].(map[string]any)
			if !reflect.DeepEqual(spec[key], want[i]) {
				t.Errorf("spec.%s is %v, want %v", key, spec[key], want[i])
			}
			delete(spec, key)
		}
	}
	if !reflect.DeepEqual(git, oci) {
		gb, _ := json.Marshal(git)
		ob, _ := json.Marshal(oci)
		t.Errorf("flux/kustomization.yaml and flux/oci/kustomization.yaml differ beyond path and sourceRef:\nGit: %s\nOCI: %s", gb, ob)
	}
	spec := git["spec"].(map[string]any)
	if spec["wait"] != true && spec["healthChecks"] == nil {
		t.Error("neither wait nor healthChecks is set: Flux would not evaluate the healthCheckExprs")
	}
	kinds := map[string]bool{}
	exprs, _ := spec["healthCheckExprs"].([]any)
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		if m["apiVersion"] != "app.alauda.io/v1alpha1" {
			t.Errorf("healthCheckExprs for %v %v", m["apiVersion"], m["kind"])
		}
		kinds[fmt.Sprint(m["kind"])] = true
	}
	if len(kinds) != 2 || !kinds["Artifact"] || !kinds["ArtifactVersion"] {
		t.Errorf("healthCheckExprs for %v, want Artifact and ArtifactVersion", kinds)
	}
}

// healthFixture is one fixture object of the template's health checks
// (internal/status/healthcheck/testdata/app.alauda.io/<kind>/testdata/<name>.yaml,
// which the gopher-lua test runs through the Argo CD Lua): its status, and
// the kstatus status its health_test.yaml says the Flux healthCheckExprs
// give it (fluxStatus).
type healthFixture struct {
	kind, name string
	status     map[string]any // nil: the object has no status
	flux       string         // kstatus status the real kustomize-controller reports
}

// healthFixtures reads every fixture of both kinds. An object without any
// status reads, in kustomize-controller, as the evaluation error of the
// expressions (the name status is unbound): kstatus Unknown, which it keeps
// waiting on as on InProgress (docs/after-sync.md); the fixture says
// InProgress, what Argo CD's Progressing means for Flux.
func healthFixtures(t *testing.T) map[string]healthFixture {
	t.Helper()
	out := map[string]healthFixture{}
	for _, kind := range []string{"Artifact", "ArtifactVersion"} {
		dir := filepath.Join("../../internal/status/healthcheck/testdata/app.alauda.io", kind)
		raw, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var tests struct {
			Tests []struct {
				FluxStatus string `json:"fluxStatus"`
				InputPath  string `json:"inputPath"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(raw, &tests); err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests.Tests {
			data, err := os.ReadFile(filepath.Join(dir, tc.InputPath))
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := yaml.Unmarshal(data, &obj); err != nil {
				t.Fatal(err)
			}
			f := healthFixture{kind: kind, name: strings.TrimSuffix(filepath.Base(tc.InputPath), ".yaml"), flux: tc.FluxStatus}
			f.status, _ = obj["status"].(map[string]any)
			if f.status == nil {
				if f.flux != "InProgress" {
					t.Fatalf("%s/%s: no status, fluxStatus %s: Flux keeps waiting on it (InProgress)", kind, f.name, f.flux)
				}
				f.flux = "Unknown"
			}
			out[kind+"/"+f.name] = f
		}
	}
	return out
}

// fluxHealth is the template's health checks in the real kustomize-
// controller, after fluxStory's relist (revision; Artifact tiny and
// ArtifactVersion tiny.v1.1.0 listed, tiny.v1.0.0 delisted). Each round
// has the platform stand-in write fixture statuses to those objects, asks
// for a reconcile and watches the Kustomization until it has handled that
// request: Ready only when every status is Current by the fixture's
// fluxStatus, else not Ready, the message naming each object that is not
// Current with its status and no other. First the platform's duplicate
// version (Pending/AlreadyAdd): not Ready, the message naming
// tiny.v1.1.0; then Present/Success: Ready on the same revision. The
// Failed states end a health check at once (kustomize-controller's fail
// fast); the InProgress and Unknown ones only at the Kustomization's
// timeout, set to 33s (kustomize-controller's least is 30s) for those rounds (the outcome does not depend on it:
// such a status stays as it is). With the state fluxStory's artifact
// delist step reaches (an Artifact delisted and synced: delisted_synced),
// every fixture runs through the real controller.
func fluxHealth(t *testing.T, ctx context.Context, k *kube, p *platformStandIn, revision string) {
	const ns, ksName = "flux-system", "operator-catalog-global"
	fixtures := healthFixtures(t)
	used := map[string]bool{
		// A delisted Artifact, synced: fluxStory's artifact delist step,
		// where the stand-in's model gives Artifact tiny (present: false)
		// this fixture's status (synced, no version available).
		"Artifact/delisted_synced": true,
	}
	relisted := []string{"ArtifactVersion/tiny.v1.1.0", "ArtifactVersion/tiny.v1.0.0", "Artifact/tiny"}
	setTimeout := func(timeout string) {
		patch := fmt.Sprintf(`{"spec":{"timeout":%q}}`, timeout)
		if _, err := k.dyn.Resource(kustomizationGVR).Namespace(ns).Patch(ctx, ksName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	round := func(name string, states map[string]string) {
		t.Helper()
		// Every object of the relist: a fixture's status, or the model's.
		wantReady, atTimeout := true, false
		var want, notWant []string
		for _, obj := range relisted {
			kind, objName, _ := strings.Cut(obj, "/")
			id := kind + "/cpaas-system/" + objName
			fx, ok := states[obj]
			if !ok {
				p.set(ctx, kind, objName, nil, false)
				notWant = append(notWant, id+" ")
				continue
			}
			f, ok := fixtures[kind+"/"+fx]
			if !ok {
				t.Fatalf("no fixture %s/%s", kind, fx)
			}
			used[kind+"/"+fx] = true
			p.set(ctx, kind, objName, f.status, f.status == nil)
			if f.flux == "Current" {
				notWant = append(notWant, id+" ")
				continue
			}
			wantReady = false
			atTimeout = atTimeout || f.flux != "Failed"
			want = append(want, fmt.Sprintf("%s status: '%s'", id, f.flux))
		}
		var u *unstructured.Unstructured
		var status, msg string
		for attempt := 1; ; attempt++ {
			token := k.requestReconcile(t, ctx, kustomizationGVR, ns, ksName)
			wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			var err error
			u, err = k.waitKustomization(wctx, ns, ksName, func(u *unstructured.Unstructured) bool {
				handled, _, _ := unstructured.NestedString(u.Object, "status", "lastHandledReconcileAt")
				return handled == token
			})
			cancel()
			if err != nil {
				t.Fatalf("%s: the Kustomization did not handle the reconcile request: %v", name, err)
			}
			status, msg = readyCondition(u)
			// At the timeout, kustomize-controller's last poll (every
			// 5s) can still race its own deadline on a loaded machine:
			// its client's rate limiter then refuses the request
			// ("would exceed context deadline") and the message names
			// no object. Its race, not the health checks': ask again.
			if !atTimeout || strings.Contains(msg, "timeout waiting for:") || attempt == 3 {
				break
			}
			t.Logf("health %s: the health check ended on kustomize-controller's own deadline race (%s): asking again", name, msg)
		}
		attempted, _, _ := unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
		applied, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		t.Logf("health %s: Ready=%s: %s", name, status, msg)
		if attempted != revision {
			t.Errorf("%s: lastAttemptedRevision %s, want %s", name, attempted, revision)
		}
		if wantReady {
			if status != "True" || applied != revision {
				t.Errorf("%s: Ready=%s (%s), lastAppliedRevision %s; want Ready on %s", name, status, msg, applied, revision)
			}
			return
		}
		if status != "False" {
			t.Errorf("%s: Ready=%s (%s), want False", name, status, msg)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the Ready message does not name %q: %s", name, w, msg)
			}
		}
		for _, n := range notWant {
			if strings.Contains(msg, n) {
				t.Errorf("%s: the Ready message names %s, which is healthy: %s", name, strings.TrimSpace(n), msg)
			}
		}
	}

	// The platform's duplicate version, then the same version listed.
	round("AlreadyAdd", map[string]string{
		"ArtifactVersion/tiny.v1.1.0": "pending_alreadyadd",
		"ArtifactVersion/tiny.v1.0.0": "delisted_deleting",
	})
	round("AlreadyAdd resolved", map[string]string{
		"ArtifactVersion/tiny.v1.0.0": "delisted_deleting",
		"ArtifactVersion/tiny.v1.1.0": "present_success",
	})
	round("Failed", map[string]string{"ArtifactVersion/tiny.v1.1.0": "failed"})
	round("message", map[string]string{"ArtifactVersion/tiny.v1.1.0": "pending_message"})

	// 30s is kustomize-controller's least; a multiple of its poll
	// interval (5s) would put the last poll on the deadline.
	setTimeout("33s")
	round("progressing", map[string]string{
		"ArtifactVersion/tiny.v1.1.0": "pending",
		"ArtifactVersion/tiny.v1.0.0": "delisted_stale_present",
		"Artifact/tiny":               "not_synced",
	})
	round("progressing 2", map[string]string{
		"ArtifactVersion/tiny.v1.1.0": "phase_unknown",
		"ArtifactVersion/tiny.v1.0.0": "no_status",
		"Artifact/tiny":               "synced_none_available",
	})
	round("no status", map[string]string{
		"ArtifactVersion/tiny.v1.1.0": "no_status",
		"Artifact/tiny":               "no_status",
	})
	// Template's timeout again; the model's statuses: Ready.
	data, err := os.ReadFile("../../catalog-repo-template/flux/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objects(t, "flux/kustomization.yaml", data) {
		if u.GetKind() == "Kustomization" && u.GetName() == ksName {
			timeout, _, _ := unstructured.NestedString(u.Object, "spec", "timeout")
			setTimeout(timeout)
		}
	}
	round("listed", map[string]string{
		"ArtifactVersion/tiny.v1.1.0": "present_success",
		"ArtifactVersion/tiny.v1.0.0": "delisted_deleted",
		"Artifact/tiny":               "synced_available",
	})

	var missing []string
	for key := range fixtures {
		if !used[key] {
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("fixtures not run through kustomize-controller: %v", missing)
	}
}

// applicationSetApps renders the template's ApplicationSet as Argo CD's
// Git directory generator would for the directory rendered/<cluster> of
// each cluster (goTemplate: the parameters .path.path and
// .path.basename, Argo CD's "Git Generator" docs), checking the generator
// first: one Git directory generator over rendered/*, Go templates with
// missingkey=error, and a sync policy that never deletes an Application.
func applicationSetApps(t *testing.T, clusters ...string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("../../catalog-repo-template/argocd/applicationset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, "argocd/applicationset.yaml", data)
	if len(objs) != 1 || objs[0].GetKind() != "ApplicationSet" || objs[0].GetAPIVersion() != "argoproj.io/v1alpha1" {
		t.Fatalf("argocd/applicationset.yaml: want one argoproj.io/v1alpha1 ApplicationSet")
	}
	spec := objs[0].Object["spec"].(map[string]any)
	gens, _ := spec["generators"].([]any)
	if len(gens) != 1 {
		t.Fatalf("generators: %v", gens)
	}
	g, _ := gens[0].(map[string]any)["git"].(map[string]any)
	dirs, _ := g["directories"].([]any)
	if g == nil || len(dirs) != 1 || dirs[0].(map[string]any)["path"] != "rendered/*" || spec["goTemplate"] != true {
		t.Errorf("the generator is not one Git directory generator over rendered/* with goTemplate: %v", gens[0])
	}
	if sp, _ := spec["syncPolicy"].(map[string]any); sp["applicationsSync"] != "create-update" || sp["preserveResourcesOnDeletion"] != true {
		t.Errorf("spec.syncPolicy %v: an Application (and its objects) could be deleted", spec["syncPolicy"])
	}
	tmpl, err := json.Marshal(spec["template"])
	if err != nil {
		t.Fatal(err)
	}
	tt, err := template.New("applicationset").Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, c := range clusters {
		var b bytes.Buffer
		if err := tt.Execute(&b, map[string]any{"path": map[string]any{"path": "rendered/" + c, "basename": c}}); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(b.Bytes(), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetAPIVersion("argoproj.io/v1alpha1")
		u.SetKind("Application")
		u.SetNamespace("argocd")
		if u.GetName() != "operator-catalog-"+c {
			t.Errorf("the Application for %s is named %s", c, u.GetName())
		}
		out = append(out, u)
	}
	return out
}

// TestFluxClusterTemplateAgrees: the per-cluster Flux Kustomization
// (flux/clusters/kustomization.yaml) is flux/kustomization.yaml with
// ${CLUSTER} for global in its name and path, nothing else; and the
// ApplicationSet makes, for global, the Application of
// argocd/application.yaml but for its destination (a cluster by name).
func TestFluxClusterTemplateAgrees(t *testing.T) {
	read := func(f string, replace ...string) map[string]any {
		data, err := os.ReadFile("../../catalog-repo-template/" + f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if len(replace) == 2 {
			text = strings.ReplaceAll(text, replace[0], replace[1])
		}
		objs := objects(t, f, []byte(text))
		if len(objs) != 1 {
			t.Fatalf("%s: %d objects", f, len(objs))
		}
		return objs[0].Object
	}
	one, each := read("flux/kustomization.yaml"), read("flux/clusters/kustomization.yaml", "${CLUSTER}", "global")
	if !reflect.DeepEqual(one, each) {
		a, _ := json.Marshal(one)
		b, _ := json.Marshal(each)
		t.Errorf("flux/clusters/kustomization.yaml differs from flux/kustomization.yaml beyond the cluster:\n%s\n%s", a, b)
	}
	app := read("argocd/application.yaml")
	gen := applicationSetApps(t, "global")[0].Object
	for _, o := range []map[string]any{app, gen} {
		delete(o["spec"].(map[string]any), "destination")
		delete(o, "apiVersion")
		delete(o, "kind")
	}
	if !reflect.DeepEqual(app, gen) {
		a, _ := json.Marshal(app)
		b, _ := json.Marshal(gen)
		t.Errorf("the ApplicationSet's Application for global differs from argocd/application.yaml beyond its destination:\n%s\n%s", a, b)
	}
}
