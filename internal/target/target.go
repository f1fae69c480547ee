// Package target holds what a cluster runs: the objects `publish run`
// renders into rendered/<cluster> of the catalog repo, and what they need
// besides the bundles and their related images (docs/design.md, "Targets").
//
// Each target is one file implementing Target: alauda.go (Artifact and
// ArtifactVersion objects through the cluster's kustomize overlay, the
// default) and olm.go (upstream OLM: a file-based catalog image and its
// CatalogSource). A new target is one new file with its Target and one
// entry in kinds below; nothing else compares target names: the name is
// looked up once, where the flags and publish.yaml are read (Lookup).
package target

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// Names of the built-in targets (publish.yaml clusters.<cluster>.target,
// --target).
const (
	Alauda = "alauda" // Artifact and ArtifactVersion objects (default)
	OLM    = "olm"    // upstream OLM: catalog image and CatalogSource
)

// Default is the target of a cluster that names none.
const Default = Alauda

// kinds registers the targets by name.
var kinds = map[string]Kind{
	Alauda: {Name: Alauda, New: newAlauda, Caps: Capabilities{ArtifactObjects: true}},
	OLM:    {Name: OLM, New: newOLM, Caps: Capabilities{CatalogImage: true}},
}

// Kind is a registered target: its name, what it can do and how to make
// one for a cluster.
type Kind struct {
	Name string
	Caps Capabilities
	New  func(Settings) Target
}

// Capabilities are what commands other than run and plan ask of a target,
// instead of comparing its name.
type Capabilities struct {
	// ArtifactObjects: the target renders Alauda Artifact and
	// ArtifactVersion objects, which `publish import` reads back from a
	// cluster and an archive's OCI catalog (`package --catalog`) holds.
	ArtifactObjects bool
	// CatalogImage: the target pushes an image of its own (the olm
	// catalog image), which --cosign-key signs even without --oci.
	CatalogImage bool
}

// Lookup returns the target registered as name ("" is Default). An unknown
// name is an error naming the flag and the publish.yaml field that set it.
func Lookup(name string) (Kind, error) {
	if name == "" {
		name = Default
	}
	k, ok := kinds[name]
	if !ok {
		return Kind{}, fmt.Errorf("target %q: want %s (--target, publish.yaml clusters.<cluster>.target)", name, strings.Join(Names(), " or "))
	}
	return k, nil
}

// New makes the target registered as name for the cluster of s; errors as
// Lookup's, as *model.InputError.
func New(name string, s Settings) (Target, error) {
	k, err := Lookup(name)
	if err != nil {
		return nil, model.Input(err)
	}
	return k.New(s), nil
}

// Names returns the registered target names, sorted.
func Names() []string {
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Settings configure a target for one cluster.
type Settings struct {
	Cluster string        // overlay name: rendered/<cluster>
	Render  render.Config // namespace, library, image pull secrets
	OLM     OLMOptions    // the olm target (publish.yaml clusters.<cluster>.olm)
	// PlainHTTP is --plain-http: references the target makes (the olm
	// catalog image) use plain HTTP.
	PlainHTTP bool
	// Logf reports progress, Warnf what the user may want to fix; nil
	// discards.
	Logf, Warnf func(format string, args ...any)
	// Sign, when set, signs an image the target pushed (the olm catalog
	// image) in repo, with the destination's remote options; it returns
	// what it wrote, for the log (pipeline.ImageSigner, --cosign-key).
	Sign func(ctx context.Context, repo name.Repository, desc v1.Descriptor, opts []remote.Option) (string, error)
}

func (s Settings) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

func (s Settings) warnf(format string, args ...any) {
	if s.Warnf != nil {
		s.Warnf(format, args...)
	}
}

// Env is what Prepare may use of the run: the registry client and the
// read stage.
type Env struct {
	Client *mirror.Client
	// Read reads the artifacts of vs through their kinds of package
	// (kind.Read: Version.SetContent, or ReadErr for a missing or invalid
	// one) and returns registry failures.
	Read func(ctx context.Context, vs []*model.Version) error
}

// Target is what one cluster runs. A value is made per run (Kind.New) and
// may keep what Prepare learnt for Render. Errors the user must fix are
// *model.InputError.
type Target interface {
	// Check validates the target's settings, before any side effect.
	Check() error
	// Images returns the images (source references) the target needs
	// mirrored besides the bundles and their related images.
	Images() []string
	// Kustomize reports whether rendered/<cluster> is built through the
	// cluster's kustomize overlay (kustomize/clusters/<cluster>): the
	// overlay must exist before a run, and `publish plan` may render only
	// the changed artifacts from Git objects.
	Kustomize() bool
	// Prepare runs after the changed versions of vs were read and linted
	// and before anything is mirrored: it gathers what Render needs of the
	// other versions (state is publish/state.yaml before the run).
	Prepare(ctx context.Context, env Env, vs []*model.Version, state *gitops.State) error
	// Render writes rendered/<cluster> for arts (the merged artifacts,
	// tombstones included) into the catalog working tree root, and
	// returns the render key to record in publish/state.yaml. prevKey is
	// the key recorded by the last publish.
	Render(ctx context.Context, root string, arts []model.ArtifactRecord, prevKey string) (key string, err error)
	// Preview renders into root what `publish plan` can show without any
	// registry write, and returns the warning the plan adds ("" for none).
	Preview(root string, arts []model.ArtifactRecord, prevKey string) (warning string, err error)
	// RenderFromState is `publish render`: rendered/<cluster> from arts and
	// publish/state.yaml, without registry access.
	RenderFromState(root string, arts []model.ArtifactRecord, state *gitops.State) error
}

// Incremental is implemented by a target whose objects of one artifact
// depend only on that artifact's record and on the overlays, which
// Key identifies: `publish plan` and `publish run` then read and render
// only the artifacts a change touches, from the Git objects of the
// catalog tip (docs/design.md, "The engine"). A target without it is
// always rendered whole.
type Incremental interface {
	Target
	// Key returns the render key of the overlays in root (a directory that
	// holds at least the catalog's files outside rendered/ and publish/):
	// while it equals the key the last publish recorded, only changed
	// artifacts need rendering.
	Key(root string) (string, error)
	// RenderArtifacts returns the changes (paths relative to the catalog
	// root, sorted) that make the catalog of view hold the render of arts,
	// the merged records of the artifacts a change touches; every other
	// artifact is left as it is. root is a directory holding the catalog's
	// overlays, where the target may write what it builds from. Errors
	// from the overlay and objects the CRDs reject are *model.InputError.
	RenderArtifacts(view catalog.View, root string, arts []model.ArtifactRecord) ([]catalog.Change, error)
}
