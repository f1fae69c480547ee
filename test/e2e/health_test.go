package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/adopt"
	"github.com/operator-publish/publish/internal/status/healthcheck"
	"github.com/operator-publish/publish/internal/testenv"
)

// The chain after a sync, on the real kube-apiserver, with a platform that
// lists a version only once it has its ownerReference (the worst case for
// ordering): the platform model below writes an ArtifactVersion's status
// through the status subresource only after `adopt` gave it its owner. The
// GitOps engines are modelled by the one rule that matters here, taken from
// their sources: Argo CD (gitops-engine sync_context.go) waits, in a sync of
// more than one step (phases or waves), until every resource of a step is
// Healthy by its health check before the next step, and runs PostSync hooks
// only then; Flux (kustomize-controller) reconciles a Kustomization only
// once those in its dependsOn are Ready, and a Kustomization with wait is
// Ready only once everything it applied is healthy. Health is the template's
// Argo CD Lua (internal/status/healthcheck), which agrees with the Flux
// expressions on every fixture (TestFluxGit's health subtest runs them in
// the real kustomize-controller). A round in which neither
// the platform nor adopt writes anything while a gate still waits is a
// deadlock: the model then stops and says so. No sleeps: every round is a
// synchronous read and write against the API server.
func TestHealthChain(t *testing.T) {
	shared := testenv.RequireShared(t)
	srv := startAPIServer(t)
	ctx := context.Background()
	k := srv.client(t)
	k.installAlaudaCRDs(t, ctx, shared)
	k.namespace(t, ctx, "cpaas-system")
	checker, err := healthcheck.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	root := "../../catalog-repo-template"

	t.Run("argocd", func(t *testing.T) {
		ns := "chain-argocd"
		k.namespace(t, ctx, ns)
		objs := append(catalogObjects(ns), kustomizeDir(t, filepath.Join(root, "adopt/argocd"), ns)...)
		m := &chainModel{t: t, k: k, ns: ns, checker: checker}
		if err := m.argoSync(ctx, objs); err != nil {
			t.Fatalf("the template's Argo CD layout: %v", err)
		}
		m.requireListed(ctx)
	})

	t.Run("argocd-posthook-deadlocks", func(t *testing.T) {
		// The layout before this change, a PostSync hook Job: the model
		// must find the deadlock, or it proves nothing about the fix.
		ns := "chain-posthook"
		k.namespace(t, ctx, ns)
		hook := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "publish-adopt", "namespace": ns,
				"annotations": map[string]any{"argocd.argoproj.io/hook": "PostSync"}},
		}}
		m := &chainModel{t: t, k: k, ns: ns, checker: checker}
		err := m.argoSync(ctx, append(catalogObjects(ns), hook))
		if err == nil || !strings.Contains(err.Error(), "deadlock") {
			t.Fatalf("the PostSync layout: %v, want a deadlock", err)
		}
		t.Logf("as expected: %v", err)
	})

	t.Run("flux", func(t *testing.T) {
		ns := "chain-flux"
		k.namespace(t, ctx, ns)
		m := &chainModel{t: t, k: k, ns: ns, checker: checker}
		paths := map[string][]*unstructured.Unstructured{
			"./rendered/global": catalogObjects(ns),
			"./adopt/flux":      kustomizeDir(t, filepath.Join(root, "adopt/flux"), ns),
		}
		var kss []*unstructured.Unstructured
		for _, f := range []string{"flux/kustomization.yaml", "flux/adopt.yaml"} {
			data, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			kss = append(kss, objects(t, f, data)...)
		}
		if err := m.fluxReconcile(ctx, kss, paths); err != nil {
			t.Fatalf("the template's Flux layout: %v", err)
		}
		m.requireListed(ctx)

		// The layout before this change with the health checks on: adopt
		// depending on the catalog's Kustomization, which now waits. The
		// model must find the deadlock.
		ns = "chain-flux-depends"
		k.namespace(t, ctx, ns)
		m = &chainModel{t: t, k: k, ns: ns, checker: checker}
		paths = map[string][]*unstructured.Unstructured{
			"./rendered/global": catalogObjects(ns),
			"./adopt/flux":      kustomizeDir(t, filepath.Join(root, "adopt/flux"), ns),
		}
		dep := kss[1].DeepCopy()
		unstructured.SetNestedSlice(dep.Object, []any{map[string]any{"name": kss[0].GetName()}}, "spec", "dependsOn")
		err := m.fluxReconcile(ctx, []*unstructured.Unstructured{kss[0], dep}, paths)
		if err == nil || !strings.Contains(err.Error(), "deadlock") {
			t.Fatalf("adopt depending on the waiting catalog: %v, want a deadlock", err)
		}
		t.Logf("as expected: %v", err)
	})
}

