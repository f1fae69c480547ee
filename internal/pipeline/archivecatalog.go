package pipeline

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"sigs.k8s.io/yaml"
)

// catalogLocations returns, sorted, the bundle locations REGISTRY/REPOSITORY
// that the Artifacts among files (an OCI catalog's rendered/<cluster>)
// name exactly as arts (the catalog's state) records them: those the
// cluster's overlay left as they are, which are the connected side's
// registry. An Artifact the overlay rewrote (a registry name the site sees
// differently, docs/airgap.md) is not among them.
func catalogLocations(files map[string][]byte, arts []model.ArtifactRecord) []string {
	recorded := map[string]bool{}
	for _, a := range arts {
		recorded[a.Registry+"/"+a.Repository] = true
	}
	seen := map[string]bool{}
	var out []string
	for p, data := range files {
		if !strings.HasPrefix(path.Base(p), "artifact_") {
			continue
		}
		var obj struct {
			Kind string
			Spec struct{ Registry, Repository string }
		}
		if yaml.Unmarshal(data, &obj) != nil || obj.Kind != "Artifact" {
			continue
		}
		if l := obj.Spec.Registry + "/" + obj.Spec.Repository; recorded[l] && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// checkCatalogLocations stops the push of an OCI catalog (e) whose
// Artifacts name, as the connected side's catalog state records them,
// bundle locations other than those this push puts the bundles in (mc's
// destination): the site's cluster would pull from the connected side's
// registry. A location is checked against the bundle of the archive with
// the same source repository path when there is one, else by its host.
func checkCatalogLocations(mc *mirror.Client, e archive.IndexEntry, images []archive.IndexEntry) error {
	locs := e.CatalogLocations()
	if len(locs) == 0 {
		return nil
	}
	site := mc.DstHost()
	var bundles []struct{ path, dst string }
	for _, im := range images {
		if !im.Bundle || im.Catalog != "" {
			continue
		}
		src, err := mc.ParseReference(im.Ref)
		if err != nil {
			return err
		}
		d, err := mc.Destination(src)
		if err != nil {
			return err
		}
		bundles = append(bundles, struct{ path, dst string }{src.Context().RepositoryStr(), d.Context().Name()})
	}
	var wrong []string
	for _, l := range locs {
		host, _, _ := strings.Cut(l, "/")
		want := ""
		for _, b := range bundles {
			if l == b.dst || strings.HasSuffix(l, "/"+b.path) {
				want = b.dst
				break
			}
		}
		switch {
		case want != "" && l != want:
			wrong = append(wrong, l+" (pushed to "+want+")")
		case want == "" && host != site:
			wrong = append(wrong, l)
		}
	}
	if len(wrong) == 0 {
		return nil
	}
	connected, _, _ := strings.Cut(wrong[0], "/")
	more := ""
	if len(wrong) > 3 {
		wrong, more = wrong[:3], fmt.Sprintf(" and %d more", len(wrong)-3)
	}
	return inputErr(fmt.Errorf("its Artifacts name the connected side's registry %s, as the catalog's state records it (%s%s), but this push puts the bundles in %s (--dst-registry): the cluster would pull from a registry it cannot reach. "+
		"On the connected side, patch spec.registry (and spec.repository) of the Artifacts to where the site has them in the overlay kustomize/clusters/%s and run publish package again (docs/airgap.md); or push with --catalog to render the catalog on the site",
		connected, strings.Join(wrong, ", "), more, site, e.Catalog))
}
