package render

import (
	"errors"
	"fmt"
	"sort"

	"github.com/operator-publish/publish/internal/crdcheck"
	"sigs.k8s.io/yaml"
)

// Validate checks every rendered Artifact, ArtifactVersion, Library and ChartRepo of
// files (rendered/<cluster>) against the CRDs built into the binary, so that
// an overlay patch cannot commit an object the API server would reject (or
// silently prune). The error names each file and the overlay.
func Validate(cluster string, files Files) error {
	v, err := crdcheck.Alauda()
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var errs []error
	for _, p := range paths {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(files[p], &head); err != nil || !v.Knows(head.APIVersion, head.Kind) {
			continue
		}
		if err := v.Validate(files[p]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the overlay kustomize/clusters/%s renders objects the CRDs reject (nothing committed):\n%w", cluster, errors.Join(errs...))
	}
	return nil
}