// catalogObjects is a rendered catalog as publish renders it: one Artifact,
// a listed and a delisted ArtifactVersion.
func catalogObjects(ns string) []*unstructured.Unstructured {
	lbl := map[string]any{"cpaas.io/artifact-version": "etcd", "cpaas.io/library": "platform"}
	av := func(tag string, present bool) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "app.alauda.io/v1alpha1", "kind": "ArtifactVersion",
			"metadata": map[string]any{"name": "etcd." + tag, "namespace": ns, "labels": lbl},
			"spec":     map[string]any{"tag": tag, "present": present},
		}}
	}
	return []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "app.alauda.io/v1alpha1", "kind": "Artifact",
			"metadata": map[string]any{"name": "etcd", "namespace": ns, "labels": map[string]any{"cpaas.io/library": "platform"}},
			"spec": map[string]any{"type": "bundle", "present": true, "registry": "registry.example.com", "repository": "operators/etcd",
				"artifactVersionSelector": map[string]any{"matchLabels": map[string]any{"cpaas.io/artifact-version": "etcd"}}},
		}},
		av("v0.9.4", true),
		av("v0.9.2", false),
	}
}

// kustomizeDir reads the objects a template kustomization.yaml lists (its
// resources, files or directories with their own kustomization.yaml), in
// namespace ns.
func kustomizeDir(t *testing.T, dir, ns string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kus struct{ Resources []string }
	if err := yaml.Unmarshal(data, &kus); err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, r := range kus.Resources {
		p := filepath.Join(dir, r)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			out = append(out, kustomizeDir(t, p, ns)...)
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objects(t, p, data) {
			if u.GetNamespace() != "" {
				u.SetNamespace(ns)
			}
			out = append(out, u)
		}
	}
	return out
}

type chainModel struct {
	t       *testing.T
	k       *kube
	ns      string
	checker *healthcheck.Checker
	// cronJobs is true once an adopt CronJob is in the cluster: from then
	// on adopt runs every round (the API server here has no controller
	// manager, so the model runs what the CronJob would).
	cronJobs bool
	applied  []*unstructured.Unstructured
	rounds   int
}

const maxRounds = 20

// apply applies the objects; a Job runs adopt once (a hook), a CronJob
// makes adopt run every round. Pods and Jobs are not applied (no
// controllers here); everything else is.
func (m *chainModel) apply(ctx context.Context, objs []*unstructured.Unstructured) {
	for _, u := range objs {
		switch u.GetKind() {
		case "Job":
			m.runAdopt(ctx)
			continue
		case "CronJob":
			m.cronJobs = true
		}
		if err := m.k.apply(ctx, u, false); err != nil {
			m.t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		m.applied = append(m.applied, u)
	}
}

// runAdopt runs publish adopt's code in the namespace; it reports whether
// it wrote anything.
func (m *chainModel) runAdopt(ctx context.Context) bool {
	res, err := adopt.Run(ctx, m.k.dyn, adopt.Options{Namespace: m.ns})
	if err != nil {
		m.t.Fatal(err)
	}
	return res.Count(adopt.Adopted) > 0
}

// platform is the platform's controller as far as this test needs it:
// an ArtifactVersion with its Artifact's ownerReference gets phase Present
// and reason Success (listed) or Deleted (delisted), one without stays
// Pending; the Artifact is synced with the count of Present versions.
// Status goes through the status subresource. It reports whether it wrote.
func (m *chainModel) platform(ctx context.Context) bool {
	arts, err := m.k.dyn.Resource(artifactGVR).Namespace(m.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		m.t.Fatal(err)
	}
	uids := map[string]string{}
	for _, a := range arts.Items {
		uids[a.GetName()] = string(a.GetUID())
	}
	avs, err := m.k.dyn.Resource(artifactVersionGVR).Namespace(m.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		m.t.Fatal(err)
	}
	wrote := false
	available := map[string]int64{}
	for i := range avs.Items {
		av := &avs.Items[i]
		art := av.GetLabels()[adopt.VersionLabel]
		owned := false
		for _, r := range av.GetOwnerReferences() {
			owned = owned || (r.Kind == "Artifact" && r.Name == art && string(r.UID) == uids[art] && uids[art] != "")
		}
		present, _, _ := unstructured.NestedBool(av.Object, "spec", "present")
		phase, reason := "Pending", ""
		switch {
		case owned && present:
			phase, reason = "Present", "Success"
			available[art]++
		case owned:
			phase = "Deleted"
		}
		if p, _, _ := unstructured.NestedString(av.Object, "status", "phase"); p == phase {
			continue
		}
		unstructured.SetNestedMap(av.Object, map[string]any{"phase": phase, "reason": reason, "message": "", "version": strings.TrimPrefix(av.GetName(), art+".v")}, "status")
		if _, err := m.k.dyn.Resource(artifactVersionGVR).Namespace(m.ns).UpdateStatus(ctx, av, metav1.UpdateOptions{}); err != nil {
			m.t.Fatal(err)
		}
		wrote = true
	}
	for i := range arts.Items {
		a := &arts.Items[i]
		synced, _, _ := unstructured.NestedBool(a.Object, "status", "synced")
		n, _, _ := unstructured.NestedInt64(a.Object, "status", "availableArtifactVersion")
		if synced && n == available[a.GetName()] {
			continue
		}
		unstructured.SetNestedMap(a.Object, map[string]any{"synced": true, "availableArtifactVersion": available[a.GetName()], "lastUpdateTime": "2026-12-01T10:00:00Z"}, "status")
		if _, err := m.k.dyn.Resource(artifactGVR).Namespace(m.ns).UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
			m.t.Fatal(err)
		}
		wrote = true
	}
	return wrote
}

