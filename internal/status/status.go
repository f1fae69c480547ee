// Package status reports, from a cluster, whether what the catalog asks for
// is there: for every ArtifactVersion of rendered/<cluster> its phase and
// reason, whether the platform's PackageManifest (OperatorHub) lists it,
// and what to do when it is not as asked; for an olm cluster the
// CatalogSource's READY state or the ClusterCatalog's Serving condition.
// It is `publish status` (docs/after-sync.md); Wait is its --wait.
package status

import (
	"bytes"
	"context"

	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/adopt"
	"github.com/operator-publish/publish/internal/status/healthcheck"
)

// Resources read besides adopt.ArtifactGVR and adopt.ArtifactVersionGVR.
var (
	// PackageManifestGVR is served by OLM's package server (the platform's
	// OperatorHub reads it); namespaced, named after the package.
	PackageManifestGVR = schema.GroupVersionResource{Group: "packages.operators.coreos.com", Version: "v1", Resource: "packagemanifests"}
	// CatalogSourceGVR is OLM v0's catalog (operators.coreos.com/v1alpha1).
	CatalogSourceGVR = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "catalogsources"}
	// ClusterCatalogGVR is OLM v1's catalog (olm.operatorframework.io/v1, cluster-scoped).
	ClusterCatalogGVR = schema.GroupVersionResource{Group: "olm.operatorframework.io", Version: "v1", Resource: "clustercatalogs"}
)

// State is how far one item is from what the catalog asks.
type State string

// States.
const (
	// AsAsked: listed (or delisted, or serving) as the catalog asks.
	AsAsked State = "as-asked"
	// Waiting: not yet; the platform or the sync may still get there.
	Waiting State = "waiting"
	// Failed: it will not get there without someone acting (Action says how).
	Failed State = "failed"
)

