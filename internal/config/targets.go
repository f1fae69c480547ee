package config

import (
	"errors"
	"fmt"
	"sort"

	"github.com/operator-publish/publish/internal/target"
	yaml "go.yaml.in/yaml/v4"
)

// decodeBlocks has each target block of cluster name in path (the keys of
// cl.Blocks, clusters.<name>.<target>) decoded and checked by its
// target's Kind.Decode, in the order of the file, and keeps the settings
// in cl.own. Errors are *Error at the line of the offending key: a key
// that names no target with a block of its own is an unknown field of the
// cluster, as the YAML decoder reports the others; a wrong type or an
// unknown field inside a block is named by its path, with the nearest
// field of the block (Kind.Schema); a value the target refuses is its
// *target.BlockError.
func decodeBlocks(path string, data []byte, name string, cl *Cluster) error {
	keys := make([]string, 0, len(cl.Blocks))
	for k := range cl.Blocks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return cl.Blocks[keys[i]].Line < cl.Blocks[keys[j]].Line })
	cl.own = map[string]any{}
	for _, key := range keys {
		k, err := target.Lookup(key)
		if key == "" || err != nil || k.Decode == nil {
			return unknownField(&Error{Path: path, Line: line(data, "clusters", name, key), Msg: "unknown field " + key + " is not a publish.yaml field (see the README, Configuration)"}, data)
		}
		node := cl.Blocks[key]
		own, err := k.Decode(target.Block{
			File: path, Cluster: name, Node: &node,
			Line: func(keys ...string) int { return line(data, append([]string{"clusters", name, key}, keys...)...) },
		})
		var be *target.BlockError
		switch {
		case errors.As(err, &be):
			return &Error{Path: path, Line: be.Line, Msg: be.Msg}
		case err != nil:
			return typeField(unknownField(yamlError(path, err), data), data)
		}
		cl.own[key] = own
	}
	return nil
}

// blockNames returns the names of the targets that read a block of their
// own in a cluster (Kind.Decode), sorted: the keys a cluster may have
// besides Cluster's fields.
func blockNames() []string {
	var out []string
	for _, n := range target.Names() {
		if k, _ := target.Lookup(n); k.Decode != nil {
			out = append(out, n)
		}
	}
	return out
}

// olmv1Clusters lists the clusters whose target's settings install with
// OLM v1 (target.OLMv1), sorted: lint's olmv1/ rules check the bundles
// for them.
func (c *Config) olmv1Clusters() []string {
	var out []string
	for _, name := range c.ClusterNames() {
		cl := c.Clusters[name]
		k, err := target.Lookup(cl.Target)
		if err != nil {
			continue // refused by Parse
		}
		if s, ok := cl.own[k.Name].(target.OLMv1); ok && s.UsesOLMv1() {
			out = append(out, name)
		}
	}
	return out
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
