package olm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	mmsemver "github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// OLM v1 (operator-controller, https://operator-framework.github.io/operator-controller/):
// a ClusterCatalog serves the catalog image, a ClusterExtension installs a
// package from it. The objects follow the CRDs of operator-controller
// v1.11.0 (helm/olmv1/base/*/crd/standard), group olm.operatorframework.io,
// version v1.

// The values of ExtensionOptions.UpgradeConstraintPolicy, as the
// ClusterExtension CRD's enum names them.
const (
	UpgradeCatalogProvided = "CatalogProvided"
	UpgradeSelfCertified   = "SelfCertified"
)

// CatalogNameLabel is the label catalogd sets on every ClusterCatalog to
// its name; a ClusterExtension's catalog selector matches on it.
const CatalogNameLabel = "olm.operatorframework.io/metadata.name"

// CatalogOptions describes a ClusterCatalog (olm.operatorframework.io/v1).
type CatalogOptions struct {
	// Name is metadata.name (default DefaultSourceName).
	Name string
	// Image is spec.source.image.ref: the catalog image by digest, or by
	// tag when PollIntervalMinutes is set.
	Image string
	// PollIntervalMinutes is spec.source.image.pollIntervalMinutes: 0 (the
	// default) polls nothing and wants Image by digest, as the CRD forbids
	// polling a digest; > 0 wants Image by tag, so that catalogd follows
	// the tag.
	PollIntervalMinutes int
	// Priority is spec.priority: which catalog wins when several offer a
	// bundle (higher first; default 0).
	Priority int32
}

