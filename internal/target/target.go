// Package target holds what a cluster runs: the objects `publish run`
// renders into rendered/<cluster> of the catalog repo, and what they need
// besides the bundles and their related images (docs/design.md, "Targets").
//
// Each target is one file implementing Target: alauda.go (Artifact and
// ArtifactVersion objects through the cluster's kustomize overlay, the
// default) and olm.go (upstream OLM: a file-based catalog image and its
// CatalogSource). A target with settings of its own reads them from its
// block of a cluster in publish.yaml (clusters.<cluster>.<target name>):
// its Kind.Decode decodes and checks the block, internal/config calls it
// when it reads the file and keeps what it returns, and the value reaches
// the target unopened (Settings.Own), which only the target's own file
// type-asserts. A new target is one new file with its Target (and its
// Decode) and one entry in kinds below; nothing else compares target
// names: the name is looked up once, where the flags and publish.yaml are
// read (Lookup), and other commands ask a Kind's Capabilities.
package target

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	yaml "go.yaml.in/yaml/v4"
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
	Alauda: {Name: Alauda, New: newAlauda, Caps: Capabilities{ArtifactObjects: true, RenderFromCatalog: true, Overlay: true}},
	OLM: {Name: OLM, New: newOLM, Caps: Capabilities{CatalogImage: true, RefusesCharts: true, WholeBundles: true},
		Decode: decodeOLM, Schema: reflect.TypeFor[olmBlock](), KeyPrefix: olmKeyPrefix},
}

// Kind is a registered target: its name, what it can do, how to read its
// own settings from publish.yaml and how to make one for a cluster.
type Kind struct {
	Name string
	Caps Capabilities
	// New makes the target of one cluster. s.Own is what Decode returned
	// for the cluster's block, nil when the cluster has none (or the
	// target no Decode): the target's defaults.
	New func(s Settings) Target
	// Decode, when set, decodes and checks the target's own block of a
	// cluster in publish.yaml (clusters.<cluster>.<Name>): b.Node is the
	// block's value, nil when the cluster has none. It returns the
	// settings for Settings.Own, of a type only the target's file knows.
	// Errors: a value of the wrong type or a field the block does not
	// have is the *yaml.LoadErrors of go.yaml.in/yaml/v4 (internal/config
	// names the field by its path and suggests the nearest one); a value
	// the target refuses is a *BlockError at its line.
	Decode func(b Block) (any, error)
	// Schema, with Decode, is the Go type Decode reads the block into
	// (yaml struct tags): internal/config takes the field names of an
	// unknown field's "did you mean" from it.
	Schema reflect.Type
	// KeyPrefix starts every render key the target records in
	// publish/state.yaml ("" when its keys have none): RenderedBy tells by
	// it which target rendered a cluster.
	KeyPrefix string
}

// Block is a target's own block of one cluster in publish.yaml, as
// Kind.Decode reads it.
type Block struct {
	// File is the publish.yaml it was read from, as errors and the
	// settings name it (file:line).
	File string
	// Cluster is the cluster's name (clusters.<Cluster>).
	Cluster string
	// Node is the block's value (yaml node of the whole file, so its
	// lines are the file's); nil when the cluster has no block.
	Node *yaml.Node
	// Line returns the file's line of the key at keys below the block (a
	// path of mapping keys and, for sequence items, decimal indexes), or
	// of the deepest part of it that exists; nil or 0: unknown.
	Line func(keys ...string) int
}

// line returns b.Line(keys...), 0 when b has no Line.
func (b Block) line(keys ...string) int {
	if b.Line == nil {
		return 0
	}
	return b.Line(keys...)
}

// BlockError is a value of a target's block of publish.yaml that the
// target refuses: Line is its line in Block.File (0: unknown) and Msg
// names the field by its path (clusters.edge.olm.catalogKinds) and says
// what to write instead. internal/config reports it as file:line: Msg.
type BlockError struct {
	Line int
	Msg  string
}

