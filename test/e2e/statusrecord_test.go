package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/rollout"
	"github.com/operator-publish/publish/internal/status"
	"github.com/operator-publish/publish/internal/testenv"
)

// olmV0CRDs is the crds directory of the operator-framework/api module
// go.mod requires (Subscription, ClusterServiceVersion and the other OLM
// v0 CRDs), from the module cache.
func olmV0CRDs(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", "github.com/operator-framework/api").Output()
	var mod struct{ Dir string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		testenv.Skipf(t, "this test needs the operator-framework/api module (go mod download): %v", err)
	}
	return filepath.Join(mod.Dir, "crds")
}

// TestStatusRecord runs status --record against the real kube-apiserver
// with OLM v0's CRDs (operator-framework/api) and OLM v1's
// (operator-controller). No OLM runs here, so the test writes the status
// OLM writes: a Subscription of tiny whose current CSV tiny.v1.2.0 is in
// phase Failed (its installed CSV tiny.v1.1.0 Succeeded), and a
// ClusterExtension of etcd with 0.9.4 Installed and 0.9.5 Blocked. The
// record committed to the catalog says so; the gate with healthy: true
// then holds tiny 1.2.0 from prod, with the reason in prod's plan. Once
// the CSV is Succeeded, `publish status --record` records it Healthy and
// the gate lets it through (its soak over).
func TestStatusRecord(t *testing.T) {
	srv := startAPIServer(t)
	ctx := context.Background()
	k := srv.client(t)
	k.installCRDs(t, ctx, olmV0CRDs(t))
	k.installCRDs(t, ctx, operatorControllerCRDs(t)[1]) // ClusterExtension
	k.namespace(t, ctx, "operators")

	// The catalog: staging lists tiny 1.1.0 and 1.2.0, etcd 0.9.4 and 0.9.5.
	repo := filepath.Join(t.TempDir(), "catalog.git")
	if _, err := git.PlainInit(repo, true); err != nil {
		t.Fatal(err)
	}
	cat := gitops.Options{URL: repo}
	d12, t0 := "sha256:"+strings.Repeat("12", 32), time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	commitState(t, cat, "staging", t0, model.ArtifactRecord{Name: "tiny", Present: true, Versions: []model.VersionRecord{
		{Version: "1.1.0", Tag: "v1.1.0", Present: true, BundleDigest: "sha256:" + strings.Repeat("11", 32)},
		{Version: "1.2.0", Tag: "v1.2.0", Present: true, BundleDigest: d12},
	}}, model.ArtifactRecord{Name: "etcd", Present: true, Versions: []model.VersionRecord{
		{Version: "0.9.4", Tag: "v0.9.4", Present: true}, {Version: "0.9.5", Tag: "v0.9.5", Present: true},
	}})

	subGVR, csvGVR, ceGVR := status.SubscriptionGVR, status.CSVGVR, status.ClusterExtensionGVR
	create := func(gvr schema.GroupVersionResource, u *unstructured.Unstructured, st map[string]any) {
		t.Helper()
		ri := k.dyn.Resource(gvr).Namespace(u.GetNamespace())
		got, err := ri.Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			got, err = ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedMap(got.Object, st, "status")
		if _, err := ri.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status of %s %s: %v", gvr.Resource, u.GetName(), err)
		}
	}
	csv := func(v, phase, reason, msg string) {
		t.Helper()
		create(csvGVR, obj("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "operators", "tiny.v"+v, map[string]any{
			"displayName": "tiny", "version": v, "install": map[string]any{"strategy": "deployment", "spec": map[string]any{"deployments": []any{}}},
		}), map[string]any{"phase": phase, "reason": reason, "message": msg})
	}
	csv("1.1.0", "Succeeded", "InstallSucceeded", "install strategy completed with no errors")
	csv("1.2.0", "Failed", "InstallComponentFailed", "install strategy failed: deployment tiny-controller not ready before timeout")
	create(subGVR, obj("operators.coreos.com/v1alpha1", "Subscription", "operators", "tiny", map[string]any{
		"name": "tiny", "channel": "stable", "source": "platform", "sourceNamespace": "operators",
	}), map[string]any{"currentCSV": "tiny.v1.2.0", "installedCSV": "tiny.v1.1.0", "state": "UpgradePending", "lastUpdated": "2026-12-01T08:00:00Z"})
	cond := func(typ, st, reason, msg string) map[string]any {
		return map[string]any{"type": typ, "status": st, "reason": reason, "message": msg, "lastTransitionTime": "2026-12-01T08:00:00Z", "observedGeneration": int64(1)}
	}
	create(ceGVR, obj("olm.operatorframework.io/v1", "ClusterExtension", "", "etcd", map[string]any{
		"namespace": "operators", "serviceAccount": map[string]any{"name": "installer"},
		"source": map[string]any{"sourceType": "Catalog", "catalog": map[string]any{"packageName": "etcd", "version": "0.9.5"}},
	}), map[string]any{
		"install":    map[string]any{"bundle": map[string]any{"name": "etcd.v0.9.4", "version": "0.9.4"}},
		"conditions": []any{cond("Installed", "True", "Succeeded", "installed etcd.v0.9.4"), cond("Progressing", "True", "Blocked", "upgrade to 0.9.5: CRD etcdclusters drops a served version")},
	})

	// status --record, in process, with an injected clock.
	recorded := t0.Add(90 * time.Minute)
	res, err := status.Record(ctx, k.dyn, status.RecordOptions{Catalog: cat, Cluster: "staging", Now: recorded})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" {
		t.Fatal("status --record made no commit")
	}
	h := readHealth(t, cat, "staging")
	want := map[string]string{
		"tiny 1.1.0": "Healthy", "tiny 1.2.0": "Failed", "etcd 0.9.4": "Healthy", "etcd 0.9.5": "Failed",
	}
	for key, health := range want {
		a, v, _ := strings.Cut(key, " ")
		r, ok := h.Find(a, v)
		if !ok || string(r.Health) != health || !r.Time.Equal(recorded) {
			t.Errorf("%s: recorded %+v (found %v), want %s at %s", key, r, ok, health, recorded)
		}
	}
	failed, _ := h.Find("tiny", "1.2.0")
	if failed.BundleDigest != d12 || !strings.Contains(failed.Reason, "InstallComponentFailed: install strategy failed") || failed.Source != "Subscription operators/tiny, CSV tiny.v1.2.0" {
		t.Errorf("tiny 1.2.0's record: %+v", failed)
	}
	if r, _ := h.Find("etcd", "0.9.5"); !strings.Contains(r.Reason, "Blocked: upgrade to 0.9.5") {
		t.Errorf("etcd 0.9.5's record: %+v", r)
	}

	// The gate prod waits for: staging, soak 1h, healthy: true.
	gate := func(now time.Time) *rollout.Wait {
		t.Helper()
		tip, err := catalog.OpenTip(ctx, cat)
		if err != nil {
			t.Fatal(err)
		}
		defer tip.Close()
		hist, err := tip.History(ctx, "staging")
		if err != nil {
			t.Fatal(err)
		}
		g := &rollout.Gates{Cluster: "prod", Gates: []rollout.Gate{{Cluster: "staging", Soak: time.Hour, Healthy: true}},
			Histories: map[string]*catalog.History{"staging": hist}, Health: map[string]*rollout.HealthFile{"staging": readHealth(t, cat, "staging")}}
		return g.Check("tiny", "1.2.0", d12, now)
	}
	w := gate(t0.Add(2 * time.Hour))
	if w == nil || w.Health != rollout.Failed || !strings.Contains(w.Reason, "held: recorded Failed on staging at 2026-12-01T09:30Z (Subscription operators/tiny, CSV tiny.v1.2.0): phase Failed: InstallComponentFailed") {
		t.Fatalf("prod's gate on tiny 1.2.0 recorded Failed: %+v", w)
	}
	plan := &report.Plan{Cluster: "prod", Waiting: []rollout.Wait{*w}}
	if md := plan.Markdown(); !strings.Contains(md, "| `tiny` | 1.2.0 | staging | when recorded healthy there | held: recorded Failed on staging") {
		t.Errorf("prod's plan does not say why tiny 1.2.0 is held:\n%s", md)
	}

	// The CSV succeeds; publish status --record (the command, record only:
	// no rendered/ here) records it Healthy and the gate passes.
	ri := k.dyn.Resource(csvGVR).Namespace("operators")
	u, err := ri.Get(ctx, "tiny.v1.2.0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedMap(u.Object, map[string]any{"phase": "Succeeded", "reason": "InstallSucceeded", "message": "install strategy completed with no errors"}, "status")
	if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(publishBin, "status", "--record", "--catalog", repo, "--cluster", "staging", "--kubeconfig", srv.kubeconfig(t, ""))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("publish status --record: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "health: tiny 1.2.0 on staging: Healthy (Subscription operators/tiny, CSV tiny.v1.2.0)") || !strings.Contains(out.String(), "health: committed publish/health/staging.yaml") {
		t.Errorf("publish status --record says:\n%s", out.String())
	}
	if w := gate(t0.Add(3 * time.Hour)); w != nil {
		t.Errorf("recorded Healthy and soaked, tiny 1.2.0 still waits: %+v", w)
	}
}