// ClusterCatalog returns the ClusterCatalog YAML of o. Errors: a name that
// is not a DNS subdomain, an image by tag without a poll interval or by
// digest with one, a negative interval.
func ClusterCatalog(o CatalogOptions) ([]byte, error) {
	if o.Name == "" {
		o.Name = DefaultSourceName
	}
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(o.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ClusterCatalog name %q: %v", o.Name, msgs))
	}
	image := map[string]any{"ref": o.Image}
	switch {
	case o.PollIntervalMinutes < 0:
		errs = append(errs, fmt.Errorf("ClusterCatalog pollIntervalMinutes %d: want a positive number of minutes, or none", o.PollIntervalMinutes))
	case o.PollIntervalMinutes == 0:
		if _, err := name.NewDigest(o.Image); err != nil || !digestRE.MatchString(o.Image) {
			errs = append(errs, fmt.Errorf("catalog image %q is not pinned by digest (without pollIntervalMinutes the ClusterCatalog names the image by digest)", o.Image))
		}
	default:
		if _, err := name.NewTag(o.Image); err != nil || strings.Contains(o.Image, "@") {
			errs = append(errs, fmt.Errorf("catalog image %q is not a tag: a ClusterCatalog polls a tag, never a digest (the CRD forbids pollIntervalMinutes with a digest)", o.Image))
		}
		image["pollIntervalMinutes"] = o.PollIntervalMinutes
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	spec := map[string]any{"source": map[string]any{"type": "Image", "image": image}}
	if o.Priority != 0 {
		spec["priority"] = o.Priority
	}
	return yaml.Marshal(map[string]any{
		"apiVersion": "olm.operatorframework.io/v1",
		"kind":       "ClusterCatalog",
		"metadata":   map[string]any{"name": o.Name},
		"spec":       spec,
	})
}

// ExtensionOptions describes a ClusterExtension (olm.operatorframework.io/v1)
// installing one package.
type ExtensionOptions struct {
	// Name is metadata.name (default Package).
	Name string
	// Package is spec.source.catalog.packageName (the artifact name).
	Package string
	// Namespace is spec.namespace, where the bundle's namespaced objects
	// go; it must exist on the cluster.
	Namespace string
	// Channels are spec.source.catalog.channels (none: any channel).
	Channels []string
	// Version is spec.source.catalog.version, a version or range such as
	// ">=1.2.0 <2.0.0" (none: the newest).
	Version string
	// Catalog is the ClusterCatalog name the package is taken from
	// (spec.source.catalog.selector on CatalogNameLabel); "" any catalog.
	Catalog string
	// ServiceAccount, when set, is spec.serviceAccount.name, and a
	// ServiceAccount of that name in Namespace with its RBAC is rendered
	// before the ClusterExtension: operator-controller releases before
	// v1.11 install with that account's permissions and require it; v1.11
	// and later ignore the field (they install with their own
	// cluster-admin account).
	ServiceAccount string
	// InstallerRBAC is what the service account is granted:
	// InstallerRBACBundle (the default, "") a ClusterRole and a Role
	// named <name>-installer with Rules and the ClusterExtension's
	// finalizer rule; InstallerRBACClusterAdmin a binding to cluster-admin.
	InstallerRBAC string
	// WatchNamespace is spec.config.inline.watchNamespace: the namespace
	// the operator watches, for a bundle without the AllNamespaces install
	// mode (equal to Namespace: OwnNamespace; another one:
	// SingleNamespace; InstallModeProblem). "" renders no spec.config.
	// operator-controller v1.11 reads it only with its experimental CRDs
	// and the SingleOwnNamespaceInstallSupport feature gate.
	WatchNamespace string
	// UpgradeConstraintPolicy is
	// spec.source.catalog.upgradeConstraintPolicy: CatalogProvided (the
	// CRD's default; "" renders none) follows the catalog's upgrade graph,
	// SelfCertified lets the ClusterExtension move to any version of its
	// range, downgrades included (operator-controller v1.11.0,
	// api/v1/clusterextension_types.go).
	UpgradeConstraintPolicy string
	// Where names the ClusterExtension's entry in error messages, such as
	// publish.yaml:12 (default: its publish.yaml key).
	Where string
	// Rules are the installer rules derived from the package's bundles
	// (Merge of Installer over every listed version); filled in by the
	// olm target.
	Rules InstallerRules
}

// extensionErrors returns what is wrong with o (named, ClusterExtension's
// errors).
func extensionErrors(o ExtensionOptions) []error {
	var errs []error
	if o.Package == "" {
		errs = append(errs, errors.New("ClusterExtension: package is required"))
	} else if msgs := validation.IsDNS1123Subdomain(o.Package); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ClusterExtension package %q: %v", o.Package, msgs))
	}
	if msgs := validation.IsDNS1123Subdomain(o.Name); o.Name != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ClusterExtension name %q: %v", o.Name, msgs))
	}
	if o.Namespace == "" {
		errs = append(errs, fmt.Errorf("ClusterExtension %s: namespace is required (the namespace the operator is installed in; it must exist)", o.Name))
	} else if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ClusterExtension %s: namespace %q: %v", o.Name, o.Namespace, msgs))
	}
	for _, ch := range o.Channels {
		if msgs := validation.IsDNS1123Subdomain(ch); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("ClusterExtension %s: channel %q: %v", o.Name, ch, msgs))
		}
	}
	if o.Version != "" {
		// operator-controller parses the range with Masterminds/semver.
		if _, err := mmsemver.NewConstraint(o.Version); err != nil {
			errs = append(errs, fmt.Errorf("ClusterExtension %s: version %q: want a version or a range such as \">=1.2.0 <2.0.0\": %v", o.Name, o.Version, err))
		}
	}
	if msgs := validation.IsDNS1123Label(o.WatchNamespace); o.WatchNamespace != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ClusterExtension %s: watchNamespace %q: %v", o.Name, o.WatchNamespace, msgs))
	}
	if msgs := validation.IsDNS1123Subdomain(o.ServiceAccount); o.ServiceAccount != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ClusterExtension %s: serviceAccount %q: %v", o.Name, o.ServiceAccount, msgs))
	}
	switch o.UpgradeConstraintPolicy {
	case "", UpgradeCatalogProvided, UpgradeSelfCertified:
	default:
		errs = append(errs, fmt.Errorf("ClusterExtension %s: upgradeConstraintPolicy %q: want %s (the default) or %s", o.Name, o.UpgradeConstraintPolicy, UpgradeCatalogProvided, UpgradeSelfCertified))
	}
	switch o.InstallerRBAC {
	case "", InstallerRBACBundle, InstallerRBACClusterAdmin:
	default:
		errs = append(errs, fmt.Errorf("ClusterExtension %s: installerRBAC %q: want %s (the default) or %s", o.Name, o.InstallerRBAC, InstallerRBACBundle, InstallerRBACClusterAdmin))
	}
	return errs
}

