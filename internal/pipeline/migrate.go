package pipeline

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/operator-publish/publish/internal/checkout"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/render"
)

// overlayBaseRE matches the resources entry of an overlay that names the
// generated base of the layout before state per cluster: one shared
// publish/generated (docs/design.md#catalog-layout).
var overlayBaseRE = regexp.MustCompile(`(?m)^(\s*-\s*)(\.\./\.\./\.\./publish/generated)/?(\s*(#.*)?)$`)

// migrateCatalog upgrades, in place, the catalog root dir written before
// state per cluster: one publish/state.yaml (gitops.LegacyStatePath) and
// one base publish/generated for every cluster. It writes the state file
// of every cluster the old one records (gitops.State.Split; an existing
// one is kept), copies the old base to publish/generated/<cluster> of each
// (render.GeneratedBase), rewrites every overlay's
// ../../../publish/generated to ../../../publish/generated/<cluster>, and
// removes the old state file and base. The caller commits the result with
// the run's render, in one commit. It reports whether anything was
// upgraded; a catalog already in the current layout is left as it is.
// Errors: the old state file does not parse (*InputError).
func migrateCatalog(dir string) (bool, error) {
	legacy := filepath.Join(dir, filepath.FromSlash(gitops.LegacyStatePath))
	data, err := os.ReadFile(legacy)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	old, err := gitops.ParseLegacyState(data)
	if err != nil {
		return false, inputErr(err)
	}
	per := old.Split()
	genRoot := filepath.Join(dir, filepath.FromSlash(render.GeneratedDir))
	oldGen := map[string][]byte{}
	if _, err := os.Stat(filepath.Join(genRoot, "kustomization.yaml")); err == nil {
		err := filepath.WalkDir(genRoot, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, _ := filepath.Rel(genRoot, p)
			b, err := os.ReadFile(p)
			oldGen[filepath.ToSlash(rel)] = b
			return err
		})
		if err != nil {
			return false, err
		}
		if err := checkout.RemoveAll(dir, render.GeneratedDir); err != nil {
			return false, err
		}
	}
	clusters := make([]string, 0, len(per))
	for c := range per {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	files := map[string][]byte{}
	for _, c := range clusters {
		sp := filepath.Join(dir, filepath.FromSlash(gitops.StatePath(c)))
		if _, err := os.Stat(sp); err != nil {
			b, err := per[c].Marshal()
			if err != nil {
				return false, err
			}
			files[gitops.StatePath(c)] = b
		}
		for rel, b := range oldGen {
			files[render.GeneratedBase(c)+"/"+rel] = b
		}
	}
	overlays, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(render.ClustersDir)))
	for _, o := range overlays {
		if !o.IsDir() {
			continue
		}
		for _, k := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
			p := render.ClustersDir + "/" + o.Name() + "/" + k
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil {
				continue
			}
			if nb := overlayBaseRE.ReplaceAll(b, []byte("${1}${2}/"+o.Name()+"${3}")); !bytes.Equal(nb, b) {
				files[p] = nb
			}
		}
	}
	if err := writeFiles(dir, files); err != nil {
		return false, err
	}
	return true, checkout.RemoveAll(dir, gitops.LegacyStatePath)
}
