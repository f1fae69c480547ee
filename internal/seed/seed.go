// Package seed prepares a catalog in memory (render.Files, the files of the
// catalog branch tip) for a publish: the upgrade of the layout before state
// per cluster (Migrate), and the state of the cluster, with the guard
// against publishing into someone else's repo, the template and overlays a
// first publish adds and the overlay check (Prepare). Nothing here reads or
// writes a disk: the caller commits what changed (docs/design.md, "The
// catalog repo layout").
package seed

import (
	"bytes"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/operator-publish/publish"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// seedOverlay adds, in a catalog cat seeded by its first publish, the
// overlay of cluster when the template has none: the template's global
// overlay, for cluster (its generated base, its name).
func seedOverlay(cat render.Files, cluster string) error {
	if cat.HasDir(render.ClustersDir + "/" + cluster) {
		return nil
	}
	data, err := publish.CatalogTemplate.ReadFile("catalog-repo-template/" + render.ClustersDir + "/global/kustomization.yaml")
	if err != nil {
		return err
	}
	cat[render.ClustersDir+"/"+cluster+"/kustomization.yaml"] = []byte(strings.ReplaceAll(string(data), "global", cluster))
	return nil
}

// otherStates reports whether the catalog cat holds the state file of a
// cluster other than cluster.
func otherStates(cat render.Files, cluster string) bool {
	for p := range cat {
		if c, ok := gitops.StateCluster(p); ok && c != cluster {
			return true
		}
	}
	return false
}

// Template adds to the catalog cat every file of the template a new
// catalog starts with (catalog-repo-template, built into the binary) that
// cat lacks; the files it has are kept.
func Template(cat render.Files) error {
	return gitops.Seed(cat, publish.CatalogTemplate, "catalog-repo-template")
}

// Options say what Prepare prepares the catalog for.
type Options struct {
	// Cluster is the cluster published; RunClusters the others of the
	// same run, whose overlays a first publish seeds too (the render key
	// covers every overlay).
	Cluster     string
	RunClusters []string
	// Empty: the catalog branch has no commit yet.
	Empty bool
	// Overlays: the cluster's target renders through its kustomize overlay
	// (target.Target.Kustomize), which must exist and which a first
	// publish seeds.
	Overlays bool
	// Catalog is the catalog repo's options (--catalog, --catalog-path,
	// --init-catalog), for the not-a-catalog guard.
	Catalog gitops.Options
}

// Prepare reads the cluster's state of the catalog cat (in memory: the
// files of the branch tip), refuses a catalog that is someone else's
// project (gitops.CheckCatalog), seeds a first publish from the template
// (catalog-repo-template) and, with o.Overlays, checks the cluster's
// overlay. It returns the state read. Errors the user fixes (a state file
// that does not parse, not a catalog, a missing overlay) are
// *model.InputError.
func Prepare(cat render.Files, o Options) (*gitops.State, error) {
	state, err := gitops.ReadState(cat, o.Cluster)
	if err == nil {
		// A repo with files but no state is someone else's project (or the
		// package repo itself): refused before anything is mirrored, unless
		// the user said so (--init-catalog, or an absent or empty
		// --catalog-path).
		if cerr := gitops.CheckCatalog(gitops.HasState(cat), gitops.Entries(cat), o.Catalog); cerr != nil {
			return nil, model.Input(cerr)
		}
	}
	// A cluster new to a catalog that others were published to seeds
	// nothing: the template's files were added by the first publish.
	if err == nil && (o.Empty || len(state.Artifacts) == 0 && !otherStates(cat, o.Cluster)) {
		// First publish: add the template's files that the repo lacks.
		err = Template(cat)
		// Every cluster of the run gets its overlay, in every cluster's
		// scope: the render key covers every overlay.
		for _, c := range append([]string{o.Cluster}, o.RunClusters...) {
			if err == nil && o.Empty && o.Overlays {
				err = seedOverlay(cat, c)
			}
		}
	} else if err != nil {
		err = model.Input(err)
	}
	if err == nil && o.Overlays {
		if oerr := render.CheckOverlay(cat, o.Cluster); oerr != nil {
			err = model.Input(oerr)
		}
	}
	if err != nil {
		return nil, err
	}
	return state, nil
}

// overlayBaseRE matches the resources entry of an overlay that names the
// generated base of the layout before state per cluster: one shared
// publish/generated (docs/design.md#catalog-layout).
var overlayBaseRE = regexp.MustCompile(`(?m)^(\s*-\s*)(\.\./\.\./\.\./publish/generated)/?(\s*(#.*)?)$`)

// Migrate upgrades, in place, the catalog cat (in memory) written
// before state per cluster: one publish/state.yaml (gitops.LegacyStatePath)
// and one base publish/generated for every cluster. It writes the state
// file of every cluster the old one records (gitops.State.Split; an
// existing one is kept), copies the old base to publish/generated/<cluster>
// of each that has none (render.GeneratedBase), rewrites every overlay's
// ../../../publish/generated to ../../../publish/generated/<cluster>, and
// removes the old state file and base. The caller commits the result with
// the run's render, in one commit. It reports whether anything was
// upgraded; a catalog already in the current layout is left as it is.
// Errors: the old state file does not parse (*InputError).
func Migrate(cat render.Files) (bool, error) {
	data, ok := cat[gitops.LegacyStatePath]
	if !ok {
		return false, nil
	}
	old, err := gitops.ParseLegacyState(data)
	if err != nil {
		return false, model.Input(err)
	}
	per := old.Split()
	// The old base: the files directly below publish/generated (its
	// kustomization) and those of its artifact directories, not the
	// bases of clusters (a directory with its own kustomization.yaml,
	// which no artifact directory has), which stay as they are.
	oldGen := map[string][]byte{}
	genPrefix := render.GeneratedDir + "/"
	if _, ok := cat[genPrefix+"kustomization.yaml"]; ok {
		for p, b := range cat {
			rel, ok := strings.CutPrefix(p, genPrefix)
			if !ok {
				continue
			}
			if dir, _, nested := strings.Cut(rel, "/"); nested {
				if _, base := cat[render.GeneratedKustomization(dir)]; base {
					continue
				}
			}
			oldGen[rel] = b
			delete(cat, p)
		}
	}
	clusters := slices.Sorted(maps.Keys(per))
	for _, c := range clusters {
		if _, ok := cat[gitops.StatePath(c)]; !ok {
			b, err := per[c].Marshal()
			if err != nil {
				return false, err
			}
			cat[gitops.StatePath(c)] = b
		}
		if _, ok := cat[render.GeneratedKustomization(c)]; ok {
			continue // the cluster's own base, kept
		}
		for rel, b := range oldGen {
			cat[render.GeneratedBase(c)+"/"+rel] = b
		}
	}
	for p, b := range cat {
		rest, ok := strings.CutPrefix(p, render.ClustersDir+"/")
		name, k, nested := strings.Cut(rest, "/")
		if !ok || !nested || !render.KustomizationNames[k] {
			continue
		}
		if nb := overlayBaseRE.ReplaceAll(b, []byte("${1}${2}/"+name+"${3}")); !bytes.Equal(nb, b) {
			cat[p] = nb
		}
	}
	delete(cat, gitops.LegacyStatePath)
	return true, nil
}
