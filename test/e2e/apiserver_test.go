package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/crdcheck"
	"github.com/operator-publish/publish/internal/testenv"
)

// KubeAPIServerVersion is the kube-apiserver hack/apiserver/build.sh builds
// and these tests run.
const KubeAPIServerVersion = "v1.37.2"

// kubeAPIServerBinary is $PUBLISH_KUBE_APISERVER, else the binary
// hack/apiserver/build.sh caches. Missing: skip, or fail when integration
// tests are required.
func kubeAPIServerBinary(t *testing.T) string {
	t.Helper()
	testenv.Short(t, "integration test")
	p := os.Getenv("PUBLISH_KUBE_APISERVER")
	if p == "" {
		cache, err := os.UserCacheDir()
		if err == nil {
			p = filepath.Join(cache, "operator-publish", "kube-apiserver-"+KubeAPIServerVersion)
		}
	}
	if _, err := os.Stat(p); err != nil || p == "" {
		testenv.Skipf(t, "this test needs kube-apiserver %s: run hack/apiserver/build.sh (it caches the binary in ~/.cache/operator-publish), or set PUBLISH_KUBE_APISERVER", KubeAPIServerVersion)
	}
	return p
}

// apiServer is etcd (Debian etcd-server) and kube-apiserver on free
// loopback ports, with RBAC and a static admin token.
type apiServer struct {
	url, token, caFile string
	cfg                *rest.Config
	dir                string
}

// freePort returns a loopback TCP port that was free when it was asked
// for. etcd and kube-apiserver cannot listen on port 0 and report the port
// they got (kube-apiserver refuses --secure-port 0), so another process may
// take the port before they bind it: startOnFreePorts then starts them
// again on fresh ports.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// maxPortAttempts bounds how often a server is started again on fresh
// ports after losing one to another process.
const maxPortAttempts = 20

// process is a server process started by startProcess.
type process struct {
	done <-chan struct{} // closed when the process has exited
	out  *bytes.Buffer   // its stdout and stderr; read only once done is closed
}

// addressInUse reports whether the process exited saying that an address
// it was to listen on is in use.
func (p *process) addressInUse() bool {
	select {
	case <-p.done:
		return strings.Contains(strings.ToLower(p.out.String()), "address already in use")
	default:
		return false
	}
}

// startProcess starts a server process, stopped (SIGTERM, then SIGKILL)
// at cleanup; its output is logged when the test fails.
func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	return startProcessEnv(t, nil, name, args...)
}

// startProcessEnv is startProcess with env added to the test's environment.
func startProcessEnv(t *testing.T, env []string, name string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			s := out.String()
			if len(s) > 4000 {
				s = s[len(s)-4000:]
			}
			t.Logf("%s output (tail):\n%s", filepath.Base(name), s)
		}
	})
	return &process{done: done, out: &out}
}

var errExited = errors.New("exited")

// startOnFreePorts starts a server with start on n fresh loopback ports
// and polls ready (every 250 ms) until it says the server is up. When the
// server exits reporting an address in use (another process took a port
// meanwhile), it is started again on fresh ports, up to maxPortAttempts
// times; any other exit, an error from ready or the end of ctx fails t.
func startOnFreePorts(ctx context.Context, t *testing.T, name string, n int, start func(attempt int, ports []int) *process, ready func(ctx context.Context) (bool, error)) *process {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ports := make([]int, n)
		for i := range ports {
			ports[i] = freePort(t)
		}
		p := start(attempt, ports)
		// The process exiting ends the wait, and any request of ready in
		// flight (to a port another process holds and may never answer on).
		pctx, pcancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-p.done:
				pcancel()
			case <-pctx.Done():
			}
		}()
		err := wait.PollUntilContextCancel(pctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			select {
			case <-p.done:
				return false, errExited
			default:
			}
			return ready(ctx)
		})
		pcancel()
		if err == nil {
			return p
		}
		if p.addressInUse() && attempt < maxPortAttempts {
			t.Logf("%s: a port of %v was taken meanwhile; starting again on fresh ports (attempt %d)", name, ports, attempt+1)
			continue
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready", name)
		default:
			t.Fatalf("%s did not become ready: %v", name, err)
		}
	}
}

