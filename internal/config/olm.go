package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

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
	if err := checkSource(o.CatalogSource, func(msg, key string) error { return at(msg, "catalogSource", key) }, name); err != nil {
		return err
	}
	v1 := false
	for i, k := range o.CatalogKinds {
		switch k {
		case target.KindCatalogSource:
		case target.KindClusterCatalog:
			v1 = true
		default:
			return at(fmt.Sprintf("clusters.%s.olm.catalogKinds: %q: want %s, %s or both", name, k, target.KindCatalogSource, target.KindClusterCatalog), "catalogKinds", fmt.Sprint(i))
		}
	}
	if o.ClusterCatalog != (ClusterCatalog{}) {
		co := o.TargetOptions().ClusterCatalog
		co.Image = "example.invalid/catalog@sha256:" + zeros
		if co.PollIntervalMinutes > 0 {
			co.Image = "example.invalid/catalog:" + name
		}
		if _, err := olm.ClusterCatalog(co); err != nil {
			return at(fmt.Sprintf("clusters.%s.olm.clusterCatalog: %v", name, err), "clusterCatalog")
		}
		if !v1 {
			return at(fmt.Sprintf("clusters.%s.olm.clusterCatalog is set, but catalogKinds does not include %s: add it, or remove clusterCatalog", name, target.KindClusterCatalog), "clusterCatalog")
		}
	}
	for i, k := range o.ImageRedirection {
		if !slices.Contains(olm.RedirectKinds, k) {
			return at(fmt.Sprintf("clusters.%s.olm.imageRedirection: %q: want some of %s", name, k, strings.Join(olm.RedirectKinds, ", ")), "imageRedirection", fmt.Sprint(i))
		}
	}
	names := map[string]bool{}
	for i, e := range o.TargetOptions().Extensions {
		if !v1 {
			return at(fmt.Sprintf("clusters.%s.olm.clusterExtensions need catalogKinds to include %s (OLM v1 installs from a ClusterCatalog)", name, target.KindClusterCatalog), "clusterExtensions")
		}
		if _, err := olm.ClusterExtension(e); err != nil {
			return at(fmt.Sprintf("clusters.%s.olm.clusterExtensions[%d]: %v", name, i, err), "clusterExtensions", fmt.Sprint(i))
		}
		n := e.Name
		if n == "" {
			n = e.Package
		}
		if names[n] {
			return at(fmt.Sprintf("clusters.%s.olm.clusterExtensions[%d]: a second ClusterExtension named %s: give one a name", name, i, n), "clusterExtensions", fmt.Sprint(i))
		}
		names[n] = true
	}
	return nil
}

// checkSource checks clusters.<name>.olm.catalogSource as the olm target
// will, one field at a time so that the error names the field
// (clusters.edge.olm.catalogSource.pollInterval) and at puts it at its line.
func checkSource(cs CatalogSource, at func(msg, key string) error, name string) error {
	for _, f := range []struct {
		key, v string
		set    func(*olm.SourceOptions)
	}{
		{"name", cs.Name, func(o *olm.SourceOptions) { o.Name = cs.Name }},
		{"namespace", cs.Namespace, func(o *olm.SourceOptions) { o.Namespace = cs.Namespace }},
		{"pollInterval", cs.PollInterval, func(o *olm.SourceOptions) { o.PollInterval = cs.PollInterval }},
	} {
		if f.v == "" {
			continue
		}
		o := olm.SourceOptions{Image: "example.invalid/catalog@sha256:" + zeros}
		f.set(&o)
		if _, err := olm.CatalogSource(o); err != nil {
			return at(fmt.Sprintf("clusters.%s.olm.catalogSource.%s: %v", name, f.key, err), f.key)
		}
	}
	return nil
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"

// olmv1Clusters lists the clusters whose olm settings render a
// ClusterCatalog (OLM v1), sorted: lint's olmv1/ rules check the bundles
// for them.
func (c *Config) olmv1Clusters() []string {
	var out []string
	for name, cl := range c.Clusters {
		if cl.Target == TargetOLM && cl.OLM.TargetOptions().UsesOLMv1() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TargetOptions returns the olm target's settings from o (what the flags do
// not set).
func (o OLM) TargetOptions() target.OLMOptions {
	cs := o.CatalogSource
	return target.OLMOptions{
		CatalogImage: o.CatalogImage, BaseImage: o.BaseImage, Images: o.Images,
		Source:       olm.SourceOptions{Name: cs.Name, Namespace: cs.Namespace, DisplayName: cs.DisplayName, Publisher: cs.Publisher, PollInterval: cs.PollInterval},
		BundleFormat: olm.Format(o.BundleFormat),
		CatalogKinds: o.CatalogKinds,
		ClusterCatalog: olm.CatalogOptions{
			Name: o.ClusterCatalog.Name, PollIntervalMinutes: o.ClusterCatalog.PollIntervalMinutes, Priority: o.ClusterCatalog.Priority,
		},
		Extensions: extensions(o.ClusterExtensions),
		Redirect:   o.ImageRedirection,
	}
}

func extensions(es []ClusterExtension) []olm.ExtensionOptions {
	var out []olm.ExtensionOptions
	for _, e := range es {
		out = append(out, olm.ExtensionOptions{
			Name: e.Name, Package: e.Package, Namespace: e.Namespace,
			Channels: e.Channels, Version: e.Version, ServiceAccount: e.ServiceAccount,
			InstallerRBAC: e.InstallerRBAC, WatchNamespace: e.WatchNamespace, Where: e.where,
		})
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
