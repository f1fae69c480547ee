// Package importer is `publish import`: it reads the Artifacts and
// ArtifactVersions that violet or `kubectl artifact` created in a cluster
// and plans the publish/state/<cluster>.yaml entries that make the catalog render
// the same objects under the same names, so that the first GitOps sync
// adopts them instead of colliding (a second ArtifactVersion of a version
// is left Pending with reason AlreadyAdd). It reads the cluster with get
// and list only; nothing in the cluster is changed (docs/after-sync.md,
// "Migrating from violet").
package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/operator-publish/publish/internal/adopt"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// Found is what Read listed in one namespace: every Artifact and every
// ArtifactVersion, sorted by name.
type Found struct {
	Namespace string
	Artifacts []unstructured.Unstructured
	Versions  []unstructured.Unstructured
}

// Read lists the Artifacts and ArtifactVersions of namespace (the list
// verb only). Errors say what could not be read and, when the API server
// refused, the permission the account needs; a cluster that cannot be
// reached names the server and the flags that choose it.
func Read(ctx context.Context, client dynamic.Interface, namespace string) (*Found, error) {
	f := &Found{Namespace: namespace}
	arts, err := client.Resource(adopt.ArtifactGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, readError("Artifacts", namespace, err)
	}
	avs, err := client.Resource(adopt.ArtifactVersionGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, readError("ArtifactVersions", namespace, err)
	}
	f.Artifacts, f.Versions = arts.Items, avs.Items
	sort.Slice(f.Artifacts, func(i, j int) bool { return f.Artifacts[i].GetName() < f.Artifacts[j].GetName() })
	sort.Slice(f.Versions, func(i, j int) bool { return f.Versions[i].GetName() < f.Versions[j].GetName() })
	return f, nil
}

// ReadError is a cluster that could not be read: unreachable, refusing
// the account, or not serving the Alauda CRDs.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

func readError(what, ns string, err error) error {
	var ue *url.Error
	var ne net.Error
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		err = fmt.Errorf("listing %s in namespace %s: %w (publish import needs get and list on artifacts.app.alauda.io and artifactversions.app.alauda.io there)", what, ns, err)
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		err = fmt.Errorf("listing %s in namespace %s: the cluster does not serve them (%v): is it the platform's cluster (--kubeconfig, --context)?", what, ns, err)
	case errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("listing %s in namespace %s: the cluster cannot be reached: %w (check --kubeconfig, --context, $KUBECONFIG)", what, ns, err)
	default:
		err = fmt.Errorf("listing %s in namespace %s: %w", what, ns, err)
	}
	return &ReadError{Err: err}
}

// Options configure MakePlan: what the catalog renders, to compare with.
type Options struct {
	// Render is the catalog's render configuration of the cluster
	// (namespace, library, image pull secrets).
	Render render.Config
}

// Conflict is something in the cluster that the catalog cannot adopt as
// it is; Action says what to do. Nothing is imported while one is left.
type Conflict struct {
	Artifact string `json:"artifact"`
	// Version is the version concerned ("" for the whole artifact).
	Version string `json:"version,omitempty"`
	// Objects are the ArtifactVersions concerned.
	Objects []string `json:"objects,omitempty"`
	Problem string   `json:"problem"`
	Action  string   `json:"action"`
}

func (c Conflict) String() string {
	s := c.Artifact
	if c.Version != "" {
		s += " " + c.Version
	}
	return fmt.Sprintf("%s: %s; %s", s, c.Problem, c.Action)
}

// Plan is what import would write.
type Plan struct {
	Namespace string `json:"namespace"`
	// Artifacts are the new state entries: every imported artifact with
	// its versions, each recording its ArtifactVersion name (ObjectName).
	Artifacts []model.ArtifactRecord `json:"artifacts"`
	// Known are the artifacts the catalog's state already has with the
	// same objects: nothing to import (an import run again).
	Known []string `json:"known,omitempty"`
	// Conflicts stop the import (see Conflict).
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Notes are what the first sync will change on the imported objects
	// (labels, image pull secrets) and what was left alone.
	Notes []string `json:"notes,omitempty"`
}