func (e *BlockError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// OLMv1 is implemented by the own settings (Settings.Own) of a target
// whose cluster may install operators with OLM v1 (operator-controller):
// lint's olmv1/ rules check the bundles for the clusters whose settings
// report UsesOLMv1 (internal/config).
type OLMv1 interface{ UsesOLMv1() bool }

// RenderedBy returns the target that recorded the render key key
// (publish/state.yaml rendered.<cluster>): the one whose KeyPrefix starts
// it, else Default (whose keys have no prefix; "" too).
func RenderedBy(key string) Kind {
	for _, k := range kinds {
		if k.KeyPrefix != "" && strings.HasPrefix(key, k.KeyPrefix) {
			return k
		}
	}
	return kinds[Default]
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
	// RenderFromCatalog: rendered/<cluster> can be rendered again from the
	// catalog alone (its overlays and publish/state), which `publish
	// check` does to compare it with what is committed. The olm target's
	// objects name a catalog image by digest that only a run builds.
	RenderFromCatalog bool
	// Overlay: rendered/<cluster> is built through the cluster's kustomize
	// overlay (kustomize/clusters/<cluster>), which must exist before a
	// run and which a first publish seeds.
	Overlay bool
	// RefusesCharts: the target publishes OLM bundles only, so a Helm
	// chart (spec.type chart) in the cluster's selection is a lint error
	// (chart/target) naming the target.
	RefusesCharts bool
	// WholeBundles: the target builds its catalog from every object of
	// the bundles read (the olm catalog's olm.bundle.object properties),
	// so they stay whole; the others keep each bundle slim once linted
	// (kind.Prelint, bundle.Slim), which bounds a run's memory. A target
	// of such a kind may still condense them (Condenser: the olm target
	// in its default bundle format).
	WholeBundles bool
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
	// Own are the target's own settings: what its Kind.Decode returned for
	// the cluster's block of publish.yaml, or a value of the same type
	// built in code (OLMOptions for the olm target); nil: the defaults.
	// Only the target's file looks inside.
	Own any
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
	// Now is the run's clock, which the olm target measures deprecation
	// periods by; nil: time.Now.
	Now func() time.Time
}

// now returns the time by s.Now, else time.Now.
func (s Settings) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
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
	// Prepare runs after the changed versions of vs were read and linted
	// and before anything is mirrored: it gathers what Render needs of the
	// other versions (state is publish/state.yaml before the run).
	Prepare(ctx context.Context, env Env, vs []*model.Version, state *gitops.State) error
	// Render writes rendered/<cluster> for arts (the merged artifacts,
	// tombstones included) into the catalog cat, in memory (the branch
	// tip's files, seeded and upgraded), and returns the render key to
	// record in publish/state.yaml. prevKey is the key recorded by the
	// last publish.
	Render(ctx context.Context, cat render.Files, arts []model.ArtifactRecord, prevKey string) (key string, err error)
	// Preview renders into cat what `publish plan` can show without any
	// registry write, and returns the warning the plan adds ("" for none).
	Preview(cat render.Files, arts []model.ArtifactRecord, prevKey string) (warning string, err error)
	// RenderFromState is `publish render`: rendered/<cluster> from arts and
	// publish/state.yaml, without registry access, into the catalog cat.
	RenderFromState(cat render.Files, arts []model.ArtifactRecord, state *gitops.State) error
}

// HistoryUser is implemented by a target that judges the delisted
// versions by the catalog's history of its cluster (the olm target's
// deprecation period). The engine asks WantsHistory after the target is
// made and, when it is true, gives it the history (catalog.Tip.History of
// the branch tip the run or plan reads) with UseHistory before Prepare,
// Render and Preview.
type HistoryUser interface {
	Target
	// WantsHistory reports whether the target reads the history (the olm
	// target: when its deprecation period is not 0).
	WantsHistory() bool
	// UseHistory gives the target the history of its cluster.
	UseHistory(h *catalog.History)
}

// Incremental is implemented by a target whose objects of one artifact
// depend only on that artifact's record and on the overlays, which
// Key identifies: `publish plan` and `publish run` then read and render
// only the artifacts a change touches, from the Git objects of the
// catalog tip (docs/design.md, "The engine"). A target without it is
// always rendered whole.
type Incremental interface {
	Target
	// Key returns the render key of the overlays in cat (a catalog that
	// holds at least its files outside rendered/ and publish/): while it
	// equals the key the last publish recorded, only changed artifacts
	// need rendering.
	Key(cat render.Files) string
	// RenderArtifacts returns the changes (paths relative to the catalog
	// root, sorted) that make the catalog of view hold the render of arts,
	// the merged records of the artifacts a change touches; every other
	// artifact is left as it is. overlays holds the catalog's files
	// outside rendered/ and publish/, which the render builds through (it
	// is not changed). Errors from the overlay and objects the CRDs reject
	// are *model.InputError.
	RenderArtifacts(view catalog.View, overlays render.Files, arts []model.ArtifactRecord) ([]catalog.Change, error)
}
