package render

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/kio"
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

// remoteFields hold entries that kustomize fetches when they are remote
// (isRemote); fileFields hold files its loader reads, over HTTP when they
// are URLs (isURL): patches, transformer configurations, generator
// files, and the path fields of builtin plugin configurations
// (PatchTransformer, ReplacementTransformer, ConfigMapGenerator, ...).
// Keys match in any case, as kustomize's decoding (JSON, after YAML)
// matches them: RESOURCES is resources to kustomize.
var (
	remoteFields = []string{"resources", "bases", "components", "crds", "generators", "transformers", "validators"}
	fileFields   = []string{"patchesStrategicMerge", "configurations", "path", "paths", "files", "envs", "env", "valuesFile", "additionalValuesFiles"}
	// pluginFields may hold a builtin plugin's configuration inline.
	pluginFields = []string{"generators", "transformers", "validators"}
)

// CheckNoRemote returns a *RemoteError for the first entry of the
// kustomization data (read from path) that kustomize would fetch:
// resources, bases, components (and crds, generators, transformers,
// validators) that are URLs or Git specs, and patch, replacement,
// configuration, generator and openapi files that are URLs, under keys
// in any case, inline plugin configurations included. Data that does not
// parse is left to kustomize to report.
func CheckNoRemote(path string, data []byte) error {
	var k any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil
	}
	if field, entry := findRemote("", k); field != "" {
		return &RemoteError{Path: path, Field: field, Entry: entry}
	}
	return nil
}

// CheckNoRemotePlugin returns a *RemoteError for the first file that a
// builtin plugin configuration (apiVersion: builtin) among the documents
// of data (a file of the catalog, read from path) names by URL: a
// kustomization's generators and transformers may name the file, or the
// directory of a kustomization listing it. Data that does not parse is
// left to kustomize to report.
func CheckNoRemotePlugin(path string, data []byte) error {
	if !bytes.Contains(data, []byte("builtin")) {
		return nil
	}
	nodes, err := kio.FromBytes(data)
	if err != nil {
		return nil
	}
	for _, n := range nodes {
		if n.GetApiVersion() != konfig.BuiltinPluginApiVersion {
			continue
		}
		m, err := n.Map()
		if err != nil {
			continue
		}
		if field, entry := findRemote("", m); field != "" {
			return &RemoteError{Path: path, Field: field, Entry: entry}
		}
	}
	return nil
}

// findRemote returns the field (keys joined by dots) and the entry of the
// first remote entry below v, a decoded kustomization or plugin
// configuration; "" when there is none.
func findRemote(field string, v any) (string, string) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for key := range v {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			sub := key
			if field != "" {
				sub = field + "." + key
			}
			for _, s := range entries(v[key]) {
				switch {
				case fieldIn(key, remoteFields) && isRemote(s):
					return sub, s
				case fieldIn(key, fileFields):
					f := s
					if _, val, ok := strings.Cut(s, "="); ok && !urlScheme.MatchString(s) {
						f = val // a generator's key=file
					}
					if isURL(f) {
						return sub, s
					}
				}
				if fieldIn(key, pluginFields) {
					// An inline plugin configuration.
					var cfg any
					if err := yaml.Unmarshal([]byte(s), &cfg); err == nil {
						if f, e := findRemote(sub, cfg); f != "" {
							return f, e
						}
					}
				}
			}
			if f, e := findRemote(sub, v[key]); f != "" {
				return f, e
			}
		}
	case []any:
		for _, x := range v {
			if f, e := findRemote(field, x); f != "" {
				return f, e
			}
		}
	}
	return "", ""
}

// entries returns v when it is a string, its strings when it is a list.
func entries(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// fieldIn reports whether key is one of fields as kustomize's decoding
// matches keys: ignoring case (strings.EqualFold, as encoding/json).
func fieldIn(key string, fields []string) bool {
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			return true
		}
	}
	return false
}