// health is the worst health of objs as the live objects read now, with
// a line per object that is not Healthy.
func (m *chainModel) health(ctx context.Context, objs []*unstructured.Unstructured) (string, []string) {
	worst := healthcheck.Healthy
	var notes []string
	for _, u := range objs {
		gvr := artifactGVR
		switch u.GetKind() {
		case "Artifact":
		case "ArtifactVersion":
			gvr = artifactVersionGVR
		default:
			continue // no health check of ours: healthy once it exists
		}
		live, err := m.k.dyn.Resource(gvr).Namespace(m.ns).Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			m.t.Fatal(err)
		}
		r, _, err := m.checker.Health(live)
		if err != nil {
			m.t.Fatal(err)
		}
		if r.Status == healthcheck.Healthy {
			continue
		}
		notes = append(notes, fmt.Sprintf("%s %s: %s (%s)", u.GetKind(), u.GetName(), r.Status, r.Message))
		if worst != healthcheck.Degraded {
			worst = r.Status
		}
	}
	return worst, notes
}

// waitHealthy runs rounds (adopt if a CronJob runs it, then the platform)
// until objs are all Healthy. Degraded is an error; a round that changes
// nothing while they are not healthy is a deadlock.
func (m *chainModel) waitHealthy(ctx context.Context, gate string, objs []*unstructured.Unstructured) error {
	for {
		h, notes := m.health(ctx, objs)
		switch h {
		case healthcheck.Healthy:
			return nil
		case healthcheck.Degraded:
			return fmt.Errorf("%s: degraded: %s", gate, strings.Join(notes, "; "))
		}
		m.rounds++
		wrote := false
		if m.cronJobs {
			wrote = m.runAdopt(ctx)
		}
		wrote = m.platform(ctx) || wrote
		if !wrote {
			return fmt.Errorf("deadlock: %s waits for health and nothing will change it: %s", gate, strings.Join(notes, "; "))
		}
		if m.rounds > maxRounds {
			return fmt.Errorf("%s: not healthy after %d rounds: %s", gate, maxRounds, strings.Join(notes, "; "))
		}
	}
}

// argoSync syncs objs as gitops-engine does: tasks sorted into steps by
// phase (argocd.argoproj.io/hook, default Sync; PreSync, Sync, PostSync)
// and wave (argocd.argoproj.io/sync-wave); in a sync of more than one step
// each step waits for its resources' health before the next. After the
// sync, the Application's health is that of all resources: the model runs
// rounds until it is Healthy.
func (m *chainModel) argoSync(ctx context.Context, objs []*unstructured.Unstructured) error {
	type step struct {
		phase, wave int
	}
	phases := map[string]int{"PreSync": 0, "Sync": 1, "PostSync": 2}
	steps := map[step][]*unstructured.Unstructured{}
	for _, u := range objs {
		hook := u.GetAnnotations()["argocd.argoproj.io/hook"]
		if hook == "" {
			hook = "Sync"
		}
		var wave int
		fmt.Sscan(u.GetAnnotations()["argocd.argoproj.io/sync-wave"], &wave)
		s := step{phases[hook], wave}
		steps[s] = append(steps[s], u)
	}
	var order []step
	for s := range steps {
		order = append(order, s)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].phase != order[j].phase {
			return order[i].phase < order[j].phase
		}
		return order[i].wave < order[j].wave
	})
	multiStep := len(order) > 1
	m.t.Logf("Argo CD: %d sync steps (multi-step: %v)", len(order), multiStep)
	for i, s := range order {
		m.apply(ctx, steps[s])
		if multiStep && i < len(order)-1 {
			if err := m.waitHealthy(ctx, fmt.Sprintf("sync step %d of %d", i+1, len(order)), steps[s]); err != nil {
				return err
			}
		}
	}
	return m.waitHealthy(ctx, "the Application's health after the sync", m.applied)
}

