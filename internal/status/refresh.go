package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/operator-publish/publish/internal/adopt"
)

// PodGVR is core/v1 pods.
var PodGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// CatalogSourceLabel is the label OLM puts on the pods of a CatalogSource's
// registry (olm.catalogSource=<name>).
const CatalogSourceLabel = "olm.catalogSource"

// Restarted is one catalog pod Refresh deleted (its owner recreates it),
// or the catalog-operator Deployment it restarted (Deployment set, Pod
// and CatalogSource empty).
type Restarted struct {
	Namespace, Pod, CatalogSource string
	// Deployment is the catalog-operator Deployment restarted after an
	// upgrade (RefreshOptions.CatalogOperator).
	Deployment string
	// Versions are the ArtifactVersions that were Present but missing
	// from the PackageManifest.
	Versions []string
	// Head is, for the catalog-operator, the newest version the
	// PackageManifests still showed.
	Head string
}

// DeploymentGVR is apps/v1 deployments.
var DeploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// RestartedAtAnnotation is the pod template annotation `kubectl rollout
// restart` sets; Refresh sets it the same way to restart a Deployment.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// DefaultCatalogOperator is where the platform runs OLM's catalog-operator:
// the Deployment catalog-operator in cpaas-system (upstream OLM: olm).
var DefaultCatalogOperator = ObjectRef{Namespace: "cpaas-system", Name: "catalog-operator"}

// ObjectRef names a namespaced object.
type ObjectRef struct{ Namespace, Name string }

func (r ObjectRef) String() string { return r.Namespace + "/" + r.Name }

// ParseObjectRef parses NAMESPACE/NAME (--refresh-catalog-operator).
func ParseObjectRef(s string) (ObjectRef, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return ObjectRef{}, fmt.Errorf("%q: want NAMESPACE/NAME, such as %s", s, DefaultCatalogOperator)
	}
	return ObjectRef{Namespace: ns, Name: name}, nil
}

// RefreshOptions configure RefreshWith.
type RefreshOptions struct {
	// Namespace of the ArtifactVersions and PackageManifests.
	Namespace string
	// Grace is how long a version must have been Present (its status last
	// written) before anything is restarted for it.
	Grace time.Duration
	// Now is the current time (a parameter for tests).
	Now time.Time
	// CatalogOperator, when its Name is set, is the catalog-operator
	// Deployment restarted (a rollout restart: RestartedAtAnnotation on
	// its pod template) when a stale version is an upgrade: its
	// PackageManifest lists older versions of the artifact, the newest of
	// which (the old head) is below it. The platform's procedure restarts
	// it after an upgrade. Opt-in: it needs patch on that one Deployment.
	CatalogOperator ObjectRef
}

// Refresh is RefreshWith with the catalog pods only (no catalog-operator
// restart).
func Refresh(ctx context.Context, client dynamic.Interface, namespace string, grace time.Duration, now time.Time) ([]Restarted, error) {
	return RefreshWith(ctx, client, RefreshOptions{Namespace: namespace, Grace: grace, Now: now})
}

