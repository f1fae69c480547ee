package pipeline

import (
	"errors"
	"strings"
	"testing"
)

// TestDecide: every condition of docs/design.md's list that is known before
// a manifest is read takes the full way with its reason, the first one in
// the order they are gathered wins, and no condition is the incremental
// way.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      facts
		reason string // "" : incremental
	}{
		{"nothing forces the full way", facts{}, ""},
		{"asked for", facts{askedFull: true}, "asked for"},
		{"a change set (push --catalog)", facts{changeSet: true}, "a change set was given"},
		{"the target renders the whole catalog", facts{wholeCatalog: "olm"}, "the olm target renders the whole catalog"},
		{"a first publish", facts{emptyCatalog: true}, "the catalog branch has no commits"},
		{"the older single state file", facts{legacyState: true}, "the older single publish/state.yaml"},
		{"a cluster new to the catalog", facts{noState: true, cluster: "edge"}, "no publish/state/edge.yaml yet"},
		{"a state that does not split", facts{stateErr: errors.New("publish/state/global.yaml: line 3: bad")}, "line 3: bad"},
		{"written by an older publish", facts{noHeader: true, cluster: "global"}, "no render key or source commit for cluster global"},
		{"no rendered/<cluster>", facts{missing: "rendered/global"}, "the catalog has no rendered/global"},
		{"a link where publish renders", facts{linked: "rendered/global/other"}, "rendered/global/other is a symbolic link or a submodule, not a file publish rendered: it is replaced"},
		{"the render key changed", facts{keyChanged: true}, "the overlays, the render configuration or the cluster's artifact selection changed"},
		{"the packages directory is gone", facts{noPackages: "/src/packages"}, "/src/packages is not a directory"},
		{"no base", facts{noBase: true}, "change detection has no base"},
		{"the published commit is outside the history", facts{outsideHistory: "0123456789ab"}, "the published source commit 0123456789ab is not in the package repo"},
		{"something named like a manifest", facts{suspect: "packages/a/1/manifest.yml"}, "packages/a/1/manifest.yml is named like a manifest"},
		{"the first fact wins", facts{emptyCatalog: true, noBase: true, suspect: "x"}, "the catalog branch has no commits"},
	} {
		w, reason := decide(c.f)
		if c.reason == "" {
			if w != wayIncremental || reason != "" {
				t.Errorf("%s: full (%q), want incremental", c.name, reason)
			}
			continue
		}
		if w != wayFull || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: way %v reason %q, want full with %q", c.name, w, reason, c.reason)
		}
	}
}
