package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
)

// TestHealthGate: a gate with Healthy passes only on a Healthy record of
// the same bundle, after the soak; each other case holds with its reason.
func TestHealthGate(t *testing.T) {
	staging := catalog.NewHistory("staging", ev("staging", "1.0.0", true, "sha256:a", 0))
	rec := func(h Health, digest, reason string) *HealthFile {
		return &HealthFile{Cluster: "staging", Records: []HealthRecord{{Artifact: "etcd", Version: "1.0.0", BundleDigest: digest, Health: h, Reason: reason, Source: "Subscription ops/etcd, CSV etcd.v1.0.0", Time: t0.Add(2 * time.Hour)}}}
	}
	for _, tc := range []struct {
		name   string
		file   *HealthFile
		at     float64
		want   string
		health Health
	}{
		{"healthy, soaked", rec(Healthy, "sha256:a", ""), 4, "", ""},
		{"healthy, soaking", rec(Healthy, "sha256:a", ""), 1, "soaking 4h0m0s: 3h0m0s left", ""},
		{"no record", nil, 4, "no health record of 1.0.0 on staging: run publish status --record against staging", "none"},
		{"other bundle", rec(Healthy, "sha256:z", ""), 4, "the health record on staging is for bundle sha256:z, not sha256:a", "none"},
		{"failed", rec(Failed, "sha256:a", "phase Failed: InstallComponentFailed"), 4, "held: recorded Failed on staging at 2026-12-01T10:00Z (Subscription ops/etcd, CSV etcd.v1.0.0): phase Failed: InstallComponentFailed", Failed},
		{"progressing", rec(Progressing, "sha256:a", "phase Installing"), 4, "recorded Progressing on staging", Progressing},
		{"failed, soaking", rec(Failed, "sha256:a", "x"), 1, "soaking 4h0m0s: 3h0m0s left (until 2026-12-01T12:00Z); held: recorded Failed", Failed},
	} {
		g := &Gates{Cluster: "prod", Gates: []Gate{{Cluster: "staging", Soak: 4 * time.Hour, Healthy: true}},
			Histories: map[string]*catalog.History{"staging": staging}, Health: map[string]*HealthFile{"staging": tc.file}}
		w := g.Check("etcd", "1.0.0", "sha256:a", t0.Add(time.Duration(tc.at*float64(time.Hour))))
		switch {
		case tc.want == "" && w != nil:
			t.Errorf("%s: waits: %+v", tc.name, w)
		case tc.want != "" && (w == nil || !strings.Contains(w.Reason, tc.want) || w.Health != tc.health):
			t.Errorf("%s: %+v, want %q (health %q)", tc.name, w, tc.want, tc.health)
		}
	}
}

// TestHealthFile: the file round-trips sorted, Merge replaces a version's
// record and drops those no longer listed, and a bad file is an error
// naming it.
func TestHealthFile(t *testing.T) {
	h := &HealthFile{Cluster: "staging", Records: []HealthRecord{
		{Artifact: "tiny", Version: "1.0.0", Health: Healthy, Source: "s", Time: t0},
		{Artifact: "etcd", Version: "0.9.4", Health: Failed, Source: "s", Time: t0},
		{Artifact: "gone", Version: "1.0.0", Health: Healthy, Source: "s", Time: t0},
	}}
	h.Merge([]HealthRecord{{Artifact: "etcd", Version: "0.9.4", Health: Healthy, Source: "s", Time: t0.Add(time.Hour)}}, func(a, _ string) bool { return a != "gone" })
	data, err := h.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseHealth(HealthPath("staging"), data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Records) != 2 || back.Records[0].Artifact != "etcd" || back.Records[0].Health != Healthy || !back.Records[0].Time.Equal(t0.Add(time.Hour)) || back.Records[1].Artifact != "tiny" {
		t.Errorf("%s", data)
	}
	for _, tc := range []struct{ data, want string }{
		{"apiVersion: v0\ncluster: x\nrecords: []\n", `publish/health/x.yaml: apiVersion "v0"`},
		{"apiVersion: " + HealthAPIVersion + "\ncluster: x\nrecords:\n- {artifact: a, version: 1.0.0, health: Fine}\n", `records[0]: health "Fine"`},
		{"apiVersion: " + HealthAPIVersion + "\ncluster: x\nextra: 1\n", "extra"},
	} {
		if _, err := ParseHealth("publish/health/x.yaml", []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.data, err, tc.want)
		}
	}
}

// TestEvidence: a pull request's gate evidence gives, per gate, when the
// upstream cluster listed the version (its catalog commit), and for a gate
// with healthy: true the health record of the version there, or that
// there is none.
func TestEvidence(t *testing.T) {
	staging := catalog.NewHistory("staging", catalog.VersionEvent{Cluster: "staging", Artifact: "etcd", Version: "1.0.0", Present: true,
		BundleDigest: "sha256:1212121212121212", Commit: strings.Repeat("c", 40), Time: t0})
	lab := catalog.NewHistory("lab")
	g := &Gates{Cluster: "prod", Gates: []Gate{{Cluster: "staging", Soak: time.Hour, Healthy: true}, {Cluster: "lab"}},
		Histories: map[string]*catalog.History{"staging": staging, "lab": lab},
		Health: map[string]*HealthFile{"staging": {Cluster: "staging", Records: []HealthRecord{{Artifact: "etcd", Version: "1.0.0",
			BundleDigest: "sha256:1212121212121212", Health: Healthy, Reason: "phase Succeeded: InstallSucceeded", Source: "Subscription operators/etcd, CSV etcd.v1.0.0", Time: t0.Add(90 * time.Minute)}}}}}
	want := []string{
		"staging listed etcd 1.0.0 at 2026-12-01T08:00Z (catalog commit cccccccccccc), soak 1h0m0s",
		"staging recorded etcd 1.0.0 Healthy at 2026-12-01T09:30Z (Subscription operators/etcd, CSV etcd.v1.0.0, bundle sha256:121212121212): phase Succeeded: InstallSucceeded",
		"lab does not list etcd 1.0.0",
	}
	if got := g.Evidence("etcd", "1.0.0"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("evidence:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g.Health = nil
	if got := g.Evidence("etcd", "1.0.0"); len(got) != 3 || got[1] != "staging has no health record of etcd 1.0.0" {
		t.Errorf("no record: %q", got)
	}
}
