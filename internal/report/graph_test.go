package report

import (
	"reflect"
	"strings"
	"testing"
)

// TestNewPlanGraph: edges by replaces, skips and skipRange between the
// versions listed on each side of one channel (one edge per pair, replaces
// first), a version in two channels in both, a version without a bundle in
// channel "-", the head; the Mermaid marks the new head, strikes out the
// delisted version and escapes a hostile channel name.
func TestNewPlanGraph(t *testing.T) {
	bundles := map[string]GraphBundle{
		"1.0.0": {Version: "1.0.0", CSVName: "op.v1.0.0", Channels: []string{"stable"}},
		"1.1.0": {Version: "1.1.0", CSVName: "op.v1.1.0", Replaces: "op.v1.0.0", Channels: []string{"stable", `fast"]x`}},
		"1.2.0": {Version: "1.2.0", CSVName: "op.v1.2.0", Replaces: "op.v1.1.0", Skips: []string{"op.v1.1.0", "op.v1.0.0"}, SkipRange: ">=1.0.0 <1.2.0", Channels: []string{"stable"}},
	}
	g := NewPlanGraph("op", []string{"0.9.0", "1.0.0", "1.1.0"}, []string{"1.1.0", "1.2.0"}, bundles)
	var names []string
	for _, c := range g.Channels {
		names = append(names, c.Name)
	}
	if !reflect.DeepEqual(names, []string{"-", `fast"]x`, "stable"}) {
		t.Fatalf("channels %q", names)
	}
	st := g.Channels[2]
	if !reflect.DeepEqual(st.Before.Edges, []GraphEdge{{"1.1.0", "1.0.0", EdgeReplaces}}) || st.Before.Head != "1.1.0" {
		t.Errorf("stable before: %+v", st.Before)
	}
	if !reflect.DeepEqual(st.After.Edges, []GraphEdge{{"1.2.0", "1.1.0", EdgeReplaces}}) || st.After.Head != "1.2.0" || !reflect.DeepEqual(st.After.Versions, []string{"1.1.0", "1.2.0"}) {
		t.Errorf("stable after: %+v", st.After)
	}
	all := NewPlanGraph("op", nil, []string{"1.0.0", "1.1.0", "1.2.0"}, bundles).Channels[1].After.Edges
	if !reflect.DeepEqual(all, []GraphEdge{{"1.1.0", "1.0.0", EdgeReplaces}, {"1.2.0", "1.1.0", EdgeReplaces}, {"1.2.0", "1.0.0", EdgeSkips}}) {
		t.Errorf("stable with every version: %+v", all)
	}
	if g.Channels[0].Before.Versions[0] != "0.9.0" || len(g.Channels[0].After.Versions) != 0 {
		t.Errorf("the version without a bundle: %+v", g.Channels[0])
	}
	m := g.Mermaid()
	for _, want := range []string{
		`a2v1["<b>1.2.0</b> (new head)"]`, `g2v0["<del>1.0.0</del> (delisted)"]`, `g0v0["<del>0.9.0</del> (delisted)"]`, `b2v1["1.1.0 (head)"]`,
		"a2v1 -- replaces --> a2v0", `subgraph a1["channel fast#quot;]x"]`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("Mermaid lacks %q:\n%s", want, m)
		}
	}
}
