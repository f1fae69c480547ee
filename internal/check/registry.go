package check

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/registry"
)

// RuleRegistry is the rule of an image the catalog lists that is not at
// its cluster's destination registry (check --registry).
const RuleRegistry = "check/registry"

// RegistryOptions configures Registry.
type RegistryOptions struct {
	// CatalogDir is the catalog checkout, as Options.CatalogDir.
	CatalogDir string
	// Clusters are the clusters whose state is checked; empty: every
	// state file of the catalog (publish/state/<cluster>.yaml).
	Clusters []string
	// Parse parses an image reference as the command's registry client
	// does (plain HTTP for the registries given as such).
	Parse func(string) (name.Reference, error)
	// Remote are the options of every request: transport, keychain.
	Remote []remote.Option
	// Concurrency bounds the requests in flight (0: the default of
	// registry.CheckPresence).
	Concurrency int
}

// RegistryReport is what Registry found: Checked manifests (bundles,
// related images and the children of image indexes), and one Finding per
// manifest missing, holding another digest, or not checkable.
type RegistryReport struct {
	Checked  int
	Missing  int
	Unknown  int
	Findings []lint.Finding
}

// registryWant is one manifest the state lists: where (the state file and
// its line), for which version, and the manifest that listed the version.
type registryWant struct {
	registry.Want
	path, what, manifest string
	line                 int
}

// Registry checks that every image of every present version of every
// present artifact, in the state of each cluster (publish/state/), is at
// that cluster's destination: the bundle under its tag with the recorded
// digest, each related image by its recorded digest, and every child of
// an image index among them; one HEAD each (registry.CheckPresence), a GET
// only for an index. Each manifest that is missing, under a tag that moved
// (another digest), or that the registry would not show (Unknown:
// credentials, TLS, unreachable) is a Finding at the state file line that
// records its digest, naming the version and the package manifest it was
// published from. The signature, attestation and referrer manifests the
// state records for a bundle or image (the mirror records them since it
// copies them) are checked the same way, by digest in the image's
// repository. Errors: the catalog checkout cannot be read.
func Registry(ctx context.Context, o RegistryOptions) (*RegistryReport, error) {
	dir, err := filepath.Abs(o.CatalogDir)
	if err != nil {
		return nil, err
	}
	head, err := catalog.OpenDir(dir)
	if err != nil {
		return nil, &FlagError{fmt.Errorf("--catalog-dir %s: %w", o.CatalogDir, err)}
	}
	files, err := head.Files(gitops.StateDir, nil)
	if err != nil {
		return nil, err
	}
	only := map[string]bool{}
	for _, c := range o.Clusters {
		only[c] = true
	}
	rep := &RegistryReport{}
	var wants []registryWant
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		cl, ok := gitops.StateCluster(p)
		if !ok || len(only) > 0 && !only[cl] {
			continue
		}
		s, err := gitops.ParseState(p, files[p])
		if err != nil {
			rep.Findings = append(rep.Findings, lint.Finding{Rule: RuleState, Severity: lint.Error, Path: p, Line: 1, Message: err.Error()})
			continue
		}
		ws, fs := stateWants(p, files[p], s, o.Parse)
		wants = append(wants, ws...)
		rep.Findings = append(rep.Findings, fs...)
	}
	found := registry.CheckPresence(ctx, plainWants(wants), o.Concurrency, o.Remote...)
	rep.judge(wants, found)
	// The children of every index found: each must be there by digest.
	var next []registryWant
	for i, f := range found {
		if f.State != registry.Present || !f.MediaType.IsIndex() {
			continue
		}
		idx, err := remote.Index(f.Ref, append(append([]remote.Option{}, o.Remote...), remote.WithContext(ctx))...)
		var im *v1.IndexManifest
		if err == nil {
			im, err = idx.IndexManifest()
		}
		if err != nil {
			rep.Unknown++
			rep.Findings = append(rep.Findings, wants[i].finding(fmt.Sprintf("the children of index %s could not be read: %v", f.Ref, err)))
			continue
		}
		for _, m := range im.Manifests {
			w := wants[i]
			w.Want = registry.Want{Ref: f.Ref.Context().Digest(m.Digest.String())}
			w.what = fmt.Sprintf("%s: a child of %s", wants[i].what, f.Ref)
			next = append(next, w)
		}
	}
	rep.judge(next, registry.CheckPresence(ctx, plainWants(next), o.Concurrency, o.Remote...))
	sortFindings(rep.Findings)
	return rep, nil
}