// finalizerRule lets the installer set blockOwnerDeletion on what it
// creates, on clusters with the OwnerReferencesPermissionEnforcement
// admission plug-in (operator-controller's "Derive minimal
// ServiceAccount" page, step 3).
func finalizerRule(name string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"olm.operatorframework.io"}, Resources: []string{"clusterextensions/finalizers"}, Verbs: []string{"update"}, ResourceNames: []string{name}}
}

// ClusterExtension returns the YAML documents of o: when o.ServiceAccount
// is set, the ServiceAccount, then its ClusterRole, ClusterRoleBinding,
// Role and RoleBinding (all named <name>-installer) with o.Rules, or its
// ClusterRoleBinding to cluster-admin (o.InstallerRBAC); then the
// ClusterExtension. Errors: a missing package or namespace, names that are
// not DNS names, a version range that is not one, an unknown
// InstallerRBAC.
func ClusterExtension(o ExtensionOptions) ([]byte, error) {
	if o.Name == "" {
		o.Name = o.Package
	}
	if errs := extensionErrors(o); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	catalog := map[string]any{"packageName": o.Package}
	if len(o.Channels) > 0 {
		catalog["channels"] = o.Channels
	}
	if o.Version != "" {
		catalog["version"] = o.Version
	}
	if o.UpgradeConstraintPolicy != "" {
		catalog["upgradeConstraintPolicy"] = o.UpgradeConstraintPolicy
	}
	if o.Catalog != "" {
		catalog["selector"] = map[string]any{"matchLabels": map[string]any{CatalogNameLabel: o.Catalog}}
	}
	spec := map[string]any{
		"namespace": o.Namespace,
		"source":    map[string]any{"sourceType": "Catalog", "catalog": catalog},
	}
	if o.WatchNamespace != "" {
		spec["config"] = map[string]any{"configType": "Inline", "inline": map[string]any{"watchNamespace": o.WatchNamespace}}
	}
	var docs []any
	if o.ServiceAccount != "" {
		spec["serviceAccount"] = map[string]any{"name": o.ServiceAccount}
		installer := o.Name + "-installer"
		subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: o.ServiceAccount, Namespace: o.Namespace}}
		docs = append(docs, map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount",
			"metadata": map[string]any{"name": o.ServiceAccount, "namespace": o.Namespace},
		})
		if o.InstallerRBAC == InstallerRBACClusterAdmin {
			docs = append(docs, rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: installer},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   subjects,
			})
		} else {
			docs = append(docs,
				rbacv1.ClusterRole{
					TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
					ObjectMeta: metav1.ObjectMeta{Name: installer},
					Rules:      MergeRules(append([]rbacv1.PolicyRule{finalizerRule(o.Name)}, o.Rules.Cluster...)),
				},
				rbacv1.ClusterRoleBinding{
					TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
					ObjectMeta: metav1.ObjectMeta{Name: installer},
					RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: installer},
					Subjects:   subjects,
				},
				rbacv1.Role{
					TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
					ObjectMeta: metav1.ObjectMeta{Name: installer, Namespace: o.Namespace},
					Rules:      MergeRules(o.Rules.Namespace),
				},
				rbacv1.RoleBinding{
					TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
					ObjectMeta: metav1.ObjectMeta{Name: installer, Namespace: o.Namespace},
					RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: installer},
					Subjects:   subjects,
				})
		}
	}
	docs = append(docs, map[string]any{
		"apiVersion": "olm.operatorframework.io/v1",
		"kind":       "ClusterExtension",
		"metadata":   map[string]any{"name": o.Name},
		"spec":       spec,
	})
	var buf bytes.Buffer
	for i, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		data = bytes.ReplaceAll(data, []byte("  creationTimestamp: null\n"), nil)
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
	}
	return buf.Bytes(), nil
}