// Version is the state of one ArtifactVersion the catalog asks for.
type Version struct {
	Namespace string `json:"namespace"`
	Artifact  string `json:"artifact"`
	Name      string `json:"name"` // the ArtifactVersion
	Tag       string `json:"tag"`
	Present   bool   `json:"present"` // what the catalog asks: listed or delisted
	InCluster bool   `json:"inCluster"`
	Phase     string `json:"phase,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	// Listed is whether the PackageManifest lists the version; nil when
	// the cluster serves no PackageManifests or the check does not apply.
	Listed *bool  `json:"listedInPackageManifest,omitempty"`
	State  State  `json:"state"`
	Action string `json:"action,omitempty"`
	// Rival is the other ArtifactVersion holding the same version (AlreadyAdd).
	Rival string `json:"rival,omitempty"`
}

// Catalog is the state of an OLM CatalogSource or ClusterCatalog.
type Catalog struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Detail    string `json:"detail"`
	State     State  `json:"state"`
	Action    string `json:"action,omitempty"`
}

// Report is everything Check found.
type Report struct {
	Cluster  string    `json:"cluster"`
	Versions []Version `json:"versions"`
	Catalogs []Catalog `json:"catalogs,omitempty"`
	// PackageManifests is false when the cluster serves no
	// packages.operators.coreos.com (the listing check was skipped).
	PackageManifests bool `json:"packageManifests"`
}

// Count is how many versions and catalogs are in state s.
func (r *Report) Count(s State) (n int) {
	for _, v := range r.Versions {
		if v.State == s {
			n++
		}
	}
	for _, c := range r.Catalogs {
		if c.State == s {
			n++
		}
	}
	return n
}

// Done is whether every item is as asked.
func (r *Report) Done() bool { return r.Count(AsAsked) == len(r.Versions)+len(r.Catalogs) }

// Asked is what rendered/<cluster> asks for.
type Asked struct {
	Versions []*unstructured.Unstructured // ArtifactVersions
	Catalogs []*unstructured.Unstructured // CatalogSources, ClusterCatalogs
}

// ReadRendered reads the objects of dir (rendered/<cluster> of a catalog
// checkout: YAML files, one or more documents each) and keeps the
// ArtifactVersions, CatalogSources and ClusterCatalogs. An error names the
// file; a directory with none of them is an error too (wrong --cluster or
// --catalog-dir).
func ReadRendered(dir string) (*Asked, error) {
	a := &Asked{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, doc := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				return fmt.Errorf("%s: document %d: %w", p, i+1, err)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			switch gk := u.GroupVersionKind().GroupKind(); gk {
			case schema.GroupKind{Group: "app.alauda.io", Kind: "ArtifactVersion"}:
				if u.GetNamespace() == "" {
					u.SetNamespace("cpaas-system")
				}
				a.Versions = append(a.Versions, u)
			case schema.GroupKind{Group: "operators.coreos.com", Kind: "CatalogSource"},
				schema.GroupKind{Group: "olm.operatorframework.io", Kind: "ClusterCatalog"}:
				a.Catalogs = append(a.Catalogs, u)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(a.Versions)+len(a.Catalogs) == 0 {
		return nil, fmt.Errorf("%s holds no ArtifactVersion, CatalogSource or ClusterCatalog: is it rendered/<cluster> of the catalog (--catalog-dir, --cluster)?", dir)
	}
	return a, nil
}

// Check reads the cluster once and reports on every item of asked.
// The error is for a cluster that cannot be read (RBAC, a missing CRD,
// the API server); it names what was read.
func Check(ctx context.Context, client dynamic.Interface, cluster string, asked *Asked) (*Report, error) {
	r, _, err := check(ctx, client, cluster, asked)
	return r, err
}

// watchKey is one list Check made, to watch from its resourceVersion.
type watchKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

func check(ctx context.Context, client dynamic.Interface, cluster string, asked *Asked) (*Report, map[watchKey]string, error) {
	checker, err := healthcheck.NewChecker()
	if err != nil {
		return nil, nil, err
	}
	rep := &Report{Cluster: cluster, PackageManifests: true}
	rvs := map[watchKey]string{}
	list := func(gvr schema.GroupVersionResource, ns string) (*unstructured.UnstructuredList, error) {
		var ri dynamic.ResourceInterface = client.Resource(gvr)
		if ns != "" {
			ri = client.Resource(gvr).Namespace(ns)
		}
		l, err := ri.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		rvs[watchKey{gvr, ns}] = l.GetResourceVersion()
		return l, nil
	}
	byNS := map[string][]*unstructured.Unstructured{}
	for _, av := range asked.Versions {
		byNS[av.GetNamespace()] = append(byNS[av.GetNamespace()], av)
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		l, err := list(adopt.ArtifactVersionGVR, ns)
		if err != nil {
			return nil, nil, clusterError("ArtifactVersions", ns, err)
		}
		live := map[string]*unstructured.Unstructured{}
		for i := range l.Items {
			live[l.Items[i].GetName()] = &l.Items[i]
		}
		var pms map[string]*unstructured.Unstructured
		if rep.PackageManifests {
			pl, err := list(PackageManifestGVR, ns)
			switch {
			case err == nil:
				pms = map[string]*unstructured.Unstructured{}
				for i := range pl.Items {
					pms[pl.Items[i].GetName()] = &pl.Items[i]
				}
			case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
				rep.PackageManifests = false
			default:
				return nil, nil, clusterError("PackageManifests", ns, err)
			}
		}
		for _, want := range byNS[ns] {
			rep.Versions = append(rep.Versions, version(checker, want, live, pms))
		}
	}
	for _, c := range asked.Catalogs {
		cat, err := catalog(ctx, client, c, rvs)
		if err != nil {
			return nil, nil, err
		}
		rep.Catalogs = append(rep.Catalogs, cat)
	}
	sort.SliceStable(rep.Versions, func(i, j int) bool {
		a, b := rep.Versions[i], rep.Versions[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Artifact != b.Artifact {
			return a.Artifact < b.Artifact
		}
		return a.Name < b.Name
	})
	return rep, rvs, nil
}

// clusterError says what could not be read, and the permission when the
// API server refused.
func clusterError(what, ns string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("listing %s in namespace %s: %w (the account needs get, list and watch on them)", what, ns, err)
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return fmt.Errorf("listing %s in namespace %s: the cluster does not serve them (%v): is it the platform's cluster, and --cluster the right overlay?", what, ns, err)
	}
	return fmt.Errorf("listing %s in namespace %s: %w", what, ns, err)
}

func version(checker *healthcheck.Checker, want *unstructured.Unstructured, live, pms map[string]*unstructured.Unstructured) Version {
	v := Version{Namespace: want.GetNamespace(), Artifact: want.GetLabels()[adopt.VersionLabel], Name: want.GetName()}
	v.Tag, _, _ = unstructured.NestedString(want.Object, "spec", "tag")
	v.Present, _, _ = unstructured.NestedBool(want.Object, "spec", "present")
	got, ok := live[v.Name]
	if !ok {
		v.State = Waiting
		v.Action = "not in the cluster: has Argo CD / Flux synced this catalog commit? (check the Application or Kustomization)"
		return v
	}
	v.InCluster = true
	v.Phase, _, _ = unstructured.NestedString(got.Object, "status", "phase")
	v.Reason, _, _ = unstructured.NestedString(got.Object, "status", "reason")
	v.Message, _, _ = unstructured.NestedString(got.Object, "status", "message")
	if livePresent, _, _ := unstructured.NestedBool(got.Object, "spec", "present"); livePresent != v.Present {
		v.State = Waiting
		v.Action = fmt.Sprintf("the cluster's spec.present is %v, the catalog's %v: the sync has not applied this catalog commit yet", livePresent, v.Present)
		return v
	}
	h, _, err := checker.Health(got)
	if err != nil {
		v.State, v.Action = Failed, "the health check failed: "+err.Error()
		return v
	}
	switch h.Status {
	case healthcheck.Degraded:
		v.State = Failed
		if v.Reason == "AlreadyAdd" {
			v.Rival = rival(got, live)
			if v.Rival != "" {
				v.Action = fmt.Sprintf("ArtifactVersion %s already holds this version of %s: delete the one you do not want (kubectl -n %s delete artifactversion %s), or delist it in the package repo if it is ours; then the platform adds %s", v.Rival, v.Artifact, v.Namespace, v.Rival, v.Name)
			} else {
				v.Action = fmt.Sprintf("another ArtifactVersion holds this version of %s, but none labelled %s=%s with the same tag is in namespace %s: look for one created by hand (kubectl -n %s get artifactversion)", v.Artifact, adopt.VersionLabel, v.Artifact, v.Namespace, v.Namespace)
			}
		} else {
			v.Action = h.Message
		}
		return v
	case healthcheck.Healthy:
	default:
		v.State = Waiting
		if len(got.GetOwnerReferences()) == 0 {
			v.Action = "no ownerReference to its Artifact yet: publish adopt (the template's CronJob) sets it; then the platform lists it"
		} else {
			v.Action = h.Message
		}
		return v
	}
	if pms == nil {
		v.State = AsAsked
		return v
	}
	listed := packageLists(pms[v.Artifact], v, got)
	v.Listed = &listed
	switch {
	case v.Present && !listed:
		v.State = Waiting
		v.Action = fmt.Sprintf("Present but the PackageManifest %s does not list it (OperatorHub shows it only then): the catalog pods pick it up after a while; the platform's procedure restarts them if it does not", v.Artifact)
	case !v.Present && listed:
		v.State = Waiting
		v.Action = fmt.Sprintf("delisted but the PackageManifest %s still lists it: the catalog pods pick the change up after a while", v.Artifact)
	default:
		v.State = AsAsked
	}
	return v
}

// rival is another ArtifactVersion of the same Artifact with the same tag
// or status.version, the one the platform's AlreadyAdd refers to; "" when
// there is none in the namespace.
func rival(av *unstructured.Unstructured, live map[string]*unstructured.Unstructured) string {
	art := av.GetLabels()[adopt.VersionLabel]
	tag, _, _ := unstructured.NestedString(av.Object, "spec", "tag")
	ver, _, _ := unstructured.NestedString(av.Object, "status", "version")
	var names []string
	for name, o := range live {
		if name == av.GetName() || o.GetLabels()[adopt.VersionLabel] != art {
			continue
		}
		t, _, _ := unstructured.NestedString(o.Object, "spec", "tag")
		ov, _, _ := unstructured.NestedString(o.Object, "status", "version")
		if normVersion(t) == normVersion(tag) || (ver != "" && normVersion(ov) == normVersion(ver)) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// packageLists reports whether the PackageManifest pm (the package
// server's shape: status.channels[].currentCSVDesc.version and
// status.channels[].entries[].version) lists the version of v: its
// status.version, else its tag, compared without a leading "v".
func packageLists(pm *unstructured.Unstructured, v Version, live *unstructured.Unstructured) bool {
	if pm == nil {
		return false
	}
	want, _, _ := unstructured.NestedString(live.Object, "status", "version")
	if want == "" {
		want = v.Tag
	}
	want = normVersion(want)
	channels, _, _ := unstructured.NestedSlice(pm.Object, "status", "channels")
	for _, c := range channels {
		ch, _ := c.(map[string]any)
		if cv, _, _ := unstructured.NestedString(ch, "currentCSVDesc", "version"); cv != "" && normVersion(cv) == want {
			return true
		}
		entries, _, _ := unstructured.NestedSlice(ch, "entries")
		for _, e := range entries {
			if em, ok := e.(map[string]any); ok {
				if ev, _ := em["version"].(string); ev != "" && normVersion(ev) == want {
					return true
				}
			}
		}
	}
	return false
}

func normVersion(s string) string { return strings.TrimPrefix(s, "v") }

// catalog reads a CatalogSource (READY: status.connectionState.lastObservedState)
// or a ClusterCatalog (condition Serving True).
func catalog(ctx context.Context, client dynamic.Interface, want *unstructured.Unstructured, rvs map[watchKey]string) (Catalog, error) {
	c := Catalog{Kind: want.GetKind(), Namespace: want.GetNamespace(), Name: want.GetName()}
	gvr := ClusterCatalogGVR
	var ri dynamic.ResourceInterface = client.Resource(gvr)
	if c.Kind == "CatalogSource" {
		gvr = CatalogSourceGVR
		if c.Namespace == "" {
			c.Namespace = "olm"
		}
		ri = client.Resource(gvr).Namespace(c.Namespace)
	}
	l, err := ri.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + c.Name})
	var got *unstructured.Unstructured
	if err == nil {
		rvs[watchKey{gvr, c.Namespace}] = l.GetResourceVersion()
		if len(l.Items) == 0 {
			err = apierrors.NewNotFound(gvr.GroupResource(), c.Name)
		} else {
			got = &l.Items[0]
		}
	}
	switch {
	case apierrors.IsNotFound(err) && got == nil && l != nil:
		c.State, c.Detail = Waiting, "not in the cluster"
		c.Action = "has Argo CD / Flux synced this catalog commit?"
		return c, nil
	case err != nil:
		return c, clusterError(c.Kind+"s", c.Namespace, err)
	}
	if c.Kind == "CatalogSource" {
		s, _, _ := unstructured.NestedString(got.Object, "status", "connectionState", "lastObservedState")
		c.Detail = "connection state " + orNone(s)
		switch s {
		case "READY":
			c.State = AsAsked
		case "TRANSIENT_FAILURE":
			c.State, c.Action = Failed, "the catalog pod does not serve: check its pod and image (kubectl -n "+c.Namespace+" get pods -l olm.catalogSource="+c.Name+")"
		default:
			c.State, c.Action = Waiting, "the catalog pod is starting"
		}
		return c, nil
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	c.State, c.Detail, c.Action = Waiting, "no Serving condition yet", "operator-controller has not unpacked the catalog yet"
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["type"] != "Serving" {
			continue
		}
		c.Detail = fmt.Sprintf("Serving %v (%v: %v)", m["status"], m["reason"], m["message"])
		if m["status"] == "True" {
			c.State, c.Action = AsAsked, ""
		}
	}
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["type"] == "Progressing" && m["reason"] == "Blocked" {
			c.State, c.Action = Failed, fmt.Sprintf("unpacking is blocked: %v", m["message"])
		}
	}
	return c, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none yet)"
	}
	return s
}

// NotAsAskedError is returned by Wait (and by `publish status`) when an
// item failed, or when the wait timed out with items still waiting.
type NotAsAskedError struct {
	Failed, Waiting int
	TimedOut        bool
	Report          *Report
}

func (e *NotAsAskedError) Error() string {
	var names []string
	for _, v := range e.Report.Versions {
		if v.State == Failed || (e.TimedOut && v.State == Waiting) {
			s := fmt.Sprintf("%s/%s (%s)", v.Namespace, v.Name, v.State)
			if v.Rival != "" {
				s += " held by " + v.Rival
			}
			names = append(names, s)
		}
	}
	for _, c := range e.Report.Catalogs {
		if c.State == Failed || (e.TimedOut && c.State == Waiting) {
			names = append(names, fmt.Sprintf("%s %s (%s)", c.Kind, c.Name, c.State))
		}
	}
	if e.TimedOut {
		return fmt.Sprintf("timed out: %d waiting and %d failed of %d: %s", e.Waiting, e.Failed, len(e.Report.Versions)+len(e.Report.Catalogs), strings.Join(names, ", "))
	}
	return fmt.Sprintf("%d not as asked (failed): %s", e.Failed, strings.Join(names, ", "))
}

// Wait checks, then, until every item is as asked or one failed, waits for
// a change of what it read (a watch from each list's resourceVersion: no
// polling) and checks again. ctx's deadline is the --wait timeout: at its
// end Wait returns the last report and a *NotAsAskedError with TimedOut.
// A failed item ends the wait at once (*NotAsAskedError). progress, when
// not nil, is called with each report.
func Wait(ctx context.Context, client dynamic.Interface, cluster string, asked *Asked, progress func(*Report)) (*Report, error) {
	var last *Report
	for {
		rep, rvs, err := check(ctx, client, cluster, asked)
		if err != nil {
			if ctx.Err() != nil && last != nil {
				return last, &NotAsAskedError{Failed: last.Count(Failed), Waiting: last.Count(Waiting), TimedOut: true, Report: last}
			}
			return nil, err
		}
		last = rep
		if progress != nil {
			progress(rep)
		}
		if n := rep.Count(Failed); n > 0 {
			return rep, &NotAsAskedError{Failed: n, Waiting: rep.Count(Waiting), Report: rep}
		}
		if rep.Done() {
			return rep, nil
		}
		if err := waitChange(ctx, client, rep, rvs); err != nil {
			if ctx.Err() != nil {
				return rep, &NotAsAskedError{Failed: rep.Count(Failed), Waiting: rep.Count(Waiting), TimedOut: true, Report: rep}
			}
			return rep, err
		}
	}
}

// waitChange returns when any of the lists in rvs changes after the
// resourceVersion it was read at (or a watch ends or reports an error:
// the caller reads everything again), or when ctx ends (its error).
func waitChange(ctx context.Context, client dynamic.Interface, rep *Report, rvs map[watchKey]string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, len(rvs))
	for k, rv := range rvs {
		var ri dynamic.ResourceInterface = client.Resource(k.gvr)
		if k.ns != "" {
			ri = client.Resource(k.gvr).Namespace(k.ns)
		}
		w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: false})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("watching %s in namespace %q: %w", k.gvr.Resource, k.ns, err)
		}
		go func() {
			defer w.Stop()
			select {
			case <-w.ResultChan():
			case <-ctx.Done():
			}
			changed <- struct{}{}
		}()
	}
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
