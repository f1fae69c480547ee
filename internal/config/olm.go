package config

import (
	"fmt"

	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/target"
	yaml "go.yaml.in/yaml/v4"
)

// checkOLM checks the values of clusters.<name>.olm that Load can check
// alone; a bad one is an *Error at its line.
func checkOLM(path string, data []byte, name string, o OLM) error {
	at := func(msg string, keys ...string) error {
		keys = append([]string{"clusters", name, "olm"}, keys...)
		return &Error{Path: path, Line: line(data, keys...), Msg: msg}
	}
	if _, err := olm.ParseFormat(o.BundleFormat); err != nil {
		return at(fmt.Sprintf("clusters.%s.olm.bundleFormat: %v", name, err), "bundleFormat")
	}
	return nil
}

// TargetOptions returns the olm target's settings from o (what the flags do
// not set).
func (o OLM) TargetOptions() target.OLMOptions {
	cs := o.CatalogSource
	return target.OLMOptions{
		CatalogImage: o.CatalogImage, BaseImage: o.BaseImage, Images: o.Images,
		Source:       olm.SourceOptions{Name: cs.Name, Namespace: cs.Namespace, DisplayName: cs.DisplayName, Publisher: cs.Publisher, PollInterval: cs.PollInterval},
		BundleFormat: olm.Format(o.BundleFormat),
	}
}

// line returns the line of the mapping key at keys (a path of mapping keys
// and, for sequences, decimal indexes) in data, or of the deepest part of
// it that exists; 0 when not even the first key is there.
func line(data []byte, keys ...string) int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	n, at := root.Content[0], 0
	for _, k := range keys {
		next := (*yaml.Node)(nil)
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					at, next = n.Content[i].Line, n.Content[i+1]
					break
				}
			}
		case yaml.SequenceNode:
			var i int
			if _, err := fmt.Sscanf(k, "%d", &i); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				at = next.Line
			}
		}
		if next == nil {
			return at
		}
		n = next
	}
	return at
}