// judge counts found (the answers for wants, in order) and adds a finding
// for each that is not Present.
func (r *RegistryReport) judge(wants []registryWant, found []registry.Found) {
	for i, f := range found {
		r.Checked++
		w := wants[i]
		switch f.State {
		case registry.Present:
		case registry.Missing:
			r.Missing++
			r.Findings = append(r.Findings, w.finding(fmt.Sprintf("%s is not at the destination (%s): mirror it again (publish mirror %s)", f.Ref, w.what, w.manifest)))
		case registry.Mismatch:
			r.Missing++
			r.Findings = append(r.Findings, w.finding(fmt.Sprintf("%s has digest %s at the destination, the catalog lists %s (%s): the tag was moved; mirror it again (publish mirror %s)", f.Ref, f.Digest, w.Digest, w.what, w.manifest)))
		default:
			r.Unknown++
			r.Findings = append(r.Findings, w.finding(fmt.Sprintf("%s could not be checked (%s): %v", f.Ref, w.what, f.Err)))
		}
	}
}

func (w registryWant) finding(msg string) lint.Finding {
	return lint.Finding{Rule: RuleRegistry, Severity: lint.Error, Path: w.path, Line: w.line, Message: msg}
}

func plainWants(ws []registryWant) []registry.Want {
	out := make([]registry.Want, len(ws))
	for i, w := range ws {
		out[i] = w.Want
	}
	return out
}

// stateWants lists what the state s of the file p (bytes data) says is at
// the destination: for each present version of each present artifact, its
// bundle under its tag with its digest and its related images by digest.
// A reference or digest that does not parse is a finding.
func stateWants(p string, data []byte, s *gitops.State, parse func(string) (name.Reference, error)) ([]registryWant, []lint.Finding) {
	var out []registryWant
	var bad []lint.Finding
	for _, a := range s.Artifacts {
		if !a.Present {
			continue
		}
		for _, v := range a.Versions {
			if !v.Present {
				continue
			}
			what := fmt.Sprintf("%s %s", a.Name, v.Version)
			manifest := v.Path
			if manifest == "" {
				manifest = "the package of " + a.Name
			}
			add := func(ref, digest, role string) {
				w := registryWant{path: p, what: what + ", " + role, manifest: manifest, line: lineOf(data, digest)}
				r, err := parse(ref)
				var h v1.Hash
				if err == nil && digest != "" {
					h, err = v1.NewHash(digest)
				}
				if err != nil {
					bad = append(bad, w.finding(fmt.Sprintf("%s: %v", ref, err)))
					return
				}
				w.Want = registry.Want{Ref: r, Digest: h}
				out = append(out, w)
			}
			if a.Registry != "" && a.Repository != "" && v.Tag != "" {
				add(a.Registry+"/"+a.Repository+":"+v.Tag, v.BundleDigest, "bundle")
				for _, d := range v.BundleSignatures {
					add(a.Registry+"/"+a.Repository+"@"+d, d, "a signature of the bundle")
				}
			}
			for _, img := range v.Images {
				add(img.Destination, img.Digest, "related image "+img.Source)
				for _, d := range img.Signatures {
					repo, _ := img.RepositoryTag()
					add(repo+"@"+d, d, "a signature of related image "+img.Source)
				}
			}
		}
	}
	return out, bad
}

// lineOf returns the 1-based line of data holding s first, 1 when none
// does (or s is empty).
func lineOf(data []byte, s string) int {
	if s == "" {
		return 1
	}
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 1
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// sortFindings orders findings by path, then line, in place, keeping the
// order of those at one line.
func sortFindings(fs []lint.Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Path != fs[j].Path {
			return fs[i].Path < fs[j].Path
		}
		return fs[i].Line < fs[j].Line
	})
}
