package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-publish/publish/internal/model"
	"sigs.k8s.io/yaml"
)

// StateDir holds the state files of the catalog repo, one per cluster:
// publish/state/<cluster>.yaml (StatePath). Each cluster has its own
// source commit, so that a cluster published from another commit (or not
// in a run at all) neither blocks nor hides the others' changes
// (docs/design.md#state-file).
const StateDir = "publish/state"

// LegacyStatePath is the one state file of every cluster that publish
// wrote before state per cluster (apiVersion LegacyStateAPIVersion): read
// once by the first run, which writes StatePath for each cluster it
// records and removes it, in the same commit (pipeline's migration).
const LegacyStatePath = "publish/state.yaml"

// StatePath is the state file of cluster, relative to the catalog root.
func StatePath(cluster string) string { return StateDir + "/" + cluster + ".yaml" }

// StateCluster returns the cluster whose state file p is (ok false for
// any other path).
func StateCluster(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, StateDir+"/")
	if !ok || strings.Contains(rest, "/") {
		return "", false
	}
	c, ok := strings.CutSuffix(rest, ".yaml")
	return c, ok && c != ""
}

// State is publish/state/<cluster>.yaml: the lock of what has been
// published to one cluster. Its format is documented in docs/state.md.
// Rendered and OCI hold the entry of that cluster alone (the maps are
// those of the older single file, LegacyStatePath, which held every
// cluster's).
type State struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Source     Source `json:"source"`
	// Artifacts is every artifact and version ever published, present or
	// tombstoned, sorted; with the digests mirrored for each.
	Artifacts []model.ArtifactRecord `json:"artifacts"`
	// Rendered maps a cluster to the render key rendered/<cluster> was
	// last written with (internal/render's Key: overlays and configuration;
	// "olm <catalog image>" for the olm target); while it holds, only
	// changed artifacts are rendered again.
	Rendered map[string]string `json:"rendered,omitempty"`
	// OCI maps a cluster to the OCI catalog last pushed for it
	// (internal/ocicatalog: rendered/<cluster> as a single-layer OCI
	// artifact, `publish run --oci`): the tag and the manifest digest it
	// points at. A cluster published without an OCI reference has none.
	OCI map[string]OCIRecord `json:"oci,omitempty"`
	// Approvals are the cluster's pull requests the forge merged with
	// who approved them (delivery: pull-request with approvers), oldest
	// first; none for other clusters.
	Approvals []model.ApprovalRecord `json:"approvals,omitempty"`
}

// OCIRecord is where the OCI catalog of one cluster was pushed.
type OCIRecord struct {
	// Ref is the tag reference pushed to
	// (registry.example.com/platform/operator-catalog:global).
	Ref string `json:"ref"`
	// Digest is the manifest digest the tag points at ("sha256:…").
	Digest string `json:"digest"`
}

