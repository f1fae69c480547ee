package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
		return &State{APIVersion: StateAPIVersion, Kind: StateKind}, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("catalog %s: %w (it is written by publish; restore it from the catalog's git history)", StatePath, err)
	}
	if s.Kind != StateKind {
		return nil, fmt.Errorf("catalog %s: kind %q, want %s", StatePath, s.Kind, StateKind)
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