// RefreshWith does, opt-in, what the platform's procedure does by hand after a
// listing: when an ArtifactVersion of namespace is Present with reason
// Success, its status was last written more than grace ago (the status
// subresource's managedFields time, else its creation), and the
// PackageManifest of its artifact does not list its version, it deletes
// the pods of the CatalogSource that PackageManifest comes from
// (status.catalogSource and catalogSourceNamespace; pods labelled
// olm.catalogSource=<name>), which OLM recreates, so that the package
// server reads the catalog again. Each CatalogSource is restarted at most
// once per call. When such a version is an upgrade (the PackageManifest
// still shows an older head) and o.CatalogOperator is set, it also
// restarts that Deployment, once per call, as the procedure does after an
// upgrade. It needs list on artifactversions and packagemanifests in
// namespace, list and delete on pods in the CatalogSource's namespace, and
// for the catalog-operator patch on that Deployment
// (docs/after-sync.md#refresh). A namespace whose cluster serves no
// PackageManifests is left alone.
func RefreshWith(ctx context.Context, client dynamic.Interface, o RefreshOptions) ([]Restarted, error) {
	namespace, grace, now := o.Namespace, o.Grace, o.Now
	avs, err := client.Resource(adopt.ArtifactVersionGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, clusterError("ArtifactVersions", namespace, err)
	}
	pml, err := client.Resource(PackageManifestGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, clusterError("PackageManifests", namespace, err)
	}
	pms := map[string]*unstructured.Unstructured{}
	for i := range pml.Items {
		pms[pml.Items[i].GetName()] = &pml.Items[i]
	}
	type source struct{ ns, name string }
	stale := map[source][]string{}
	var upgrades, heads []string
	for i := range avs.Items {
		av := &avs.Items[i]
		phase, _, _ := unstructured.NestedString(av.Object, "status", "phase")
		reason, _, _ := unstructured.NestedString(av.Object, "status", "reason")
		if phase != "Present" || reason != "Success" || now.Sub(statusTime(av)) < grace {
			continue
		}
		art := av.GetLabels()[adopt.VersionLabel]
		pm := pms[art]
		if pm == nil {
			continue // no PackageManifest: nothing says which catalog serves it
		}
		v := Version{Artifact: art}
		v.Tag, _, _ = unstructured.NestedString(av.Object, "spec", "tag")
		if packageLists(pm, v, av) {
			continue
		}
		if head, ok := upgradeOf(pm, v, av); ok {
			upgrades = append(upgrades, av.GetName())
			heads = append(heads, art+" "+head)
		}
		cs, _, _ := unstructured.NestedString(pm.Object, "status", "catalogSource")
		csns, _, _ := unstructured.NestedString(pm.Object, "status", "catalogSourceNamespace")
		if cs == "" {
			continue
		}
		if csns == "" {
			csns = namespace
		}
		stale[source{csns, cs}] = append(stale[source{csns, cs}], av.GetName())
	}
	keys := make([]source, 0, len(stale))
	for k := range stale {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ns+"/"+keys[i].name < keys[j].ns+"/"+keys[j].name })
	var out []Restarted
	for _, k := range keys {
		pods, err := client.Resource(PodGVR).Namespace(k.ns).List(ctx, metav1.ListOptions{LabelSelector: CatalogSourceLabel + "=" + k.name})
		if err != nil {
			return out, clusterError("pods of CatalogSource "+k.name, k.ns, err)
		}
		for _, p := range pods.Items {
			if err := client.Resource(PodGVR).Namespace(k.ns).Delete(ctx, p.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return out, fmt.Errorf("restarting pod %s/%s of CatalogSource %s: %w (the account needs delete on pods in %s)", k.ns, p.GetName(), k.name, err, k.ns)
			}
			out = append(out, Restarted{Namespace: k.ns, Pod: p.GetName(), CatalogSource: k.name, Versions: stale[k]})
		}
	}
	if co := o.CatalogOperator; co.Name != "" && len(upgrades) > 0 {
		sort.Strings(upgrades)
		sort.Strings(heads)
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{RestartedAtAnnotation: now.UTC().Format(time.RFC3339)}}}}})
		_, err := client.Resource(DeploymentGVR).Namespace(co.Namespace).Patch(ctx, co.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "operator-publish"})
		switch {
		case apierrors.IsNotFound(err):
			return out, fmt.Errorf("restarting the catalog-operator after the upgrades %v: no Deployment %s (--refresh-catalog-operator names another NAMESPACE/NAME)", upgrades, co)
		case apierrors.IsForbidden(err):
			return out, fmt.Errorf("restarting the catalog-operator Deployment %s after the upgrades %v: %w (the account needs patch on deployments/%s in %s)", co, upgrades, err, co.Name, co.Namespace)
		case err != nil:
			return out, fmt.Errorf("restarting the catalog-operator Deployment %s: %w", co, err)
		}
		out = append(out, Restarted{Namespace: co.Namespace, Deployment: co.Name, Versions: upgrades, Head: strings.Join(heads, ", ")})
	}
	return out, nil
}

// upgradeOf reports whether the version of v (live: its ArtifactVersion)
// is newer than every version the PackageManifest pm lists, which lists
// at least one: an upgrade of an already listed artifact that pm does not
// show yet. head is the newest version pm lists.
func upgradeOf(pm *unstructured.Unstructured, v Version, live *unstructured.Unstructured) (head string, ok bool) {
	want, _, _ := unstructured.NestedString(live.Object, "status", "version")
	if want == "" {
		want = v.Tag
	}
	wv, err := semver.ParseTolerant(normVersion(want))
	if err != nil {
		return "", false
	}
	var best *semver.Version
	channels, _, _ := unstructured.NestedSlice(pm.Object, "status", "channels")
	consider := func(s string) {
		if pv, err := semver.ParseTolerant(normVersion(s)); err == nil && (best == nil || pv.GT(*best)) {
			best = &pv
		}
	}
	for _, c := range channels {
		ch, _ := c.(map[string]any)
		if cv, _, _ := unstructured.NestedString(ch, "currentCSVDesc", "version"); cv != "" {
			consider(cv)
		}
		entries, _, _ := unstructured.NestedSlice(ch, "entries")
		for _, e := range entries {
			if em, ok := e.(map[string]any); ok {
				if ev, _ := em["version"].(string); ev != "" {
					consider(ev)
				}
			}
		}
	}
	if best == nil || !wv.GT(*best) {
		return "", false
	}
	return best.String(), true
}

// statusTime is when the status of u was last written: the latest
// managedFields entry of the status subresource, else u's creation.
func statusTime(u *unstructured.Unstructured) time.Time {
	t := u.GetCreationTimestamp().Time
	for _, mf := range u.GetManagedFields() {
		if mf.Subresource == "status" && mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t
}

// PrintRestarted writes one line per restarted pod or Deployment.
func PrintRestarted(w io.Writer, rs []Restarted) {
	for _, r := range rs {
		if r.Deployment != "" {
			fmt.Fprintf(w, "restarted deployment %s/%s (catalog-operator, rollout restart): upgrades %v Present but their PackageManifests still show %s\n", r.Namespace, r.Deployment, r.Versions, r.Head)
			continue
		}
		fmt.Fprintf(w, "restarted pod %s/%s of CatalogSource %s: %v Present but not in its PackageManifest\n", r.Namespace, r.Pod, r.CatalogSource, r.Versions)
	}
}