// Source identifies the package repo commit that was last published.
type Source struct {
	Repo   string `json:"repo,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Dirty lists the manifest paths (relative to the package repo's
	// --source) that the publish took from a working tree that differed
	// from Commit (run --allow-dirty): what the catalog holds of them is in
	// no commit, so the next run reads them again.
	Dirty []string `json:"dirty,omitempty"`
}

// HasState reports whether the catalog files (slash-separated paths
// relative to its root, in memory) hold any state file: one of a cluster
// (StateDir) or the older LegacyStatePath. A catalog with one was
// published before.
func HasState(files map[string][]byte) bool {
	if _, ok := files[LegacyStatePath]; ok {
		return true
	}
	for p := range files {
		if _, ok := StateCluster(p); ok {
			return true
		}
	}
	return false
}

// State file identity. v1alpha2 is the file per cluster (StatePath);
// v1alpha1 the older single file (LegacyStatePath), read only to upgrade
// it. The entries of the artifacts are the same in both.
const (
	StateAPIVersion       = "publish.operator-publish.io/v1alpha2"
	LegacyStateAPIVersion = "publish.operator-publish.io/v1alpha1"
	StateKind             = "PublishState"
)

// ReadState reads publish/state/<cluster>.yaml of the catalog files
// (slash-separated paths relative to its root, in memory). A missing file
// is an empty state (the cluster's first publish), not an error; a file
// that does not parse is an error naming it. So is a missing file while
// publish/generated/<cluster> exists: without the lock, tombstones would
// be lost.
func ReadState(files map[string][]byte, cluster string) (*State, error) {
	sp := StatePath(cluster)
	data, ok := files[sp]
	if !ok {
		gen := "publish/generated/" + cluster
		for p := range files {
			if strings.HasPrefix(p, gen+"/") {
				return nil, fmt.Errorf("catalog %s is missing but %s exists: restore it from the catalog's git history (git checkout HEAD~1 -- %s); publish will not guess what was published", sp, gen, sp)
			}
		}
		return &State{APIVersion: StateAPIVersion, Kind: StateKind}, nil
	}
	return ParseState(sp, data)
}

// ParseState parses and validates the bytes of the state file at p (a
// catalog path, for the messages: StatePath of a cluster), as ReadState
// does. Errors name p and say to restore it; a file of the older format
// (LegacyStateAPIVersion) is refused here: ParseLegacyState reads it.
func ParseState(p string, data []byte) (*State, error) {
	return parseState(p, data, StateAPIVersion)
}

// ParseLegacyState parses and validates LegacyStatePath, the single state
// file of every cluster written before state per cluster.
func ParseLegacyState(data []byte) (*State, error) {
	return parseState(LegacyStatePath, data, LegacyStateAPIVersion)
}

func parseState(p string, data []byte, apiVersion string) (*State, error) {
	var s State
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		return nil, fmt.Errorf("catalog %s: %s (it is written by publish; restore it from the catalog's git history)", p, msg)
	}
	if s.Kind != StateKind || s.APIVersion != apiVersion {
		return nil, fmt.Errorf("catalog %s: apiVersion/kind %q/%q, want %s/%s", p, s.APIVersion, s.Kind, apiVersion, StateKind)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("catalog %s is not valid (it is written by publish; restore it from the catalog's git history): %w", p, err)
	}
	model.SortRecords(s.Artifacts)
	return &s, nil
}

// Split returns the state of each cluster that the older single file s
// (ParseLegacyState) records a render key or an OCI catalog for: its
// source and artifacts, with that cluster's render key and OCI catalog
// alone. What was published before state per cluster was published to
// every cluster from one source commit, so each cluster starts from it.
func (s *State) Split() map[string]*State {
	out := map[string]*State{}
	add := func(c string) *State {
		if out[c] == nil {
			out[c] = &State{APIVersion: StateAPIVersion, Kind: StateKind, Source: s.Source, Artifacts: s.Artifacts}
		}
		return out[c]
	}
	for c, k := range s.Rendered {
		add(c).Rendered = map[string]string{c: k}
	}
	for c, r := range s.OCI {
		add(c).OCI = map[string]OCIRecord{c: r}
	}
	return out
}

// Marshal returns the state file bytes: sorted, deterministic.
func (s *State) Marshal() ([]byte, error) {
	c := *s
	c.APIVersion, c.Kind = StateAPIVersion, StateKind
	model.SortRecords(c.Artifacts)
	if c.Artifacts == nil {
		c.Artifacts = []model.ArtifactRecord{}
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
// and digests, recorded ArtifactVersion names (objectName) that are valid
// and recorded once.
func (s *State) validate() error {
	var errs []error
	names := map[string]bool{}
	objects := map[string]bool{} // recorded ArtifactVersion names
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
			if v.Path != "" && (!filepath.IsLocal(filepath.FromSlash(v.Path)) || strings.Contains(v.Path, "\\")) {
				errs = append(errs, fmt.Errorf("%s: path %q is not a relative path inside the package repo", vw, v.Path))
			}
			if v.BundleDigest != "" && !digestRE.MatchString(v.BundleDigest) {
				errs = append(errs, fmt.Errorf("%s: bundleDigest %q is not a sha256 digest", vw, v.BundleDigest))
			}
			if v.ObjectName != "" {
				if len(v.ObjectName) > 253 || !dns1123.MatchString(v.ObjectName) {
					errs = append(errs, fmt.Errorf("%s: objectName %q is not a valid object name", vw, v.ObjectName))
				}
				if objects[v.ObjectName] {
					errs = append(errs, fmt.Errorf("%s: objectName %s recorded twice", vw, v.ObjectName))
				}
				objects[v.ObjectName] = true
			}
		}
	}
	for _, c := range slices.Sorted(maps.Keys(s.Rendered)) {
		if !plainName(c) {
			errs = append(errs, fmt.Errorf("rendered: cluster %q is not a plain directory name", c))
		}
	}
	for _, c := range sortedClusters(s.OCI) {
		if !plainName(c) {
			errs = append(errs, fmt.Errorf("oci: cluster %q is not a plain directory name", c))
		}
		r := s.OCI[c]
		if r.Ref == "" {
			errs = append(errs, fmt.Errorf("oci.%s: no ref", c))
		}
		if !digestRE.MatchString(r.Digest) {
			errs = append(errs, fmt.Errorf("oci.%s: digest %q is not a sha256 digest", c, r.Digest))
		}
	}
	return errors.Join(errs...)
}

// plainName reports whether a cluster name can name a directory of its
// own: publish/state/<cluster>.yaml, publish/generated/<cluster>.
func plainName(c string) bool {
	return c != "" && c != "." && c != ".." && !strings.ContainsAny(c, `/\`)
}

func sortedClusters(m map[string]OCIRecord) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// StateIndex is publish/state.yaml split by artifact without parsing the
// artifacts: `publish plan` parses only those a change touches, so that its
// cost grows with the change, not with the catalog. It relies on the
// canonical form Marshal writes (one "- " item per artifact at the start of
// a line below "artifacts:", its "  name: " line inside); SplitState
// refuses anything else.
type StateIndex struct {
	// Header is the state without its artifacts (source, render keys).
	Header *State
	// Path is the state file's catalog path (StatePath), for messages.
	Path   string
	chunks map[string][]byte
}

// SplitState indexes data, the bytes of the state file at p (StatePath of
// a cluster). Errors: the file is not in Marshal's canonical form, or its
// header does not parse; ReadState then says what is wrong.
func SplitState(p string, data []byte) (*StateIndex, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var head bytes.Buffer
	idx := &StateIndex{Path: p, chunks: map[string][]byte{}}
	in := false
	var cur []byte
	flush := func() error {
		if cur == nil {
			return nil
		}
		name := ""
		for _, l := range bytes.Split(cur, []byte("\n")) {
			if n, ok := bytes.CutPrefix(l, []byte("  name: ")); ok {
				name = string(bytes.TrimSpace(n))
				break
			}
			if n, ok := bytes.CutPrefix(l, []byte("- name: ")); ok {
				name = string(bytes.TrimSpace(n))
				break
			}
		}
		if !dns1123.MatchString(name) || idx.chunks[name] != nil {
			return fmt.Errorf("%s: an artifact entry without a unique plain name", p)
		}
		idx.chunks[name] = cur
		cur = nil
		return nil
	}
	for _, l := range lines {
		switch {
		case bytes.Equal(bytes.TrimRight(l, "\n"), []byte("artifacts:")):
			in = true
			head.WriteString("artifacts: []\n")
			continue
		case in && bytes.HasPrefix(l, []byte("- ")):
			if err := flush(); err != nil {
				return nil, err
			}
			cur = append([]byte(nil), l...)
			continue
		case in && bytes.HasPrefix(l, []byte("  ")) && cur != nil:
			cur = append(cur, l...)
			continue
		case in:
			if err := flush(); err != nil {
				return nil, err
			}
			in = false
		}
		head.Write(l)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	h, err := ParseState(p, head.Bytes())
	if err != nil {
		return nil, err
	}
	if len(h.Artifacts) > 0 {
		return nil, fmt.Errorf("%s is not in the form publish writes (artifacts in flow style)", p)
	}
	idx.Header = h
	return idx, nil
}

// Names returns the artifact names in the state, sorted.
func (x *StateIndex) Names() []string {
	out := make([]string, 0, len(x.chunks))
	for n := range x.chunks {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Artifact parses and validates the entry of artifact name; ok is false
// when the state has none.
func (x *StateIndex) Artifact(name string) (a model.ArtifactRecord, ok bool, err error) {
	chunk := x.chunks[name]
	if chunk == nil {
		return a, false, nil
	}
	var s struct {
		Artifacts []model.ArtifactRecord `json:"artifacts"`
	}
	if err := yaml.UnmarshalStrict(append([]byte("artifacts:\n"), chunk...), &s); err != nil {
		return a, false, fmt.Errorf("catalog %s, artifact %s: %v (it is written by publish; restore it from the catalog's git history)", x.Path, name, err)
	}
	if len(s.Artifacts) != 1 || s.Artifacts[0].Name != name {
		return a, false, fmt.Errorf("catalog %s, artifact %s: not one entry", x.Path, name)
	}
	st := &State{Artifacts: s.Artifacts}
	if err := st.validate(); err != nil {
		return a, false, fmt.Errorf("catalog %s is not valid: %w", x.Path, err)
	}
	return s.Artifacts[0], true, nil
}

// Marshal returns the bytes of publish/state.yaml made of x with the
// source, render keys and OCI catalogs of header and the entries of arts in place of
// x's entries of the same names (arts not in x are added): what
// State.Marshal writes for the whole state, byte for byte, without parsing
// the entries of x that arts leave as they are. It is how `publish run`
// writes the state when it read only the artifacts a change touches
// (docs/design.md, "The engine"). Errors: those of State.Marshal.
func (x *StateIndex) Marshal(header *State, arts []model.ArtifactRecord) ([]byte, error) {
	head, err := (&State{Source: header.Source, Rendered: header.Rendered, OCI: header.OCI, Approvals: header.Approvals}).Marshal()
	if err != nil {
		return nil, err
	}
	chunks := make(map[string][]byte, len(x.chunks)+len(arts))
	for n, c := range x.chunks {
		chunks[n] = c
	}
	if len(arts) > 0 {
		data, err := (&State{Artifacts: arts}).Marshal()
		if err != nil {
			return nil, err
		}
		sub, err := SplitState(x.Path, data)
		if err != nil {
			return nil, err
		}
		for n, c := range sub.chunks {
			chunks[n] = c
		}
	}
	if len(chunks) == 0 {
		return head, nil
	}
	names := make([]string, 0, len(chunks))
	for n := range chunks {
		names = append(names, n)
	}
	sort.Strings(names)
	empty := []byte("\nartifacts: []\n")
	i := bytes.Index(head, empty)
	if i < 0 {
		return nil, fmt.Errorf("%s: no empty artifacts list in the header", x.Path)
	}
	var b bytes.Buffer
	b.Grow(len(head) + len(names)*512)
	b.Write(head[:i])
	b.WriteString("\nartifacts:\n")
	for _, n := range names {
		b.Write(chunks[n])
	}
	b.Write(head[i+len(empty):])
	return b.Bytes(), nil
}
