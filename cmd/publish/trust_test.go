package main

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// attackerRegistry is a registry of a pull request's author: it asks for
// Basic credentials and records every Authorization header it gets.
type attackerRegistry struct {
	host string
	mu   sync.Mutex
	auth []string
}

func newAttackerRegistry(t *testing.T) *attackerRegistry {
	a := &attackerRegistry{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		if h := r.Header.Get("Authorization"); h != "" {
			a.auth = append(a.auth, h)
		}
		a.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="attacker"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	a.host = strings.TrimPrefix(srv.URL, "http://")
	return a
}

// received reports whether the registry got the Basic credentials.
func (a *attackerRegistry) received(user, pass string) bool {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, h := range a.auth {
		if h == want {
			return true
		}
	}
	return false
}

func gitCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func writeManifest(t *testing.T, dir, artifact, version, bundle string) {
	t.Helper()
	p := filepath.Join(dir, "packages", artifact, version, "manifest.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: " + artifact + ".v" + version +
		"\nspec:\n  type: bundle\n  artifact: " + bundle + "\n  version: v" + version + "\n  arch: [linux/amd64]\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// prRepo is a package repo whose main branch names src; the pull request
// branch (checked out) adds a manifest that names the attacker's host and
// a publish.yaml given by pr (none when "").
func prRepo(t *testing.T, src, attacker, base, pr string) string {
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	writeManifest(t, dir, "good-operator", "1.0.0", src+"/team/good-bundle:v1.0.0")
	if base != "" {
		writeFile(t, filepath.Join(dir, "publish.yaml"), base)
	}
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-qm", "base")
	gitCmd(t, dir, "checkout", "-qb", "pr")
	writeManifest(t, dir, "evil-operator", "1.0.0", attacker+"/steal/bundle:v1.0.0")
	if pr != "" {
		writeFile(t, filepath.Join(dir, "publish.yaml"), pr)
	}
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-qm", "pr")
	return dir
}

// In a pull request, plan sends the source credentials only to the
// registries the base branch's manifests name: a manifest the pull request
// adds cannot point them at a host of its own.
func TestPlanNeverSendsSourceCredentialsToAHostThePullRequestNames(t *testing.T) {
	src := inProcessRegistry(t)
	pushRandom(t, src+"/team/good-bundle:v1.0.0")
	attacker := newAttackerRegistry(t)
	dir := prRepo(t, src, attacker.host, "", "")
	catalog := t.TempDir()
	gitCmd(t, catalog, "init", "-q", "--bare")

	_, _ = runPublish(t, "plan", "--source", dir, "--catalog", catalog, "--target-branch", "main", "--no-fetch",
		"--src-username", "reader", "--src-password", "s3cret-src", "--retries", "1")
	if attacker.received("reader", "s3cret-src") {
		t.Errorf("the pull request's registry %s received the source credentials", attacker.host)
	}
	attacker.mu.Lock()
	n := len(attacker.auth)
	attacker.mu.Unlock()
	t.Logf("%d Authorization headers at the attacker", n)
}

// --src-registry binds the source credentials to the hosts it names, in
// lint too.
func TestSrcRegistryBindsSourceCredentials(t *testing.T) {
	attacker := newAttackerRegistry(t)
	dir := t.TempDir()
	writeManifest(t, dir, "evil-operator", "1.0.0", attacker.host+"/steal/bundle:v1.0.0")
	_, _ = runPublish(t, "lint", "--source", dir, "--src-registry", "registry.example.com",
		"--src-username", "reader", "--src-password", "s3cret-src", "--retries", "1")
	if attacker.received("reader", "s3cret-src") {
		t.Errorf("a host --src-registry does not name received the source credentials")
	}
	// Without --src-registry, outside a pull request, the manifests'
	// hosts get them (as before).
	_, _ = runPublish(t, "lint", "--source", dir, "--src-username", "reader", "--src-password", "s3cret-src", "--retries", "1")
	if !attacker.received("reader", "s3cret-src") {
		t.Errorf("the manifests' registry did not receive the source credentials outside a pull request")
	}
}

// In a pull request, the publish.yaml settings that choose where
// credentials go (catalog, dstRegistry, clusters.<c>.dstRegistry) are the
// base branch's: a pull request that points them at its own host gets
// neither the destination password nor the catalog token, and the plan
// says that it changed them.
func TestPlanReadsCredentialDestinationsFromTheBase(t *testing.T) {
	src, dst := inProcessRegistry(t), inProcessRegistry(t)
	pushRandom(t, src+"/team/good-bundle:v1.0.0")
	attacker := newAttackerRegistry(t)
	catalog := t.TempDir()
	gitCmd(t, catalog, "init", "-q", "--bare")
	head := "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\n"
	base := head + "catalog: " + catalog + "\ndstRegistry: " + dst + "/mirror\nclusters:\n  global: {}\n  edge: {}\n"
	pr := head + "catalog: http://" + attacker.host + "/o/c.git\ndstRegistry: " + attacker.host + "/steal\nclusters:\n  global: {}\n  edge:\n    dstRegistry: " + attacker.host + "/edge\n"
	dir := prRepo(t, src, attacker.host, base, pr)

	_, errOut, _ := runPublishErr(t, "plan", "--source", dir, "--target-branch", "main", "--no-fetch",
		"--dst-username", "robot", "--dst-password", "s3cret-dst",
		"--catalog-username", "bot", "--catalog-password", "s3cret-cat", "--retries", "1")
	if attacker.received("robot", "s3cret-dst") {
		t.Errorf("the pull request's dstRegistry received the destination password")
	}
	if attacker.received("bot", "s3cret-cat") {
		t.Errorf("the pull request's catalog received the catalog token")
	}
	for _, key := range []string{"catalog", "dstRegistry", "clusters.edge.dstRegistry"} {
		if !strings.Contains(errOut, "publish.yaml "+key+" differs from the base revision") {
			t.Errorf("no warning that the pull request changes %s:\n%s", key, errOut)
		}
	}
}

// A per-cluster dstRegistry never gets the --dst-password of
// --dst-registry's host, pull request or not.
func TestClusterDstRegistryGetsNoFlagCredentials(t *testing.T) {
	src, dst := inProcessRegistry(t), inProcessRegistry(t)
	pushRandom(t, src+"/team/good-bundle:v1.0.0")
	attacker := newAttackerRegistry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	catalog := t.TempDir()
	gitCmd(t, catalog, "init", "-q", "--bare")
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	writeManifest(t, dir, "good-operator", "1.0.0", src+"/team/good-bundle:v1.0.0")
	writeFile(t, filepath.Join(dir, "publish.yaml"), "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nclusters:\n  global: {}\n  edge:\n    dstRegistry: "+attacker.host+"/edge\n")
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-qm", "c")
	_, _ = runPublish(t, "plan", "--source", dir, "--catalog", catalog, "--dst-registry", dst+"/mirror", "--no-fetch",
		"--dst-username", "robot", "--dst-password", "s3cret-dst", "--retries", "1")
	if attacker.received("robot", "s3cret-dst") {
		t.Errorf("a cluster's dstRegistry received --dst-password")
	}
}