// MakePlan turns what Read found into state entries, against the
// catalog's state (its artifacts, tombstones included):
//
//   - an Artifact of type bundle whose artifactVersionSelector matches
//     cpaas.io/artifact-version=<its name> becomes an entry (registry,
//     repository, displayName, description, present);
//   - each ArtifactVersion labelled cpaas.io/artifact-version=<artifact>
//     becomes a version: its version is status.version, else spec.tag
//     without a leading "v" (semver), its tag spec.tag, present
//     spec.present, and ObjectName its name;
//   - two ArtifactVersions of one artifact with the same version or tag
//     (the AlreadyAdd case) are a Conflict naming the one that holds it
//     (phase Present) and the kubectl command that removes the other;
//   - an artifact already in the state is Known when every imported
//     version is there with the same tag and object name, else a
//     Conflict: import never changes what the catalog already publishes.
//
// Objects it cannot use (another type, no label, no Artifact) are Notes.
func MakePlan(f *Found, state []model.ArtifactRecord, o Options) *Plan {
	cfg := o.Render
	if cfg.Library == "" {
		cfg.Library = "platform"
	}
	p := &Plan{Namespace: f.Namespace}
	inState := map[string]model.ArtifactRecord{}
	for _, a := range state {
		inState[a.Name] = a
	}
	byArt := map[string][]*unstructured.Unstructured{}
	for i := range f.Versions {
		av := &f.Versions[i]
		art := av.GetLabels()[adopt.VersionLabel]
		if art == "" {
			p.Notes = append(p.Notes, fmt.Sprintf("ArtifactVersion %s has no %s label: left alone", av.GetName(), adopt.VersionLabel))
			continue
		}
		byArt[art] = append(byArt[art], av)
	}
	seen := map[string]bool{}
	for i := range f.Artifacts {
		a := &f.Artifacts[i]
		name := a.GetName()
		seen[name] = true
		typ, _, _ := unstructured.NestedString(a.Object, "spec", "type")
		if typ != "bundle" {
			p.Notes = append(p.Notes, fmt.Sprintf("Artifact %s is of type %q, not bundle: left alone (publish manages operator bundles)", name, typ))
			continue
		}
		if sel, _, _ := unstructured.NestedString(a.Object, "spec", "artifactVersionSelector", "matchLabels", adopt.VersionLabel); sel != name {
			p.Conflicts = append(p.Conflicts, Conflict{Artifact: name,
				Problem: fmt.Sprintf("its artifactVersionSelector selects %s=%q, publish renders %s=%s", adopt.VersionLabel, sel, adopt.VersionLabel, name),
				Action:  "the first sync would change which ArtifactVersions belong to it: relabel its ArtifactVersions and fix the selector by hand first (kubectl -n " + f.Namespace + " edit artifact " + name + ")"})
			continue
		}
		rec, conflicts := record(a, byArt[name], f.Namespace)
		if len(conflicts) > 0 {
			p.Conflicts = append(p.Conflicts, conflicts...)
			continue
		}
		if lib := a.GetLabels()[render.LabelLibrary]; lib != cfg.Library {
			p.Notes = append(p.Notes, fmt.Sprintf("Artifact %s has label %s=%q, the catalog renders %q: the first sync changes it (set library in publish.yaml to keep it)", name, render.LabelLibrary, lib, cfg.Library))
		}
		if ips, _, _ := unstructured.NestedStringSlice(a.Object, "spec", "imagePullSecrets"); strings.Join(ips, ",") != strings.Join(cfg.ImagePullSecrets, ",") {
			p.Notes = append(p.Notes, fmt.Sprintf("Artifact %s has imagePullSecrets %v, the catalog renders %v: the first sync changes them (set imagePullSecrets in publish.yaml to keep them)", name, ips, cfg.ImagePullSecrets))
		}
		if old, ok := inState[name]; ok {
			if c := againstState(old, rec, f.Namespace); c != nil {
				p.Conflicts = append(p.Conflicts, *c)
			} else {
				p.Known = append(p.Known, name)
			}
			continue
		}
		p.Artifacts = append(p.Artifacts, rec)
	}
	var orphans []string
	for art := range byArt {
		if !seen[art] {
			orphans = append(orphans, art)
		}
	}
	sort.Strings(orphans)
	for _, art := range orphans {
		var names []string
		for _, av := range byArt[art] {
			names = append(names, av.GetName())
		}
		p.Notes = append(p.Notes, fmt.Sprintf("ArtifactVersions %s name Artifact %s, which is not in namespace %s: left alone", strings.Join(names, ", "), art, f.Namespace))
	}
	model.SortRecords(p.Artifacts)
	return p
}

