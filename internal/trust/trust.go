// Package trust reads what a pull request must not decide: the settings of
// publish.yaml that choose where credentials go, and the registries the
// package manifests name, at the pull request's base revision (its merge
// base with the target branch, internal/diff.ResolveBase). `publish plan`,
// `publish check` and `publish lint` run on pull requests with the
// workflow's credentials; the pull request controls the working tree, so
// these come from the base instead (docs/security.md).
package trust

import (
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/source"
)

// maxFile caps what is read of one file at the base, as the scan of the
// working tree caps manifests.
const maxFile = manifest.MaxFileSize

// Base is what the base revision says.
type Base struct {
	// Commit is the base commit.
	Commit string
	// Config is publish.yaml at the base; nil when the base has none.
	Config *config.Config
	// ConfigOutside is true when the configuration file given is outside
	// the work tree: the workflow's own file, which no pull request
	// changes (Config is nil then).
	ConfigOutside bool
	// SourceHosts are the registries (host[:port], as
	// go-containerregistry names them) that the base's package manifests
	// name in spec.artifact and spec.relatedImages, sorted; empty, not
	// nil, when they name none.
	SourceHosts []string
}

// Read reads the base commit of the Git repository holding dir (dir may be
// a subdirectory of its work tree): configFile and packagesDir are paths
// as the command line gives them (relative to the working directory, or
// absolute), inside that work tree. A manifest that does not parse at the
// base is skipped (it named no registry the base trusted). Errors: the
// repository or the commit cannot be read, a packagesDir outside the work
// tree, a publish.yaml at the base that does not load (config.Parse). A
// configFile outside the work tree is not read (Base.ConfigOutside).
func Read(dir, commit, configFile, packagesDir string) (*Base, error) {
	repo, err := source.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the base revision: %s: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("reading the base revision: %s: %w", dir, err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("reading the base revision %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading the base revision %s: %w", commit, err)
	}
	root := wt.Filesystem.Root()
	b := &Base{Commit: commit, SourceHosts: []string{}}
	if rel, err := inTree(root, configFile); configFile != "" && err != nil {
		b.ConfigOutside = true
	} else if configFile != "" {
		data, err := fileAt(tree, rel)
		if err != nil && !errors.Is(err, object.ErrFileNotFound) {
			return nil, fmt.Errorf("%s at the base revision %s: %w", rel, short(commit), err)
		}
		if err == nil {
			if b.Config, err = config.Parse(rel+" (at the base revision "+short(commit)+")", data); err != nil {
				return nil, err
			}
		}
	}
	rel, err := inTree(root, packagesDir)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	walkErr := tree.Files().ForEach(func(f *object.File) error {
		if path.Base(f.Name) != "manifest.yaml" || (rel != "." && !strings.HasPrefix(f.Name, rel+"/")) || f.Size > maxFile {
			return nil
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(r, maxFile))
		r.Close()
		if err != nil {
			return err
		}
		m, err := manifest.Parse(f.Name, data)
		if err != nil || m == nil {
			return nil
		}
		for _, ref := range append([]string{m.Spec.Artifact}, m.Spec.RelatedImages...) {
			if r, err := name.ParseReference(ref); err == nil {
				set[r.Context().RegistryStr()] = true
			}
		}
		return nil
	})
	if walkErr != nil {
		return nil, fmt.Errorf("reading the manifests of the base revision %s: %w", short(commit), walkErr)
	}
	for h := range set {
		b.SourceHosts = append(b.SourceHosts, h)
	}
	sort.Strings(b.SourceHosts)
	return b, nil
}

// inTree returns p relative to the work tree root (slash-separated, "."
// for the root). Errors: p outside it.
func inTree(root, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(d, filepath.Base(abs))
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the package repo's work tree %s", p, root)
	}
	return filepath.ToSlash(rel), nil
}

func fileAt(tree *object.Tree, rel string) ([]byte, error) {
	f, err := tree.File(rel)
	if err != nil {
		return nil, err
	}
	if f.Size > maxFile {
		return nil, fmt.Errorf("larger than %d bytes", maxFile)
	}
	s, err := f.Contents()
	return []byte(s), err
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