func startAPIServer(t *testing.T) *apiServer {
	t.Helper()
	bin := kubeAPIServerBinary(t)
	etcd := testenv.Require(t, "etcd", "etcd-server")
	dir, err := os.MkdirTemp("", "kube-apiserver-") // short: unix sockets
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var etcdURL string
	etcdProc := startOnFreePorts(ctx, t, "etcd", 2, func(attempt int, ports []int) *process {
		etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		return startProcess(t, etcd,
			"--name", "e2e", "--data-dir", filepath.Join(dir, fmt.Sprintf("etcd-%d", attempt)),
			"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "e2e="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")
	}, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, etcdURL+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})

	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	saKey := filepath.Join(dir, "sa.key")
	os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	s := &apiServer{token: randomToken(t), dir: dir}
	tokens := filepath.Join(dir, "tokens.csv")
	os.WriteFile(tokens, []byte(s.token+`,e2e-admin,e2e-admin,"system:masters"`+"\n"), 0o600)
	certDir := filepath.Join(dir, "certs")
	s.caFile = filepath.Join(certDir, "apiserver.crt")

	// Ready when the server says so (it writes its self-signed certificate
	// first).
	startOnFreePorts(ctx, t, "kube-apiserver", 1, func(_ int, ports []int) *process {
		s.url = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		return startProcess(t, bin,
			"--etcd-servers", etcdURL,
			"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[0]),
			"--cert-dir", certDir,
			"--token-auth-file", tokens,
			"--authorization-mode", "RBAC",
			"--service-account-issuer", "https://kubernetes.default.svc",
			"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
			"--service-cluster-ip-range", "10.96.0.0/16",
			"--endpoint-reconciler-type", "none", // a loopback address cannot be an endpoint
			"--enable-priority-and-fairness=false",
			"--profiling=false")
	}, func(ctx context.Context) (bool, error) {
		select {
		case <-etcdProc.done:
			return false, errors.New("etcd exited")
		default:
		}
		if _, err := os.Stat(s.caFile); err != nil {
			return false, nil
		}
		s.cfg = &rest.Config{Host: s.url, BearerToken: s.token, TLSClientConfig: rest.TLSClientConfig{CAFile: s.caFile}}
		rc, err := rest.HTTPClientFor(s.cfg)
		if err != nil {
			return false, nil
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := rc.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return s
}

// TestEtcdPortTaken: a server whose port was taken between freePort and
// its start is started again on fresh ports (the path kube-apiserver takes
// too), and serves.
func TestEtcdPortTaken(t *testing.T) {
	etcd := testenv.Require(t, "etcd", "etcd-server")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var url string
	var attempts int
	startOnFreePorts(ctx, t, "etcd", 2, func(attempt int, ports []int) *process {
		attempts = attempt
		if attempt == 1 {
			ports[0] = busy // as if another process took it meanwhile
		}
		url = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		return startProcess(t, etcd, "--name", "e2e", "--data-dir", filepath.Join(dir, fmt.Sprint(attempt)),
			"--listen-client-urls", url, "--advertise-client-urls", url,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", "e2e="+peer, "--unsafe-no-fsync", "--log-level", "warn")
	}, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if attempts != 2 {
		t.Fatalf("etcd started after %d attempts, want 2 (the taken port, then a fresh one)", attempts)
	}
}

func randomToken(t *testing.T) string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// kubeconfig writes a kubeconfig for the admin token; as, when set, is
// impersonated (a service account: system:serviceaccount:NS:NAME).
func (s *apiServer) kubeconfig(t *testing.T, as string) string {
	t.Helper()
	asLine := ""
	if as != "" {
		asLine = "\n    as: " + as
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(p, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: e2e
  user:
    token: %s%s
contexts:
- name: e2e
  context: {cluster: e2e, user: e2e}
current-context: e2e
`, s.url, s.caFile, s.token, asLine)), 0o600)
	return p
}

// kube is a dynamic client with a REST mapper that sees CRDs installed
// after it was made (reset).
type kube struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func (s *apiServer) client(t *testing.T) *kube {
	t.Helper()
	dyn, err := dynamic.NewForConfig(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &kube{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// objects splits YAML documents into objects (empty documents skipped).
func objects(t *testing.T, name string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+string(data), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// apply server-side applies u (dry run: dryRun=All, nothing stored).
func (k *kube) apply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) error {
	gvk := u.GroupVersionKind()
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		k.mapper.Reset()
		m, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = k.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := u.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		ri = k.dyn.Resource(m.Resource).Namespace(ns)
	}
	opts := metav1.ApplyOptions{FieldManager: "publish-e2e", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = ri.Apply(ctx, u.GetName(), u, opts)
	return err
}

// installCRDs creates every CRD of dir and waits until each is Established.
// installAlaudaCRDs installs the CRDs of shared/crds (the reference
// copies: Artifact, ArtifactVersion, Library, Argo CD's Application,
// Flux's Kustomization) and the project's own (crdcheck.OwnFiles:
// ChartRepo).
func (k *kube) installAlaudaCRDs(t *testing.T, ctx context.Context, shared string) {
	t.Helper()
	k.installCRDs(t, ctx, filepath.Join(shared, "crds"))
	own := t.TempDir()
	if _, err := crdcheck.WriteOwn(own); err != nil {
		t.Fatal(err)
	}
	k.installCRDs(t, ctx, own)
}

func (k *kube) installCRDs(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objects(t, e.Name(), data) {
			if err := k.apply(ctx, u, false); err != nil {
				t.Fatalf("installing %s: %v", e.Name(), err)
			}
			names = append(names, u.GetName())
		}
	}
	for _, n := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			u, err := k.dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not Established: %v", n, err)
		}
	}
	k.mapper.Reset()
	t.Logf("installed %d CRDs from %s", len(names), dir)
}

func (k *kube) namespace(t *testing.T, ctx context.Context, names ...string) {
	t.Helper()
	for _, n := range names {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": n}}}
		if err := k.apply(ctx, ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// templateObjects reads the catalog-repo-template files that are
// Kubernetes objects the cluster applies: the Argo CD Applications and
// argocd-cm patch, the Flux Kustomizations, the adopt CronJobs and RBAC.
// Not the Flux sources flux/gitrepository.yaml and
// flux/oci/ocirepository.yaml (no GitRepository or OCIRepository CRD in
// ../shared/crds; TestFluxGit and TestFluxOCI check them) nor
// kustomization.yaml files (kustomize's input, not objects).
func templateObjects(t *testing.T) map[string][]*unstructured.Unstructured {
	t.Helper()
	root := "../../catalog-repo-template"
	out := map[string][]*unstructured.Unstructured{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.Name() == "kustomization.yaml" && !strings.HasPrefix(rel, "flux/") || rel == "flux/gitrepository.yaml" || rel == "flux/oci/ocirepository.yaml" {
			return nil
		}
		if rel == "argocd/applicationset.yaml" {
			// No ApplicationSet CRD here: the Application its generator
			// makes for rendered/global, against the Application CRD.
			out[rel] = applicationSetApps(t, "global")
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "flux/clusters/kustomization.yaml" {
			// As Flux's post-build substitution makes it for a cluster.
			data = []byte(strings.ReplaceAll(string(data), "${CLUSTER}", "global"))
		}
		out[rel] = objects(t, rel, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAPIServer is the story of a real cluster: kube-apiserver v1.37.2
// (built by hack/apiserver/build.sh) with etcd and the CRDs of
// ../shared/crds and ChartRepo's accepts, in a server-side dry run, every object the corpus
// run renders, the ChartRepo the alauda target renders for a chart (ACP's
// CRD) and the Argo CD and Flux objects of catalog-repo-template/;
// then, with the objects applied, `publish adopt` running as the template's
// service account gives every ArtifactVersion its owner, and a second run
// changes nothing.
func TestAPIServer(t *testing.T) {
	shared := testenv.RequireShared(t)
	srv := startAPIServer(t)
	ctx := context.Background()
	k := srv.client(t)
	k.installAlaudaCRDs(t, ctx, shared)
	k.namespace(t, ctx, "cpaas-system", "argocd", "flux-system")

	// The corpus run, as TestCorpus makes it.
	e := newEnv(t)
	corpus, err := testenv.BuildCorpus(ctx, filepath.Join(shared, "corpus"), e.src.Host, filepath.Join(e.source, "packages"), e.src.Options()...)
	if err != nil {
		t.Fatalf("building the corpus: %v", err)
	}
	writeCorpusWaivers(t, e.source)
	e.commit("add the corpus")
	if out, errOut, code := e.publish(); code != 0 {
		t.Fatalf("publish run: exit %d\n%s\n%s", code, out, errOut)
	}
	_, tree := e.catalog()
	var rendered []*unstructured.Unstructured
	var files []string
	tree.Files().ForEach(func(f *object.File) error {
		if !strings.HasPrefix(f.Name, "rendered/") {
			return nil
		}
		data, _ := f.Contents()
		for _, u := range objects(t, f.Name, []byte(data)) {
			rendered = append(rendered, u)
			files = append(files, f.Name)
		}
		return nil
	})
	if len(rendered) < len(corpus.Packages) {
		t.Fatalf("%d rendered objects for %d corpus bundles", len(rendered), len(corpus.Packages))
	}

	t.Run("dry-run", func(t *testing.T) {
		kinds := map[string]int{}
		for i, u := range rendered {
			if err := k.apply(ctx, u, true); err != nil {
				t.Errorf("%s: the API server rejects %s %s: %v", files[i], u.GetKind(), u.GetName(), err)
			}
			kinds[u.GetKind()]++
		}
		for rel, objs := range templateObjects(t) {
			for _, u := range objs {
				if err := k.apply(ctx, u, true); err != nil {
					t.Errorf("catalog-repo-template/%s: the API server rejects %s %s: %v", rel, u.GetKind(), u.GetName(), err)
				}
				kinds[u.GetKind()]++
			}
		}
		for _, u := range chartRepoObjects(t) {
			if err := k.apply(ctx, u, true); err != nil {
				t.Errorf("the API server rejects the ChartRepo of a chart: %v", err)
			}
			kinds[u.GetKind()]++
		}
		t.Logf("server-side dry run accepted: %v", kinds)
		for _, kind := range []string{"Artifact", "ArtifactVersion", "ChartRepo", "Application", "Kustomization", "CronJob", "ConfigMap", "Role", "RoleBinding", "ServiceAccount"} {
			if kinds[kind] == 0 {
				t.Errorf("no %s was applied", kind)
			}
		}
	})

	t.Run("adopt", func(t *testing.T) {
		for _, u := range rendered {
			if err := k.apply(ctx, u, false); err != nil {
				t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
		for _, u := range templateObjects(t)["adopt/rbac/rbac.yaml"] {
			if err := k.apply(ctx, u, false); err != nil {
				t.Fatal(err)
			}
		}
		// As the template's service account, with the template's RBAC only.
		kc := srv.kubeconfig(t, "system:serviceaccount:cpaas-system:publish-adopt")
		adopt := func() (string, int) {
			cmd := exec.Command(publishBin, "adopt", "--kubeconfig", kc, "--namespace", "cpaas-system")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return string(out), ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			return string(out), 0
		}
		out, code := adopt()
		if code != 0 {
			t.Fatalf("publish adopt: exit %d\n%s", code, out)
		}
		t.Logf("first run: %s", lastLine(out))

		arts, err := k.dyn.Resource(artifactGVR).Namespace("cpaas-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid := map[string]string{}
		for _, a := range arts.Items {
			uid[a.GetName()] = string(a.GetUID())
		}
		avs, err := k.dyn.Resource(artifactVersionGVR).Namespace("cpaas-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(avs.Items) != len(corpus.Packages) {
			t.Fatalf("%d ArtifactVersions in the cluster, %d bundles in the corpus", len(avs.Items), len(corpus.Packages))
		}
		versions := map[string]string{}
		for _, av := range avs.Items {
			art := av.GetLabels()["cpaas.io/artifact-version"]
			refs := av.GetOwnerReferences()
			if len(refs) != 1 || refs[0].Kind != "Artifact" || refs[0].APIVersion != "app.alauda.io/v1alpha1" || refs[0].Name != art || string(refs[0].UID) != uid[art] || uid[art] == "" {
				t.Errorf("ArtifactVersion %s: owners %+v, want Artifact %s uid %s", av.GetName(), refs, art, uid[art])
			}
			versions[av.GetName()] = av.GetResourceVersion()
		}
		if !strings.Contains(out, fmt.Sprintf("%d ArtifactVersions in cpaas-system: %d adopted", len(avs.Items), len(avs.Items))) {
			t.Errorf("first run output:\n%s", out)
		}

		// Idempotent: the second run writes nothing.
		out, code = adopt()
		if code != 0 || !strings.Contains(out, fmt.Sprintf(": 0 adopted, %d already owned", len(avs.Items))) {
			t.Fatalf("second run: exit %d\n%s", code, out)
		}
		t.Logf("second run: %s", lastLine(out))
		avs, _ = k.dyn.Resource(artifactVersionGVR).Namespace("cpaas-system").List(ctx, metav1.ListOptions{})
		for _, av := range avs.Items {
			if versions[av.GetName()] != av.GetResourceVersion() {
				t.Errorf("the second run wrote ArtifactVersion %s", av.GetName())
			}
		}

		// Without the RBAC: a clear error, exit 2.
		out, code = func() (string, int) {
			cmd := exec.Command(publishBin, "adopt", "--kubeconfig", srv.kubeconfig(t, "system:serviceaccount:cpaas-system:nobody"))
			o, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return string(o), ee.ExitCode()
			}
			return string(o), 0
		}()
		if code != 2 || !strings.Contains(out, "forbidden") {
			t.Errorf("adopt without RBAC: exit %d\n%s", code, out)
		}
	})
}

var (
	artifactGVR        = schema.GroupVersionResource{Group: "app.alauda.io", Version: "v1alpha1", Resource: "artifacts"}
	artifactVersionGVR = schema.GroupVersionResource{Group: "app.alauda.io", Version: "v1alpha1", Resource: "artifactversions"}
)

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// writeCorpusWaivers writes the publish.yaml TestCorpus uses: the corpus is
// upstream community bundles, republished as they are, with the rules
// their real findings trip waived.
func writeCorpusWaivers(t *testing.T, source string) {
	var waivers strings.Builder
	for _, rule := range []string{"bundle/validator/crd", "bundle/validator/service-account", "bundle/validator/related-images", "dependency/missing",
		"bundle/default-channel", "bundle/validator/csv-examples", "manifest/icon", "repo/skip-range", "bundle/validator/owned-crds", "bundle/csv-version",
		"repo/duplicate-release", "repo/duplicate-csv-name"} {
		fmt.Fprintf(&waivers, "  - rule: %s\n    reason: upstream community bundle, republished as it is\n", rule)
	}
	if err := os.WriteFile(filepath.Join(source, "publish.yaml"), []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nlint:\n  waivers:\n"+waivers.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