// record builds the state entry of Artifact a and its versions avs, or
// the conflicts that prevent it.
func record(a *unstructured.Unstructured, avs []*unstructured.Unstructured, ns string) (model.ArtifactRecord, []Conflict) {
	name := a.GetName()
	rec := model.ArtifactRecord{Name: name}
	rec.Present, _, _ = unstructured.NestedBool(a.Object, "spec", "present")
	rec.Registry, _, _ = unstructured.NestedString(a.Object, "spec", "registry")
	rec.Repository, _, _ = unstructured.NestedString(a.Object, "spec", "repository")
	rec.DisplayName, _, _ = unstructured.NestedString(a.Object, "spec", "displayName")
	rec.Description, _, _ = unstructured.NestedString(a.Object, "spec", "description")
	var conflicts []Conflict
	if rec.Registry == "" || rec.Repository == "" {
		conflicts = append(conflicts, Conflict{Artifact: name, Problem: "its spec.registry or spec.repository is empty", Action: "fix the Artifact in the cluster, or leave it out of the catalog"})
	}
	byVersion := map[string][]*unstructured.Unstructured{}
	var order []string
	for _, av := range avs {
		tag, _, _ := unstructured.NestedString(av.Object, "spec", "tag")
		ver, _, _ := unstructured.NestedString(av.Object, "status", "version")
		if ver == "" {
			ver = tag
		}
		v, err := semver.ParseTolerant(strings.TrimPrefix(ver, "v"))
		if err != nil || tag == "" {
			conflicts = append(conflicts, Conflict{Artifact: name, Objects: []string{av.GetName()},
				Problem: fmt.Sprintf("ArtifactVersion %s: version %q (status.version, else spec.tag) is not semver", av.GetName(), ver),
				Action:  "publish needs a semver version per ArtifactVersion: delete it (kubectl -n " + ns + " delete artifactversion " + av.GetName() + ") or fix its tag, then import again"})
			continue
		}
		key := v.String()
		if _, ok := byVersion[key]; !ok {
			order = append(order, key)
		}
		byVersion[key] = append(byVersion[key], av)
	}
	tags := map[string]string{}
	for _, key := range order {
		group := byVersion[key]
		if len(group) > 1 {
			conflicts = append(conflicts, duplicate(name, key, group, ns))
			continue
		}
		av := group[0]
		vr := model.VersionRecord{Version: key, ObjectName: av.GetName()}
		vr.Tag, _, _ = unstructured.NestedString(av.Object, "spec", "tag")
		vr.Present, _, _ = unstructured.NestedBool(av.Object, "spec", "present")
		if other, ok := tags[vr.Tag]; ok {
			conflicts = append(conflicts, Conflict{Artifact: name, Version: key, Objects: []string{other, av.GetName()},
				Problem: fmt.Sprintf("ArtifactVersions %s and %s have the same tag %s", other, av.GetName(), vr.Tag),
				Action:  fmt.Sprintf("keep one: kubectl -n %s delete artifactversion %s (the one you do not want), then import again", ns, av.GetName())})
			continue
		}
		tags[vr.Tag] = av.GetName()
		rec.Versions = append(rec.Versions, vr)
	}
	return rec, conflicts
}

