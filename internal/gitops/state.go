package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-publish/publish/internal/render"
	"sigs.k8s.io/yaml"
)

// StatePath is where the state file lives in the catalog repo.
const StatePath = "publish/state.yaml"

// State is publish/state.yaml: the lock of what has been published. Its
// format is documented in the README ("The state file").
type State struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Source     Source `json:"source"`
	// Artifacts is every artifact and version ever published, present or
	// tombstoned, sorted; with the digests mirrored for each.
	Artifacts []render.Artifact `json:"artifacts"`
	// Rendered maps a cluster to the render key (render.Key: overlays and
	// configuration) rendered/<cluster> was last written with; while it
	// holds, only changed artifacts are rendered again.
	Rendered map[string]string `json:"rendered,omitempty"`
}

// Source identifies the package repo commit that was last published.
type Source struct {
	Repo   string `json:"repo,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// State file identity.
const (
	StateAPIVersion = "publish.operator-publish.io/v1alpha1"
	StateKind       = "PublishState"
)

// ReadState reads publish/state.yaml below root. A missing file is an empty
// state (first publish), not an error; a file that does not parse is an
// error naming it.
func ReadState(root string) (*State, error) {
	p := filepath.Join(root, filepath.FromSlash(StatePath))
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		// Without the lock, tombstones would silently disappear: refuse
		// when the catalog was clearly published before.
		if _, gerr := os.Stat(filepath.Join(root, "publish", "generated")); gerr == nil {
			return nil, fmt.Errorf("catalog %s is missing but publish/generated exists: restore it from the catalog's git history (git checkout HEAD~1 -- %s); publish will not guess what was published", StatePath, StatePath)
		}
		return &State{APIVersion: StateAPIVersion, Kind: StateKind}, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		return nil, fmt.Errorf("catalog %s: %s (it is written by publish; restore it from the catalog's git history)", StatePath, msg)
	}
	if s.Kind != StateKind || s.APIVersion != StateAPIVersion {
		return nil, fmt.Errorf("catalog %s: apiVersion/kind %q/%q, want %s/%s", StatePath, s.APIVersion, s.Kind, StateAPIVersion, StateKind)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("catalog %s is not valid (it is written by publish; restore it from the catalog's git history): %w", StatePath, err)
	}
	render.Sort(s.Artifacts)
	return &s, nil
}

// Marshal returns the state file bytes: sorted, deterministic.
func (s *State) Marshal() ([]byte, error) {
	c := *s
	c.APIVersion, c.Kind = StateAPIVersion, StateKind
	render.Sort(c.Artifacts)
	if c.Artifacts == nil {
		c.Artifacts = []render.Artifact{}
	}
	data, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Written by publish: do not edit. The lock of what has been published.\n")
	b.Write(data)
	return b.Bytes(), nil
}

var (
	dns1123  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	tagRE    = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// validate checks what rendering relies on: artifact names that can name
// objects, one entry per artifact and per tag, semver versions, valid tags
// and digests.
func (s *State) validate() error {
	var errs []error
	names := map[string]bool{}
	for i, a := range s.Artifacts {
		where := fmt.Sprintf("artifacts[%d] (%s)", i, a.Name)
		if len(a.Name) > 253 || !dns1123.MatchString(a.Name) {
			errs = append(errs, fmt.Errorf("%s: name %q is not a valid object name", where, a.Name))
		}
		if names[a.Name] {
			errs = append(errs, fmt.Errorf("%s: artifact listed twice", where))
		}
		names[a.Name] = true
		tags := map[string]bool{}
		for j, v := range a.Versions {
			vw := fmt.Sprintf("%s.versions[%d]", where, j)
			if _, err := semver.Parse(v.Version); err != nil {
				errs = append(errs, fmt.Errorf("%s: version %q is not semver", vw, v.Version))
			}
			if !tagRE.MatchString(v.Tag) {
				errs = append(errs, fmt.Errorf("%s: tag %q is not a valid image tag", vw, v.Tag))
			}
			if tags[v.Tag] {
				errs = append(errs, fmt.Errorf("%s: tag %s listed twice", vw, v.Tag))
			}
			tags[v.Tag] = true
			if v.BundleDigest != "" && !digestRE.MatchString(v.BundleDigest) {
				errs = append(errs, fmt.Errorf("%s: bundleDigest %q is not a sha256 digest", vw, v.BundleDigest))
			}
		}
	}
	return errors.Join(errs...)
}
