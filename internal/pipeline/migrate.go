package pipeline

import (
	"bytes"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/render"
)

// overlayBaseRE matches the resources entry of an overlay that names the
// generated base of the layout before state per cluster: one shared
// publish/generated (docs/design.md#catalog-layout).
var overlayBaseRE = regexp.MustCompile(`(?m)^(\s*-\s*)(\.\./\.\./\.\./publish/generated)/?(\s*(#.*)?)$`)

// migrateCatalog upgrades, in place, the catalog cat (in memory) written
// before state per cluster: one publish/state.yaml (gitops.LegacyStatePath)
// and one base publish/generated for every cluster. It writes the state
// file of every cluster the old one records (gitops.State.Split; an
// existing one is kept), copies the old base to publish/generated/<cluster>
// of each (render.GeneratedBase), rewrites every overlay's
// ../../../publish/generated to ../../../publish/generated/<cluster>, and
// removes the old state file and base. The caller commits the result with
// the run's render, in one commit. It reports whether anything was
// upgraded; a catalog already in the current layout is left as it is.
// Errors: the old state file does not parse (*InputError).
func migrateCatalog(cat render.Files) (bool, error) {
	data, ok := cat[gitops.LegacyStatePath]
	if !ok {
		return false, nil
	}
	old, err := gitops.ParseLegacyState(data)
	if err != nil {
		return false, inputErr(err)
	}
	per := old.Split()
	// The old base: the files directly below publish/generated (its
	// kustomization) and those of its artifact directories, not the
	// bases of clusters.
	oldGen := map[string][]byte{}
	genPrefix := render.GeneratedDir + "/"
	if _, ok := cat[genPrefix+"kustomization.yaml"]; ok {
		for p, b := range cat {
			if rel, ok := strings.CutPrefix(p, genPrefix); ok {
				oldGen[rel] = b
				delete(cat, p)
			}
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
