package olm

import (
	"fmt"
	"strings"

	mmsemver "github.com/Masterminds/semver/v3"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// What operator-controller (v1.11.0, internal/operator-controller/rukpak/
// bundle/registryv1.go) installs of a registry+v1 bundle, by the CSV's
// spec.installModes and the ClusterExtension's
// spec.config.inline.watchNamespace:
//
//   - no watchNamespace: the AllNamespaces install mode, which the CSV must
//     support;
//   - watchNamespace equal to spec.namespace: OwnNamespace;
//   - another watchNamespace: SingleNamespace;
//   - a CSV supporting neither OwnNamespace nor SingleNamespace takes no
//     watchNamespace at all.
//
// MultiNamespace is never installed.

// InstallModeProblem says why operator-controller cannot install a bundle
// whose CSV supports modes into namespace with the watch namespace watch
// ("" for none), and which field of the ClusterExtension's publish.yaml
// entry (field, such as "clusters.edge.olm.clusterExtensions[0]") to set;
// "" when it can.
func InstallModeProblem(modes []v1alpha1.InstallMode, namespace, watch, field string) string {
	has := map[v1alpha1.InstallModeType]bool{}
	var supported []string
	for _, m := range modes {
		if m.Supported {
			has[m.Type] = true
			supported = append(supported, string(m.Type))
		}
	}
	what := "no install mode"
	if len(supported) > 0 {
		what = strings.Join(supported, ", ")
	}
	own, single := has[v1alpha1.InstallModeTypeOwnNamespace], has[v1alpha1.InstallModeTypeSingleNamespace]
	switch {
	case watch == "" && has[v1alpha1.InstallModeTypeAllNamespaces]:
		return ""
	case watch == "" && (own || single):
		var how []string
		if own {
			how = append(how, fmt.Sprintf("to %s, the install namespace, for OwnNamespace", namespace))
		}
		if single {
			how = append(how, "to the one namespace the operator is to watch, other than "+namespace+", for SingleNamespace")
		}
		return fmt.Sprintf("its CSV supports %s but not AllNamespaces, the install mode operator-controller uses without spec.config.inline.watchNamespace: set %s.watchNamespace (%s)", what, field, strings.Join(how, "; or "))
	case watch == "":
		return fmt.Sprintf("its CSV supports %s: operator-controller installs a bundle in AllNamespaces mode, or with %s.watchNamespace in OwnNamespace or SingleNamespace mode; install it with OLM v0 (a CatalogSource) instead", what, field)
	case !own && !single:
		return fmt.Sprintf("its CSV supports %s, none of which takes a watch namespace: remove %s.watchNamespace", what, field)
	case watch == namespace && !own:
		return fmt.Sprintf("%s.watchNamespace %s is the install namespace (the OwnNamespace install mode), which its CSV does not support (it supports %s): set watchNamespace to another namespace (SingleNamespace)", field, watch, what)
	case watch != namespace && !single:
		return fmt.Sprintf("%s.watchNamespace %s is not the install namespace %s (the SingleNamespace install mode), which its CSV does not support (it supports %s): set watchNamespace to %s (OwnNamespace)", field, watch, namespace, what, namespace)
	}
	return ""
}

// DefaultWatchNamespace returns the watch namespace a ClusterExtension
// installing into namespace, with none set, is rendered with for bundles
// whose CSVs have the install modes of modes (one CSV's spec.installModes
// each, every bundle the ClusterExtension may pick): namespace, the
// OwnNamespace install mode, when some CSV lacks AllNamespaces and every
// one supports OwnNamespace (operator-controller v1.11.0 then requires
// watchNamespace equal to the install namespace,
// rukpak/bundle/registryv1.go buildBundleConfigSchema); "" otherwise:
// every CSV supports AllNamespaces, or no one namespace fits them all
// (a SingleNamespace-only CSV needs the namespace to watch named, which
// InstallModeProblem asks for).
func DefaultWatchNamespace(modes [][]v1alpha1.InstallMode, namespace string) string {
	all, own := true, true
	for _, ms := range modes {
		has := map[v1alpha1.InstallModeType]bool{}
		for _, m := range ms {
			has[m.Type] = has[m.Type] || m.Supported
		}
		all = all && has[v1alpha1.InstallModeTypeAllNamespaces]
		own = own && has[v1alpha1.InstallModeTypeOwnNamespace]
	}
	if len(modes) == 0 || all || !own {
		return ""
	}
	return namespace
}

// Selects reports whether the ClusterExtension e may install the bundle of
// version (its CSV's spec.version) in channels: e's channels, when it
// names some, include one of them, and e's version range, when it has one,
// holds the version.
func (e ExtensionOptions) Selects(version string, channels []string) bool {
	if len(e.Channels) > 0 {
		in := false
		for _, c := range channels {
			for _, want := range e.Channels {
				in = in || c == want
			}
		}
		if !in {
			return false
		}
	}
	if e.Version == "" {
		return true
	}
	c, err := mmsemver.NewConstraint(e.Version)
	if err != nil {
		return true // ClusterExtension reports the range itself
	}
	v, err := mmsemver.NewVersion(version)
	if err != nil {
		return true
	}
	return c.Check(v)
}