// duplicate is the AlreadyAdd case: more than one ArtifactVersion holds
// version of artifact. The one in phase Present holds it; the others are
// left Pending by the platform.
func duplicate(artifact, version string, group []*unstructured.Unstructured, ns string) Conflict {
	var names, holders, others []string
	for _, av := range group {
		names = append(names, av.GetName())
		phase, _, _ := unstructured.NestedString(av.Object, "status", "phase")
		if phase == "Present" {
			holders = append(holders, av.GetName())
		} else {
			others = append(others, av.GetName())
		}
	}
	c := Conflict{Artifact: artifact, Version: version, Objects: names,
		Problem: fmt.Sprintf("%d ArtifactVersions hold this version (%s): the platform adds one and leaves the others Pending with reason AlreadyAdd", len(group), strings.Join(names, ", "))}
	if len(holders) == 1 {
		c.Action = fmt.Sprintf("%s holds it: delete the others (kubectl -n %s delete artifactversion %s), then import again", holders[0], ns, strings.Join(others, " "))
	} else {
		c.Action = fmt.Sprintf("keep the one you want and delete the others (kubectl -n %s delete artifactversion NAME), then import again", ns)
	}
	return c
}

// againstState compares an imported entry with the state's entry of the
// same artifact: nil when every imported version is there with the same
// tag and ArtifactVersion name, else the conflict.
func againstState(old, rec model.ArtifactRecord, ns string) *Conflict {
	byTag := map[string]model.VersionRecord{}
	for _, v := range old.Versions {
		byTag[v.Tag] = v
	}
	var problems, objs []string
	for _, v := range rec.Versions {
		ov, ok := byTag[v.Tag]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("the cluster's ArtifactVersion %s (tag %s) is not in it", v.ObjectName, v.Tag))
			objs = append(objs, v.ObjectName)
		case render.VersionObjectName(old.Name, ov) != v.ObjectName:
			problems = append(problems, fmt.Sprintf("tag %s is ArtifactVersion %s in the cluster, %s in the catalog", v.Tag, v.ObjectName, render.VersionObjectName(old.Name, ov)))
			objs = append(objs, v.ObjectName)
		}
	}
	if old.Registry != rec.Registry || old.Repository != rec.Repository {
		problems = append(problems, fmt.Sprintf("the cluster's Artifact pulls %s/%s, the catalog %s/%s", rec.Registry, rec.Repository, old.Registry, old.Repository))
	}
	if len(problems) == 0 {
		return nil
	}
	return &Conflict{Artifact: rec.Name, Objects: objs,
		Problem: "already in the catalog's state of this cluster (publish/state/<cluster>.yaml), and the cluster differs: " + strings.Join(problems, "; "),
		Action:  fmt.Sprintf("import does not change what the catalog already publishes: delete the cluster's objects the catalog does not render (kubectl -n %s delete artifactversion NAME) so that the sync creates the catalog's, or publish the artifact under another name", ns)}
}

// Print writes the plan as text: one line per artifact and version to
// import (with its ArtifactVersion name), per known artifact, per note and
// per conflict.
func (p *Plan) Print(w io.Writer, dryRun bool) {
	verb := "import"
	if dryRun {
		verb = "would import"
	}
	for _, a := range p.Artifacts {
		state := "listed"
		if !a.Present {
			state = "delisted"
		}
		fmt.Fprintf(w, "%s Artifact %s (%s, %s/%s)\n", verb, a.Name, state, a.Registry, a.Repository)
		for _, v := range a.Versions {
			vs := "listed"
			if !v.Present {
				vs = "delisted"
			}
			fmt.Fprintf(w, "  %s %s tag %s as ArtifactVersion %s (%s)\n", a.Name, v.Version, v.Tag, v.ObjectName, vs)
		}
	}
	for _, k := range p.Known {
		fmt.Fprintf(w, "known     Artifact %s: already in the catalog's state with the same objects\n", k)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note      %s\n", n)
	}
	for _, c := range p.Conflicts {
		fmt.Fprintf(w, "conflict  %s\n", c)
	}
}

// ConflictError is returned when the plan has conflicts: nothing was
// written.
type ConflictError struct{ Conflicts []Conflict }

func (e *ConflictError) Error() string {
	var s []string
	for _, c := range e.Conflicts {
		s = append(s, c.String())
	}
	return fmt.Sprintf("%d conflicts in the cluster, nothing imported: %s", len(e.Conflicts), strings.Join(s, "; "))
}
