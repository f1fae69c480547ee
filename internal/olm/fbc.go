package olm

import (
	"bytes"
	"fmt"
	"path"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// ConfigsDir is where catalog images keep their file-based catalog, one
// directory per package (the operators.operatorframework.io.index.configs.v1
// label points at it).
const ConfigsDir = "configs"

// Validate checks cfg with operator-registry's own rules: it is converted to
// its model (declcfg.ConvertToModel: unknown packages, duplicate bundles,
// bundles in no channel, a default channel that does not exist, invalid
// properties) and the model is validated (model.Validate: one channel head,
// no stranded bundle, no replaces cycle, valid versions). The error lists
// every problem, as opm validate would.
func Validate(cfg *declcfg.DeclarativeConfig) error {
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		return fmt.Errorf("file-based catalog: %w", err)
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("file-based catalog: %w", err)
	}
	return nil
}

// Files returns the catalog as files below ConfigsDir: one
// <package>/catalog.json per package, written by declcfg.WriteJSON (the
// olm.package, its channels sorted by name, its bundles sorted by name,
// then its olm.deprecations),
// keyed by slash-separated path relative to the image root
// ("configs/etcd/catalog.json").
func Files(cfg *declcfg.DeclarativeConfig) (map[string][]byte, error) {
	per := map[string]*declcfg.DeclarativeConfig{}
	get := func(p string) *declcfg.DeclarativeConfig {
		if per[p] == nil {
			per[p] = &declcfg.DeclarativeConfig{}
		}
		return per[p]
	}
	for _, p := range cfg.Packages {
		get(p.Name).Packages = append(get(p.Name).Packages, p)
	}
	for _, c := range cfg.Channels {
		get(c.Package).Channels = append(get(c.Package).Channels, c)
	}
	for _, b := range cfg.Bundles {
		get(b.Package).Bundles = append(get(b.Package).Bundles, b)
	}
	for _, d := range cfg.Deprecations {
		get(d.Package).Deprecations = append(get(d.Package).Deprecations, d)
	}
	out := map[string][]byte{}
	for name, c := range per {
		var buf bytes.Buffer
		if err := declcfg.WriteJSON(*c, &buf); err != nil {
			return nil, fmt.Errorf("package %s: %w", name, err)
		}
		out[path.Join(ConfigsDir, name, "catalog.json")] = buf.Bytes()
	}
	return out, nil
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// hasProperty reports whether b has a property of type typ.
func hasProperty(b declcfg.Bundle, typ string) bool {
	for _, p := range b.Properties {
		if p.Type == typ {
			return true
		}
	}
	return false
}
