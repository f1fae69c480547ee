// Package kind holds the kinds of package publish knows, keyed by the
// PackageManifest's spec.type (docs/design.md, "Inside a run: Version and
// Artifact"): what reading a version's artifact means, what it gives the
// version (model.Content: the images it deploys, the display facts) and
// what the lint engine checks of it. Bundles (spec.type bundle, bundle.go)
// and Helm charts (spec.type chart, chart.go) are the kinds today. The stages dispatch through Read and Lint and a
// version's Content, so that a new kind is one new file and its
// registration, not a branch in every stage.
package kind

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// Kind is one kind of package: the versions whose manifest's spec.type is
// Name. Implementations hold no state of a run.
type Kind interface {
	// Name is the spec.type of the manifests of this kind ("bundle").
	Name() string
	// Key identifies what Read reads for v in env: versions with the same
	// key (within one kind) get the same content, so a Cache reads it
	// once for every cluster of a run (a bundle: its spec.artifact). A
	// kind whose content depends on the cluster (env.Cluster) puts what it
	// depends on in the key.
	Key(env Env, v *model.Version) string
	// Read reads the artifact of each of vs (all of this kind) and records
	// in each version its content (model.Version.SetContent) or why the
	// artifact cannot be used (SetReadErr: a finding of the manifest, exit
	// code 1). The error is the registry failures (exit code 2), each
	// naming the manifest; the versions it names are left unread.
	Read(ctx context.Context, env Env, vs []*model.Version) error
	// Lint adds to in what the lint engine checks of v for env's cluster:
	// its content or the error reading it (v may be unread: nothing to
	// add).
	Lint(in *lint.Input, env Env, v *model.Version)
}

// Env is what a kind may use to read and lint artifacts: the registry
// client of the command (its source side: credentials, CA, plain-HTTP
// hosts) and the cluster the versions are read for.
type Env struct {
	Client *mirror.Client
	// Cluster names the cluster whose selection is read (publish.yaml
	// clusters.<name>; the run's or plan's); "" for a command over no
	// cluster (lint, mirror, package), which reads what every cluster
	// shares.
	Cluster string
	// Values returns the values file publish.yaml gives a chart artifact
	// on a cluster (clusters.<cluster>.values.<artifact>), nil when there
	// is none; the error is the file that cannot be read (an input
	// error). Nil: no values file anywhere (the charts' own values).
	Values func(cluster, artifact string) (*ValuesFile, error)
	// KubeVersion is the Kubernetes version of Cluster (publish.yaml
	// clusters.<cluster>.kubernetesVersion): charts are rendered for it
	// and their kubeVersion constraint checked against it; "": the fixed
	// KubeVersion, no constraint checked.
	KubeVersion string
	// Prelint, when set, lints each bundle's own rules as soon as it is
	// read and then keeps of it only what later stages read (see
	// Prelint); nil keeps every bundle whole until the command ends.
	Prelint *Prelint
}

// Prelint is how a command that reads many bundles keeps its memory
// bounded: each bundle is linted alone as it is read, in the reading
// goroutine (lint.BundleRules), its findings are kept with the version's
// content and given to the lint engine (lint.Input.Prelinted), and, with
// Slim, the bundle is then made slim (bundle.Slim: tens of KiB instead of
// megabytes), or condensed (Condense: the OLM target keeps its
// olm.bundle). A command whose later stages need whole bundles (the OLM
// target's catalog in the olm.bundle.object format) sets no Slim.
type Prelint struct {
	// Config is the lint configuration (publish.yaml lint).
	Config lint.Config
	// Files are the manifest files by path (manifest.File.Path): a version
	// whose manifest is not among them is read whole and linted later.
	Files map[string][]byte
	// Slim makes each bundle linted slim.
	Slim bool
	// SlimOnly makes each bundle slim as soon as it is read, without
	// linting it (Config and Files unused): a command that lints nothing
	// and needs no object of the bundles (package, mirror).
	SlimOnly bool
	// Condense, with Slim, makes each bundle linted slim in Slim's place
	// (bundle.Slim) for a target that keeps something else of it first
	// (the olm target: its olm.bundle, olm.Condense); the bundle of version
	// v in, true when it made it slim, false when it left it whole (not
	// cached then). Nil: bundle.Slim.
	Condense func(v *model.Version, b *bundle.Bundle) bool
	// Progress, when set, is told of each bundle done (read, failed or
	// found in Cache: cached), from the reading goroutine.
	Progress func(cached bool)
	// Cache, with Slim, keeps each bundle's findings and slim bundle (a
	// condensed one under a key of its own) by its digest, so that a
	// bundle linted before is not read again; nil: none.
	Cache *LintCache
}

