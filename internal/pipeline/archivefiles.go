package pipeline

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
)

// archiveImages returns the images an archive of the selected versions
// holds: each related image and bundle once per reference and tag (a bundle
// pinned by digest gets its ArtifactVersion tag, as in publish run), with
// the platforms of every manifest that names it (platforms, or the
// manifests' spec.arch for PlatformsFromSpec; none: the whole index) and
// the artifacts that need it, sorted by reference.
func archiveImages(selected []*model.Version, platforms []string) []archive.Image {
	// One image entry per reference; the platforms of every manifest that
	// names it.
	type entry struct {
		img   archive.Image
		plats map[string]bool
	}
	byRef := map[string]*entry{}
	var refs []string
	add := func(ref, tag string, isBundle bool, arch []string, artifact string) {
		k := ref + "\x00" + tag
		e, ok := byRef[k]
		if !ok {
			e = &entry{img: archive.Image{Ref: ref, Tag: tag, Bundle: isBundle}, plats: map[string]bool{}}
			byRef[k] = e
			refs = append(refs, k)
		}
		e.img.Bundle = e.img.Bundle || isBundle
		if !slices.Contains(e.img.Artifacts, artifact) {
			e.img.Artifacts = append(e.img.Artifacts, artifact)
		}
		plats := platforms
		if len(plats) == 1 && plats[0] == PlatformsFromSpec {
			plats = arch
		}
		for _, p := range plats {
			e.plats[p] = true
		}
		if len(plats) == 0 {
			e.plats[""] = true // someone wants the whole index
		}
	}
	for _, v := range selected {
		m := v.Manifest
		for _, r := range v.Images {
			add(r, "", false, m.Spec.Arch, m.Artifact)
		}
		// A bundle (or OCI chart) pinned by digest gets its
		// ArtifactVersion tag at the destination, as in `publish run`.
		tag := ""
		if !hasTag(v.Ref()) {
			tag = m.Tag()
		}
		add(v.Ref(), tag, true, m.Spec.Arch, m.Artifact)
	}
	sort.Strings(refs)
	var images []archive.Image
	for _, k := range refs {
		e := byRef[k]
		if !e.plats[""] {
			for p := range e.plats {
				e.img.Platforms = append(e.img.Platforms, p)
			}
			sort.Strings(e.img.Platforms)
		}
		images = append(images, e.img)
	}
	return images
}

// archiveFiles returns the PackageManifests of ms as archive files, by
// path below the packages directory (packagesDir of source). Errors: a
// manifest that cannot be read (*InputError).
func archiveFiles(source, packagesDir string, ms []*manifest.PackageManifest) ([]archive.File, error) {
	var files []archive.File
	root := packagesRoot(source, packagesDir)
	for _, m := range ms {
		data, err := os.ReadFile(filepath.Join(source, m.Path))
		if err != nil {
			return nil, inputErr(err)
		}
		rel, err := filepath.Rel(root, filepath.Join(source, m.Path))
		if err != nil || strings.HasPrefix(rel, "..") {
			rel = m.Artifact + "/" + m.Version.String() + "/manifest.yaml"
		}
		files = append(files, archive.File{Path: filepath.ToSlash(rel), Data: data})
	}
	return files, nil
}
