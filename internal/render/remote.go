package render

import (
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// KustomizationNames are the file names kustomize reads as a
// kustomization.
var KustomizationNames = map[string]bool{"kustomization.yaml": true, "kustomization.yml": true, "Kustomization": true}

// Remote kustomize references, as kustomize's loader recognises them
// (sigs.k8s.io/kustomize/api/internal/git.NewRepoSpecFromURL and
// loader.IsRemoteFile): a URL scheme, go-getter's git:: prefix, an
// SCP-style user@host:path, a github.com path, a ?ref= or ?version= query.
var (
	urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)
	scpStyle  = regexp.MustCompile(`^[^/@:]+@[^/:]+:`)
	gitQuery  = regexp.MustCompile(`\?(.*&)?(ref|version|timeout|submodules)=`)
)

// isRemote reports whether a resources, bases or components entry would
// make kustomize fetch (HTTP GET or git clone) instead of reading the
// catalog.
func isRemote(entry string) bool {
	e := strings.TrimSpace(entry)
	l := strings.ToLower(e)
	return urlScheme.MatchString(e) || strings.HasPrefix(l, "git::") || strings.HasPrefix(l, "gh:") ||
		scpStyle.MatchString(e) || strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:") ||
		gitQuery.MatchString(e)
}

// isURL reports whether a file entry (a patch, a generator's file) would be
// fetched over HTTP by kustomize's loader.
func isURL(entry string) bool {
	return urlScheme.MatchString(strings.TrimSpace(entry))
}

// RemoteError says that a kustomization of the catalog names something
// kustomize would fetch from the network. Path is the kustomization file
// (slash-separated, relative to the catalog root).
type RemoteError struct {
	Path, Field, Entry string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: %s entry %q is remote: publish builds only what the catalog holds (as Flux's --no-remote-bases); vendor them into the catalog (commit the files and name them by a relative path)", e.Path, e.Field, e.Entry)
}

// CheckNoRemote returns a *RemoteError for the first entry of the
// kustomization data (read from path) that kustomize would fetch:
// resources, bases, components (and crds, generators, transformers,
// validators) that are URLs or Git specs, and patch, replacement,
// generator and openapi files that are URLs. Data that does not parse is
// left to kustomize to report.
func CheckNoRemote(path string, data []byte) error {
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil
	}
	strs := func(v any) []string {
		l, _ := v.([]any)
		var out []string
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	for _, f := range []string{"resources", "bases", "components", "crds", "generators", "transformers", "validators"} {
		for _, s := range strs(k[f]) {
			if isRemote(s) {
				return &RemoteError{Path: path, Field: f, Entry: s}
			}
		}
	}
	for _, s := range strs(k["patchesStrategicMerge"]) {
		if isURL(s) {
			return &RemoteError{Path: path, Field: "patchesStrategicMerge", Entry: s}
		}
	}
	for _, f := range []string{"patches", "patchesJson6902", "replacements"} {
		l, _ := k[f].([]any)
		for _, x := range l {
			m, _ := x.(map[string]any)
			if s, ok := m["path"].(string); ok && isURL(s) {
				return &RemoteError{Path: path, Field: f + ".path", Entry: s}
			}
		}
	}
	for _, f := range []string{"configMapGenerator", "secretGenerator"} {
		l, _ := k[f].([]any)
		for _, x := range l {
			m, _ := x.(map[string]any)
			files := append(strs(m["files"]), strs(m["envs"])...)
			if s, ok := m["env"].(string); ok {
				files = append(files, s)
			}
			for _, s := range files {
				if _, v, ok := strings.Cut(s, "="); ok && !urlScheme.MatchString(s) {
					s = v
				}
				if isURL(s) {
					return &RemoteError{Path: path, Field: f, Entry: s}
				}
			}
		}
	}
	if m, ok := k["openapi"].(map[string]any); ok {
		if s, ok := m["path"].(string); ok && isURL(s) {
			return &RemoteError{Path: path, Field: "openapi.path", Entry: s}
		}
	}
	return nil
}
