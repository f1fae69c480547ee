package status

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/operator-publish/publish/internal/adopt"
)

// PodGVR is core/v1 pods.
var PodGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// CatalogSourceLabel is the label OLM puts on the pods of a CatalogSource's
// registry (olm.catalogSource=<name>).
const CatalogSourceLabel = "olm.catalogSource"

// Restarted is one catalog pod Refresh deleted (its owner recreates it).
type Restarted struct {
	Namespace, Pod, CatalogSource string
	// Versions are the ArtifactVersions that were Present but missing
	// from the PackageManifest.
	Versions []string
}

// Refresh does, opt-in, what the platform's procedure does by hand after a
// listing: when an ArtifactVersion of namespace is Present with reason
// Success, its status was last written more than grace ago (the status
// subresource's managedFields time, else its creation), and the
// PackageManifest of its artifact does not list its version, it deletes
// the pods of the CatalogSource that PackageManifest comes from
// (status.catalogSource and catalogSourceNamespace; pods labelled
// olm.catalogSource=<name>), which OLM recreates, so that the package
// server reads the catalog again. Each CatalogSource is restarted at most
// once per call. It needs list on artifactversions and packagemanifests in
// namespace, and list and delete on pods in the CatalogSource's namespace
// (docs/after-sync.md#refresh). now is the current time (a parameter for
// tests). A namespace whose cluster serves no PackageManifests is left
// alone.
func Refresh(ctx context.Context, client dynamic.Interface, namespace string, grace time.Duration, now time.Time) ([]Restarted, error) {
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
	return out, nil
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

// PrintRestarted writes one line per restarted pod, or that none was.
func PrintRestarted(w io.Writer, rs []Restarted) {
	for _, r := range rs {
		fmt.Fprintf(w, "restarted pod %s/%s of CatalogSource %s: %v Present but not in its PackageManifest\n", r.Namespace, r.Pod, r.CatalogSource, r.Versions)
	}
}
