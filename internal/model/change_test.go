package model

import (
	"reflect"
	"testing"
)

// TestChangeItem: Item and ParseChange are inverses for every shape of
// change a report prints.
func TestChangeItem(t *testing.T) {
	for _, c := range []Change{
		{Kind: ChangeListed, Artifact: "tiny", Versions: []string{"1.0.0", "1.1.0"}},
		{Kind: ChangeDelisted, Artifact: "old", Whole: true},
		{Kind: ChangeUpdated, Artifact: "etcd"},
		{Kind: ChangeUpgraded, Artifact: "etcd", Versions: []string{"0.9.5"}},
	} {
		if got := ParseChange(c.Kind, c.Item()); !reflect.DeepEqual(got, c) {
			t.Errorf("%q: parsed %+v, want %+v", c.Item(), got, c)
		}
	}
	if got := (Change{Artifact: "old", Whole: true}).Item(); got != "old (artifact)" {
		t.Errorf("whole artifact: %q", got)
	}
}

// TestUpdatedInPlace: a version whose rendered record (bundle digest,
// images, object name) changed is named with its version; an artifact
// whose own fields changed by its name alone; a moved manifest (Path) and
// artifacts listed or delisted are not updates in place.
func TestUpdatedInPlace(t *testing.T) {
	v := func(ver, digest, path string) VersionRecord {
		return VersionRecord{Version: ver, Tag: "v" + ver, Present: true, BundleDigest: digest, Path: path}
	}
	prev := []ArtifactRecord{
		{Name: "a", Present: true, DisplayName: "A", Versions: []VersionRecord{v("1.0.0", "sha256:1", "p"), v("1.1.0", "sha256:2", "p")}},
		{Name: "b", Present: true, DisplayName: "B", Versions: []VersionRecord{v("1.0.0", "sha256:3", "p")}},
		{Name: "c", Present: true, Versions: []VersionRecord{v("1.0.0", "sha256:4", "p")}},
	}
	next := []ArtifactRecord{
		{Name: "a", Present: true, DisplayName: "A", Versions: []VersionRecord{v("1.0.0", "sha256:1", "moved"), v("1.1.0", "sha256:9", "p")}},
		{Name: "b", Present: true, DisplayName: "B again", Versions: []VersionRecord{v("1.0.0", "sha256:3", "p")}},
		{Name: "c", Present: false, Versions: []VersionRecord{v("1.0.0", "sha256:5", "p")}},
		{Name: "d", Present: true, Versions: []VersionRecord{v("1.0.0", "sha256:6", "p")}},
	}
	want := []Change{{Kind: ChangeUpdated, Artifact: "a", Versions: []string{"1.1.0"}}, {Kind: ChangeUpdated, Artifact: "b"}}
	if got := UpdatedInPlace(prev, next); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := ChangedArtifacts(append(want, Change{Kind: ChangeListed, Artifact: "a"})); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("changed artifacts %v", got)
	}
}