// fluxReconcile reconciles the Kustomizations kss (paths: the objects of
// each spec.path) as kustomize-controller does: a Kustomization runs once
// every Kustomization of its dependsOn is Ready; it applies its objects;
// with wait (or healthChecks) it is Ready once they are healthy, else once
// applied. Rounds run until all are Ready.
func (m *chainModel) fluxReconcile(ctx context.Context, kss []*unstructured.Unstructured, paths map[string][]*unstructured.Unstructured) error {
	ready := map[string]bool{}
	applied := map[string]bool{}
	for {
		progressed := false
		for _, ks := range kss {
			name := ks.GetName()
			if ready[name] {
				continue
			}
			deps, _, _ := unstructured.NestedSlice(ks.Object, "spec", "dependsOn")
			blocked := false
			for _, d := range deps {
				dn, _ := d.(map[string]any)["name"].(string)
				blocked = blocked || !ready[dn]
			}
			if blocked {
				continue
			}
			path, _, _ := unstructured.NestedString(ks.Object, "spec", "path")
			objs, ok := paths[path]
			if !ok {
				m.t.Fatalf("Kustomization %s: path %s is not modelled", name, path)
			}
			if !applied[name] {
				m.apply(ctx, objs)
				applied[name] = true
				progressed = true
			}
			wait, _, _ := unstructured.NestedBool(ks.Object, "spec", "wait")
			hcs, _, _ := unstructured.NestedSlice(ks.Object, "spec", "healthChecks")
			if !wait && len(hcs) == 0 {
				ready[name] = true
				continue
			}
			if h, _ := m.health(ctx, objs); h == healthcheck.Healthy {
				ready[name] = true
				progressed = true
			} else if h == healthcheck.Degraded {
				return fmt.Errorf("Kustomization %s: health check failed", name)
			}
		}
		if len(ready) == len(kss) {
			return nil
		}
		// Time passes: the CronJob (if installed) and the platform act.
		m.rounds++
		wrote := false
		if m.cronJobs {
			wrote = m.runAdopt(ctx)
		}
		wrote = m.platform(ctx) || wrote
		if !wrote && !progressed {
			var waiting []string
			for _, ks := range kss {
				if !ready[ks.GetName()] {
					waiting = append(waiting, ks.GetName())
				}
			}
			_, notes := m.health(ctx, m.applied)
			return fmt.Errorf("deadlock: Kustomizations %v are not Ready and nothing will change that: %s", waiting, strings.Join(notes, "; "))
		}
		if m.rounds > maxRounds {
			return fmt.Errorf("not Ready after %d rounds", maxRounds)
		}
	}
}

// requireListed checks the end state: the listed version Present/Success,
// the delisted one Deleted, both owned by the Artifact.
func (m *chainModel) requireListed(ctx context.Context) {
	m.t.Helper()
	want := map[string]string{"etcd.v0.9.4": "Present/Success", "etcd.v0.9.2": "Deleted/"}
	avs, err := m.k.dyn.Resource(artifactVersionGVR).Namespace(m.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		m.t.Fatal(err)
	}
	for _, av := range avs.Items {
		p, _, _ := unstructured.NestedString(av.Object, "status", "phase")
		r, _, _ := unstructured.NestedString(av.Object, "status", "reason")
		if got := p + "/" + r; got != want[av.GetName()] || len(av.GetOwnerReferences()) != 1 {
			m.t.Errorf("ArtifactVersion %s: %s, owners %v; want %s and its Artifact as owner", av.GetName(), got, av.GetOwnerReferences(), want[av.GetName()])
		}
	}
	m.t.Logf("converged after %d rounds", m.rounds)
}