var (
	mu    sync.RWMutex
	kinds = map[string]Kind{bundleKind{}.Name(): bundleKind{}, chartKind{}.Name(): chartKind{}}
)

// Register makes k the kind of the manifests whose spec.type is k.Name(),
// replacing the kind of that name if any; restore puts the registry back
// as it was (tests register a kind of their own this way).
func Register(k Kind) (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	name := k.Name()
	prev, had := kinds[name]
	kinds[name] = k
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if had {
			kinds[name] = prev
		} else {
			delete(kinds, name)
		}
	}
}

// Lookup returns the kind registered under name (a spec.type), false when
// there is none.
func Lookup(name string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Of returns the kind of v (model.Version.Kind). The error, when no kind
// is registered under its spec.type, is an input error naming the manifest.
func Of(v *model.Version) (Kind, error) {
	if k, ok := Lookup(v.Kind()); ok {
		return k, nil
	}
	return nil, model.Input(fmt.Errorf("%s:%d: spec.type %q: no such kind of package", v.Manifest.Path, v.Manifest.Lines["spec.type"], v.Kind()))
}

// group is the versions of one kind, in their order.
type group struct {
	kind Kind
	vs   []*model.Version
}

// byKind splits vs by kind, kinds in the order of their first version.
// Versions of no registered kind are left out, each with its error (Of).
func byKind(vs []*model.Version) ([]group, []error) {
	var out []group
	at := map[string]int{}
	var errs []error
	for _, v := range vs {
		k, err := Of(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		i, ok := at[k.Name()]
		if !ok {
			i = len(out)
			at[k.Name()] = i
			out = append(out, group{kind: k})
		}
		out[i].vs = append(out[i].vs, v)
	}
	return out, errs
}

// Read reads the artifacts of vs, each through its kind (Kind.Read), the
// versions of one kind together. The error joins the registry failures of
// every kind and, for a version of no registered kind, an input error
// naming its manifest (that version is left unread).
func Read(ctx context.Context, env Env, vs []*model.Version) error {
	groups, errs := byKind(vs)
	for _, g := range groups {
		err := g.kind.Read(ctx, env, g.vs)
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = append(errs, j.Unwrap()...) // one list, not nested
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Lint adds to in what the lint engine checks of each of vs for env's
// cluster, through its kind (Kind.Lint); a version of no registered kind
// adds nothing (the manifest rules report its spec.type).
func Lint(in *lint.Input, env Env, vs []*model.Version) {
	for _, v := range vs {
		if k, err := Of(v); err == nil {
			k.Lint(in, env, v)
		}
	}
}

// Cache is what the clusters of one run share of the artifacts read: a
// version whose kind and key (Kind.Key) were read for another cluster gets
// that content (or read error) without reading it again. Safe for
// concurrent use; Read calls of different clusters for the same key may
// both read it.
type Cache struct {
	mu   sync.Mutex
	read map[string]*model.Version
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{read: map[string]*model.Version{}} }

// Read reads the artifacts of vs that no earlier Read of c read (the
// package-level Read) and gives the others what was read. The error is
// Read's; what a failing registry did not give is not remembered.
func (c *Cache) Read(ctx context.Context, env Env, vs []*model.Version) error {
	var todo []*model.Version
	keys := map[*model.Version]string{}
	c.mu.Lock()
	for _, v := range vs {
		k, err := Of(v)
		if err != nil {
			todo = append(todo, v) // Read says why
			continue
		}
		key := k.Name() + "\x00" + k.Key(env, v)
		if env.Prelint != nil {
			// Prelinted findings point into the manifest they were
			// linted for: another manifest naming the same artifact
			// reads and lints its own.
			key += "\x00" + v.Manifest.Path
			if env.Prelint.Slim || env.Prelint.SlimOnly {
				key += "\x00slim" // a cluster that needs it whole reads it whole
				if env.Prelint.Condense != nil {
					key += "\x00condensed"
				}
			}
		}
		got := c.read[key]
		switch {
		case got == nil:
			keys[v] = key
			todo = append(todo, v)
		case got.ReadErr != nil:
			v.SetReadErr(got.ReadErr)
		default:
			v.SetContent(got.Content)
		}
	}
	c.mu.Unlock()
	err := Read(ctx, env, todo)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range todo {
		if key, ok := keys[v]; ok && v.Read() {
			c.read[key] = v
		}
	}
	return err
}
