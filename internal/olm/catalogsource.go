package olm

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-framework/api/crds"
	"github.com/operator-publish/publish/internal/crdcheck"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Defaults of the CatalogSource.
const (
	DefaultSourceName      = "operator-publish"
	DefaultSourceNamespace = "olm"
)

// SourceOptions describes the CatalogSource (operators.coreos.com/v1alpha1,
// https://olm.operatorframework.io/docs/concepts/crds/catalogsource/).
type SourceOptions struct {
	Name        string // metadata.name (default DefaultSourceName)
	Namespace   string // metadata.namespace (default DefaultSourceNamespace; "olm" in upstream installs, "openshift-marketplace" on OpenShift)
	DisplayName string // spec.displayName
	Publisher   string // spec.publisher
	// Image is the catalog image by digest (host/repo@sha256:...).
	Image string
	// PollInterval is spec.updateStrategy.registryPoll.interval, a Go
	// duration ("10m", "1h"); "" (the default), "0" or "off" leave polling
	// out. The image is pinned by digest, which never changes, so a poll
	// finds nothing new (OLM's registryPoll is meant for tags): a new
	// catalog reaches the cluster by the CatalogSource's new digest in Git.
	PollInterval string
	// Secrets are spec.secrets: image pull secrets in Namespace for the
	// catalog and bundle images.
	Secrets []string
}

var digestRE = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// CatalogSource returns the CatalogSource YAML of o: sourceType grpc, the
// image by digest, polling only when o.PollInterval asks for it. Errors: an image not pinned by digest,
// a name or namespace that is not a DNS label, an unparsable interval.
func CatalogSource(o SourceOptions) ([]byte, error) {
	if o.Name == "" {
		o.Name = DefaultSourceName
	}
	if o.Namespace == "" {
		o.Namespace = DefaultSourceNamespace
	}
	if o.DisplayName == "" {
		o.DisplayName = "Operators published by operator-publish"
	}
	if o.Publisher == "" {
		o.Publisher = "operator-publish"
	}
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(o.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("CatalogSource name %q: %v", o.Name, msgs))
	}
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("CatalogSource namespace %q: %v", o.Namespace, msgs))
	}
	if _, err := name.NewDigest(o.Image); err != nil || !digestRE.MatchString(o.Image) {
		errs = append(errs, fmt.Errorf("catalog image %q is not pinned by digest", o.Image))
	}
	spec := map[string]any{
		"sourceType":  "grpc",
		"image":       o.Image,
		"displayName": o.DisplayName,
		"publisher":   o.Publisher,
	}
	switch o.PollInterval {
	case "", "0", "off":
	default:
		d, err := time.ParseDuration(o.PollInterval)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("poll interval %q: want a duration such as 10m or 1h, or off", o.PollInterval))
		}
		spec["updateStrategy"] = map[string]any{"registryPoll": map[string]any{"interval": o.PollInterval}}
	}
	if len(o.Secrets) > 0 {
		spec["secrets"] = o.Secrets
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	obj := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "CatalogSource",
		"metadata":   map[string]any{"name": o.Name, "namespace": o.Namespace},
		"spec":       spec,
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if err := ValidateCatalogSource(data); err != nil {
		return nil, err
	}
	return data, nil
}

// ValidateCatalogSource checks a CatalogSource (YAML or JSON) against the
// CatalogSource CRD of github.com/operator-framework/api (crds package):
// schema and pruning, as the API server would.
func ValidateCatalogSource(data []byte) error {
	v, err := crdcheck.FromCRDs(crds.CatalogSource())
	if err != nil {
		return err
	}
	if err := v.Validate(data); err != nil {
		return fmt.Errorf("CatalogSource: %w", err)
	}
	return nil
}
