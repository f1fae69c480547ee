package importer

import (
	"context"
	"fmt"
	"github.com/operator-publish/publish/internal/scratch"
	"os"
	"path/filepath"
	"sort"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/scaffold"
)

// Skeletons are the PackageManifests import writes into the package repo,
// read and rendered before anything is written (Stage), written after
// the catalog commit (Write).
type Skeletons struct {
	// Dir is the packages directory they go to.
	Dir string
	// Files maps a path below Dir (<artifact>/<version>/manifest.yaml) to
	// its content.
	Files map[string][]byte
	// Kept are the paths below Dir that exist already: left as they are.
	Kept []string
	// Refs maps a path below Dir to the bundle it was made from.
	Refs map[string]string
}

// Stage makes, for every listed version of every listed artifact of arts,
// the PackageManifest `publish create` writes (scaffold.Create) for its
// bundle at the destination, <registry>/<repository>:<tag>: its
// spec.artifact is that reference. Nothing is written to dir: the
// manifests are made in a temporary directory. m holds the registry
// options (credentials for the destination registry as source
// credentials, CA file, plain HTTP); its SrcHosts are set to the
// artifacts' registries. Errors name the bundle; a bundle that is missing
// or not a bundle is a *scaffold.InputError.
func Stage(ctx context.Context, arts []model.ArtifactRecord, dir string, m mirror.Options) (*Skeletons, error) {
	tmp, err := scratch.MkdirTemp("", "import")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	s := &Skeletons{Dir: dir, Files: map[string][]byte{}, Refs: map[string]string{}}
	hosts := map[string]bool{}
	for _, a := range arts {
		hosts[a.Registry] = true
	}
	m.SrcHosts = nil
	for h := range hosts {
		m.SrcHosts = append(m.SrcHosts, h)
	}
	sort.Strings(m.SrcHosts)
	for _, a := range arts {
		if !a.Present {
			continue
		}
		for _, v := range a.Versions {
			if !v.Present {
				continue
			}
			rel := filepath.ToSlash(filepath.Join(a.Name, v.Version, "manifest.yaml"))
			ref := a.Registry + "/" + a.Repository + ":" + v.Tag
			s.Refs[rel] = ref
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil {
				s.Kept = append(s.Kept, rel)
				continue
			}
			out := filepath.Join(tmp, a.Name, v.Version)
			p, err := scaffold.Create(ctx, scaffold.Options{Dir: out, Artifact: ref, Mirror: m})
			if err != nil {
				return nil, fmt.Errorf("PackageManifest of %s %s (ArtifactVersion %s) from %s: %w", a.Name, v.Version, v.ObjectName, ref, err)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			s.Files[rel] = data
		}
	}
	return s, nil
}

// Paths returns the paths below Dir that Write writes, sorted.
func (s *Skeletons) Paths() []string {
	out := make([]string, 0, len(s.Files))
	for p := range s.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Write writes the staged manifests below Dir (creating directories),
// never over a file that exists by then.
func (s *Skeletons) Write() error {
	for _, rel := range s.Paths() {
		p := filepath.Join(s.Dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("writing the PackageManifest %s: %w", p, err)
		}
		_, err = f.Write(s.Files[rel])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing the PackageManifest %s: %w", p, err)
		}
	}
	return nil
}