// obj is an object of apiVersion and kind with spec (namespace "" for a
// cluster-scoped one).
func obj(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}, "spec": spec}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

// commitState commits publish/state/<cluster>.yaml with arts to the
// catalog at the time at.
func commitState(t *testing.T, cat gitops.Options, cluster string, at time.Time, arts ...model.ArtifactRecord) {
	t.Helper()
	ctx := context.Background()
	tip, err := catalog.OpenTip(ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	defer tip.Close()
	data, err := (&gitops.State{APIVersion: gitops.StateAPIVersion, Kind: gitops.StateKind, Artifacts: arts}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	w, err := tip.Commit([]catalog.Change{{Path: gitops.StatePath(cluster), Data: data}}, catalog.CommitOptionsFor(cat, "state of "+cluster, at))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tip.Push(ctx, w); err != nil {
		t.Fatal(err)
	}
}

// readHealth is cluster's health record at the catalog's tip.
func readHealth(t *testing.T, cat gitops.Options, cluster string) *rollout.HealthFile {
	t.Helper()
	tip, err := catalog.OpenTip(context.Background(), cat)
	if err != nil {
		t.Fatal(err)
	}
	defer tip.Close()
	data, ok, err := tip.ReadFile(rollout.HealthPath(cluster))
	if err != nil || !ok {
		t.Fatalf("%s: %v (present %v)", rollout.HealthPath(cluster), err, ok)
	}
	h, err := rollout.ParseHealth(rollout.HealthPath(cluster), data)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
