// Package adopt gives every ArtifactVersion an ownerReference to its
// Artifact, with the Artifact's uid: the platform expects it (docs/design.md#alauda-facts),
// and a static render cannot know the uid. It is what `publish adopt` runs
// in the cluster after Argo CD or Flux synced the catalog.
package adopt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// The Alauda resources (../shared/crds/app.alauda.io_*.yaml).
var (
	ArtifactGVR        = schema.GroupVersionResource{Group: "app.alauda.io", Version: "v1alpha1", Resource: "artifacts"}
	ArtifactVersionGVR = schema.GroupVersionResource{Group: "app.alauda.io", Version: "v1alpha1", Resource: "artifactversions"}
)

// VersionLabel names, on an ArtifactVersion, the Artifact it belongs to
// (the Artifact's spec.artifactVersionSelector matches it).
const VersionLabel = "cpaas.io/artifact-version"

// Outcome is what happened to one ArtifactVersion.
type Outcome string

// Outcomes.
const (
	// Adopted: the ownerReference was added (or a stale one replaced).
	Adopted Outcome = "adopted"
	// Owned: it already had the right ownerReference; nothing was written.
	Owned Outcome = "owned"
	// Orphan: no Artifact of the labelled name in the namespace (yet).
	Orphan Outcome = "orphan"
	// Unlabelled: no cpaas.io/artifact-version label; left alone.
	Unlabelled Outcome = "unlabelled"
	// Failed: the update was refused; Err says why.
	Failed Outcome = "failed"
)

// Item is the outcome for one ArtifactVersion.
type Item struct {
	Name     string  // ArtifactVersion name
	Artifact string  // from its label
	UID      string  // the Artifact's uid, when found
	Outcome  Outcome //
	Err      error   // for Failed
}

// Result lists an Item per ArtifactVersion of the namespace, sorted by name.
type Result struct{ Items []Item }

// Count is how many items have outcome o.
func (r *Result) Count(o Outcome) (n int) {
	for _, it := range r.Items {
		if it.Outcome == o {
			n++
		}
	}
	return n
}

// Options says where and how to adopt.
type Options struct {
	// Namespace of the Artifacts and ArtifactVersions (default cpaas-system).
	Namespace string
	// DryRun asks the API server to validate each update without storing it
	// (dryRun=All).
	DryRun bool
}

// Run sets on every ArtifactVersion of the namespace the ownerReference
// {apiVersion: app.alauda.io/v1alpha1, kind: Artifact, name, uid} of the
// Artifact its cpaas.io/artifact-version label names. Other owners are
// kept; an Artifact owner of another name or uid (the Artifact was
// recreated, or the label changed) is replaced. An ArtifactVersion that is
// already right is not written: Run is idempotent and safe to repeat. A
// conflicting concurrent write is retried from a fresh read.
//
// The error is non-nil when the objects cannot be listed (RBAC, API server)
// or when an update failed; the Result still holds every item.
func Run(ctx context.Context, client dynamic.Interface, o Options) (*Result, error) {
	if o.Namespace == "" {
		o.Namespace = "cpaas-system"
	}
	arts, err := client.Resource(ArtifactGVR).Namespace(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Artifacts in namespace %s: %w", o.Namespace, err)
	}
	uids := map[string]string{}
	for _, a := range arts.Items {
		uids[a.GetName()] = string(a.GetUID())
	}
	avs := client.Resource(ArtifactVersionGVR).Namespace(o.Namespace)
	list, err := avs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ArtifactVersions in namespace %s: %w", o.Namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
	res := &Result{}
	var errs []error
	var upd metav1.UpdateOptions
	if o.DryRun {
		upd.DryRun = []string{metav1.DryRunAll}
	}
	for i := range list.Items {
		av := &list.Items[i]
		it := Item{Name: av.GetName(), Artifact: av.GetLabels()[VersionLabel]}
		switch uid, ok := uids[it.Artifact]; {
		case it.Artifact == "":
			it.Outcome = Unlabelled
		case !ok:
			it.Outcome = Orphan
		default:
			it.UID = uid
			it.Outcome, it.Err = adoptOne(ctx, avs, av, it.Artifact, uid, upd)
			if it.Err != nil {
				errs = append(errs, fmt.Errorf("ArtifactVersion %s/%s: %w", o.Namespace, it.Name, it.Err))
			}
		}
		res.Items = append(res.Items, it)
	}
	return res, errors.Join(errs...)
}

// adoptOne updates av (re-read on a conflict) unless it already has the
// owner.
func adoptOne(ctx context.Context, avs dynamic.ResourceInterface, av *unstructured.Unstructured, artifact, uid string, upd metav1.UpdateOptions) (Outcome, error) {
	outcome := Owned
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		refs, changed := withOwner(av.GetOwnerReferences(), artifact, uid)
		if !changed {
			outcome = Owned
			return nil
		}
		av.SetOwnerReferences(refs)
		_, err := avs.Update(ctx, av, upd)
		if apierrors.IsConflict(err) {
			fresh, gerr := avs.Get(ctx, av.GetName(), metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			*av = *fresh
		}
		if err == nil {
			outcome = Adopted
		}
		return err
	})
	if err != nil {
		return Failed, err
	}
	return outcome, nil
}

// withOwner returns refs with the Artifact owner artifact/uid, and whether
// that changed anything: other Artifact owners are dropped, other owners
// kept in order.
func withOwner(refs []metav1.OwnerReference, artifact, uid string) ([]metav1.OwnerReference, bool) {
	apiVersion := ArtifactGVR.GroupVersion().String()
	var out []metav1.OwnerReference
	found := false
	for _, r := range refs {
		gv, _ := schema.ParseGroupVersion(r.APIVersion)
		if r.Kind != "Artifact" || gv.Group != ArtifactGVR.Group {
			out = append(out, r)
			continue
		}
		if r.Name == artifact && string(r.UID) == uid && r.APIVersion == apiVersion && !found {
			found = true
			out = append(out, r)
		}
	}
	if found && len(out) == len(refs) {
		return refs, false
	}
	if !found {
		out = append(out, metav1.OwnerReference{APIVersion: apiVersion, Kind: "Artifact", Name: artifact, UID: types.UID(uid)})
	}
	return out, true
}

// Print writes one line per ArtifactVersion that was adopted, is an orphan
// or failed, then a summary line.
func (r *Result) Print(w io.Writer, namespace string, dryRun bool) {
	verb := "adopted"
	if dryRun {
		verb = "would adopt"
	}
	for _, it := range r.Items {
		switch it.Outcome {
		case Adopted:
			fmt.Fprintf(w, "%-11s ArtifactVersion %s: owner Artifact %s (uid %s)\n", verb, it.Name, it.Artifact, it.UID)
		case Orphan:
			fmt.Fprintf(w, "orphan      ArtifactVersion %s: no Artifact %s in namespace %s (yet): adopted by a later run\n", it.Name, it.Artifact, namespace)
		case Unlabelled:
			fmt.Fprintf(w, "unlabelled  ArtifactVersion %s: no %s label, left alone\n", it.Name, VersionLabel)
		case Failed:
			fmt.Fprintf(w, "failed      ArtifactVersion %s: %v\n", it.Name, it.Err)
		}
	}
	fmt.Fprintf(w, "%d ArtifactVersions in %s: %d %s, %d already owned, %d orphans, %d unlabelled, %d failed\n",
		len(r.Items), namespace, r.Count(Adopted), verb, r.Count(Owned), r.Count(Orphan), r.Count(Unlabelled), r.Count(Failed))
}
