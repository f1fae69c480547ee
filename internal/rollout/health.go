package rollout

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// HealthDir is the directory of the health records in the catalog repo:
// one file per cluster, HealthPath, written by `publish status --record`.
const HealthDir = "publish/health"

// HealthAPIVersion is the apiVersion of a health record file.
const HealthAPIVersion = "publish.operator-publish.io/v1alpha1"

// HealthPath is the catalog path of cluster's health records.
func HealthPath(cluster string) string { return HealthDir + "/" + cluster + ".yaml" }

// Health is how a version's install is doing on a cluster.
type Health string

// Healths. Only Healthy passes a gate with healthy: true.
const (
	// Healthy: OLM v0's CSV is in phase Succeeded, or OLM v1's
	// ClusterExtension is Installed with that version.
	Healthy Health = "Healthy"
	// Failed: the CSV is in phase Failed, or the ClusterExtension reports
	// the install failed (Installed False, Progressing Blocked).
	Failed Health = "Failed"
	// Progressing: installing, upgrading, or another phase: not yet.
	Progressing Health = "Progressing"
)

// HealthRecord is what `publish status --record` saw of one version's
// install on a cluster.
type HealthRecord struct {
	Artifact string `json:"artifact"`
	Version  string `json:"version"` // semver without "v"
	// BundleDigest is the version's bundle digest in the cluster's state
	// (publish/state/<cluster>.yaml) when the record was made: the record
	// speaks for that bundle only.
	BundleDigest string `json:"bundleDigest,omitempty"`
	Health       Health `json:"health"`
	// Reason is the install's own words: the CSV's status.reason and
	// message, or the ClusterExtension condition's reason and message.
	Reason string `json:"reason,omitempty"`
	// Source names the object read: "Subscription NS/NAME, CSV NAME" or
	// "ClusterExtension NAME".
	Source string `json:"source"`
	// Time is when status read it (the recording run's clock, UTC).
	Time time.Time `json:"time"`
}

// HealthFile is the content of HealthPath(Cluster).
type HealthFile struct {
	APIVersion string         `json:"apiVersion"`
	Cluster    string         `json:"cluster"`
	Records    []HealthRecord `json:"records"`
}

// ParseHealth reads a health record file (path names it in errors). An
// unknown apiVersion or field, or a record without artifact, version or
// a known health is an error saying what to do.
func ParseHealth(path string, data []byte) (*HealthFile, error) {
	var h HealthFile
	if err := yaml.UnmarshalStrict(data, &h); err != nil {
		return nil, fmt.Errorf("%s: %v: it is written by publish status --record; delete it and record again", path, err)
	}
	if h.APIVersion != HealthAPIVersion {
		return nil, fmt.Errorf("%s: apiVersion %q: want %s (written by publish status --record; delete it and record again)", path, h.APIVersion, HealthAPIVersion)
	}
	for i, r := range h.Records {
		switch r.Health {
		case Healthy, Failed, Progressing:
		default:
			return nil, fmt.Errorf("%s: records[%d]: health %q: want Healthy, Failed or Progressing", path, i, r.Health)
		}
		if r.Artifact == "" || r.Version == "" {
			return nil, fmt.Errorf("%s: records[%d]: artifact and version are required", path, i)
		}
	}
	return &h, nil
}

// Marshal is the file's YAML, records sorted by artifact and version.
func (h *HealthFile) Marshal() ([]byte, error) {
	out := *h
	out.APIVersion = HealthAPIVersion
	out.Records = append([]HealthRecord(nil), h.Records...)
	sort.Slice(out.Records, func(i, j int) bool {
		a, b := out.Records[i], out.Records[j]
		if a.Artifact != b.Artifact {
			return a.Artifact < b.Artifact
		}
		return a.Version < b.Version
	})
	data, err := yaml.Marshal(out)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Written by publish status --record: the install health of each listed\n# version on this cluster (docs/rollout.md#health). Do not edit.\n"), data...), nil
}

// Find returns the record of artifact's version (nil h: none).
func (h *HealthFile) Find(artifact, version string) (HealthRecord, bool) {
	if h == nil {
		return HealthRecord{}, false
	}
	for _, r := range h.Records {
		if r.Artifact == artifact && r.Version == version {
			return r, true
		}
	}
	return HealthRecord{}, false
}

// Merge puts recs into h, each replacing the record of its version; the
// records of versions keep(artifact, version) is false for are dropped
// (no longer listed on the cluster). keep nil keeps every record.
func (h *HealthFile) Merge(recs []HealthRecord, keep func(artifact, version string) bool) {
	fresh := map[[2]string]bool{}
	for _, r := range recs {
		fresh[[2]string{r.Artifact, r.Version}] = true
	}
	var out []HealthRecord
	for _, r := range h.Records {
		if !fresh[[2]string{r.Artifact, r.Version}] && (keep == nil || keep(r.Artifact, r.Version)) {
			out = append(out, r)
		}
	}
	h.Records = append(out, recs...)
}

// checkHealth is the health part of a gate with healthy: true: "" when
// the upstream cluster's record says the version, with bundle digest
// digest ("" not known yet), is Healthy; else why it is held.
func checkHealth(cluster string, h *HealthFile, artifact, version, digest string) string {
	r, ok := h.Find(artifact, version)
	switch {
	case !ok:
		return fmt.Sprintf("no health record of %s on %s: run publish status --record against %s", version, cluster, cluster)
	case digest != "" && r.BundleDigest != "" && r.BundleDigest != digest:
		return fmt.Sprintf("the health record on %s is for bundle %s, not %s: record again after %s installs this bundle", cluster, short(r.BundleDigest), short(digest), cluster)
	case r.Health == Healthy:
		return ""
	}
	why := fmt.Sprintf("recorded %s on %s at %s (%s)", r.Health, cluster, stamp(r.Time), r.Source)
	if r.Reason != "" {
		why += ": " + strings.TrimSpace(r.Reason)
	}
	if r.Health == Failed {
		why = "held: " + why
	}
	return why
}

// recordHealth is the Health of the record that holds a version, "none"
// when there is no record for it and that digest.
func recordHealth(h *HealthFile, artifact, version, digest string) Health {
	r, ok := h.Find(artifact, version)
	if !ok || digest != "" && r.BundleDigest != "" && r.BundleDigest != digest {
		return "none"
	}
	return r.Health
}

// healthEvidence is the line of a pull request's gate evidence that
// gives cluster's health record of a version (HealthPath, written by
// publish status --record): its health, when it was recorded, the object
// read, the bundle and the install's own words:
// "staging recorded tiny 1.2.0 Healthy at 2026-12-01T10:05Z (Subscription operators/tiny, CSV tiny.v1.2.0, bundle sha256:1212…): phase Succeeded".
// A version without a record says so.
func healthEvidence(cluster string, h *HealthFile, artifact, version string) string {
	r, ok := h.Find(artifact, version)
	if !ok {
		return fmt.Sprintf("%s has no health record of %s %s", cluster, artifact, version)
	}
	src := r.Source
	if r.BundleDigest != "" {
		src += ", bundle " + short(r.BundleDigest)
	}
	line := fmt.Sprintf("%s recorded %s %s %s at %s (%s)", cluster, artifact, version, r.Health, stamp(r.Time), src)
	if r.Reason != "" {
		line += ": " + strings.TrimSpace(r.Reason)
	}
	return line
}
