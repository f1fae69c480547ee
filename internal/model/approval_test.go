package model

import (
	"reflect"
	"testing"
)

// TestChangedDigests: the versions a change of a cluster's records
// listed are the new, relisted and rebuilt ones, never those it kept or
// delisted.
func TestChangedDigests(t *testing.T) {
	before := []ArtifactRecord{
		{Name: "tiny", Present: true, Versions: []VersionRecord{{Version: "1.1.0", Present: true, BundleDigest: "sha256:11"}, {Version: "1.2.0", Present: true, BundleDigest: "sha256:12"}, {Version: "1.3.0", Present: false, BundleDigest: "sha256:13"}}},
		{Name: "gone", Present: true, Versions: []VersionRecord{{Version: "1.0.0", Present: true, BundleDigest: "sha256:g"}}},
	}
	after := []ArtifactRecord{
		{Name: "other", Present: true, Versions: []VersionRecord{{Version: "0.1.0", Present: true, BundleDigest: "sha256:o"}}},
		{Name: "tiny", Present: true, Versions: []VersionRecord{{Version: "1.1.0", Present: true, BundleDigest: "sha256:11"}, {Version: "1.2.0", Present: true, BundleDigest: "sha256:12b"}, {Version: "1.3.0", Present: true, BundleDigest: "sha256:13"}, {Version: "1.4.0", Present: false, BundleDigest: "sha256:14"}}},
		{Name: "gone", Present: false, Versions: []VersionRecord{{Version: "1.0.0", Present: true, BundleDigest: "sha256:g"}}},
	}
	want := []ApprovedDigest{{"other", "0.1.0", "sha256:o"}, {"tiny", "1.2.0", "sha256:12b"}, {"tiny", "1.3.0", "sha256:13"}}
	if got := ChangedDigests(before, after); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := ChangedDigests(after, after); got == nil || len(got) != 0 {
		t.Errorf("no change: %+v", got)
	}
}
