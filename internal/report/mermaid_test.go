package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/testenv"
)

// corpusGraphs is a plan whose graphs are the corpus packages' with two
// versions or more, and the first four with one, each going from every
// version but the newest (before) to every version but the oldest
// (after): a new head and a delisted version where a package has two
// versions or more.
func corpusGraphs(t *testing.T) (*report.Plan, map[string][]*bundle.Bundle) {
	t.Helper()
	shared := testenv.RequireShared(t)
	bs, err := testenv.CorpusBundles(filepath.Join(shared, "corpus"), t.TempDir())
	if err != nil {
		t.Logf("corpus bundles left out: %v", err)
	}
	byPkg := map[string][]*bundle.Bundle{}
	for _, b := range append(bs, skipper()...) {
		byPkg[b.Package] = append(byPkg[b.Package], b)
	}
	p := &report.Plan{Cluster: "edge"}
	var names []string
	for n := range byPkg {
		names = append(names, n)
	}
	sort.Strings(names)
	single := 0
	for _, n := range names {
		pb := byPkg[n]
		if len(pb) == 1 {
			if single++; single > 4 {
				continue
			}
		}
		sort.Slice(pb, func(i, j int) bool { return semver.MustParse(pb[i].Version).LT(semver.MustParse(pb[j].Version)) })
		byPkg[n] = pb
		var vs []string
		gb := map[string]report.GraphBundle{}
		for _, b := range pb {
			vs = append(vs, b.Version)
			gb[b.Version] = report.GraphBundle{Version: b.Version, CSVName: b.CSVName, Replaces: b.CSV.Spec.Replaces, Skips: b.CSV.Spec.Skips, SkipRange: b.CSV.Annotations["olm.skipRange"], Channels: b.Channels}
		}
		before, after := vs[:len(vs)-1], vs
		if len(vs) > 1 {
			after = vs[1:]
		}
		p.Graphs = append(p.Graphs, report.NewPlanGraph(n, before, after, gb))
	}
	return p, byPkg
}

// skipper is a package the corpus lacks: an upgrade graph with skips and
// a skipRange besides replaces, and a version in two channels.
func skipper() []*bundle.Bundle {
	mk := func(v, replaces string, skips []string, skipRange string, channels ...string) *bundle.Bundle {
		csv := &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "skipper.v" + v, Annotations: map[string]string{}}}
		csv.Spec.Replaces, csv.Spec.Skips = replaces, skips
		if skipRange != "" {
			csv.Annotations["olm.skipRange"] = skipRange
		}
		return &bundle.Bundle{CSV: csv, CSVName: csv.Name, Version: v, Package: "skipper", Channels: channels}
	}
	return []*bundle.Bundle{
		mk("1.0.0", "", nil, "", "stable"),
		mk("1.1.0", "skipper.v1.0.0", nil, "", "stable", "fast"),
		mk("1.2.0", "skipper.v1.1.0", []string{"skipper.v1.0.0"}, "", "stable", "fast"),
		mk("1.3.0", "", nil, ">=1.0.0 <1.3.0", "stable"),
	}
}

// wantEdges are the upgrade edges the CSVs of bundles give between the
// versions listed in channel ch: "<from> <kind> <to>".
func wantEdges(bundles []*bundle.Bundle, listed []string, ch string) map[string]bool {
	in := map[string]bool{}
	csv := map[string]string{}
	for _, b := range bundles {
		chs := b.Channels
		if len(chs) == 0 {
			chs = []string{"stable"}
		}
		for _, c := range chs {
			if c == ch {
				in[b.Version] = true
			}
		}
	}
	on := map[string]bool{}
	for _, v := range listed {
		if in[v] {
			on[v] = true
		}
	}
	for _, b := range bundles {
		if on[b.Version] {
			csv[b.CSVName] = b.Version
		}
	}
	out := map[string]bool{}
	for _, b := range bundles {
		if !on[b.Version] {
			continue
		}
		seen := map[string]bool{}
		add := func(to, kind string) {
			if to != "" && to != b.Version && !seen[to] {
				seen[to] = true
				out[b.Version+" "+kind+" "+to] = true
			}
		}
		add(csv[b.CSV.Spec.Replaces], report.EdgeReplaces)
		for _, s := range b.CSV.Spec.Skips {
			add(csv[s], report.EdgeSkips)
		}
		if r, err := semver.ParseRange(b.CSV.Annotations["olm.skipRange"]); err == nil {
			for v := range on {
				if r(semver.MustParse(v)) {
					add(v, report.EdgeSkipRange)
				}
			}
		}
	}
	return out
}

// mermaidFence matches a ```mermaid block of the Markdown.
var mermaidFence = regexp.MustCompile("(?s)```mermaid\n(.*?)```\n")

// summaryPage is the job summary page of md as a forge shows it: the text,
// and each ```mermaid block drawn by Mermaid (the script at mermaidJS) into
// SVG; the page writes what it drew (the ids of the edges and labels of
// each diagram, its struck-out labels) or the parse errors as JSON into
// <pre id="result">.
func summaryPage(md, mermaidJS string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>publish plan</title><script src=\"file://%s\"></script></head><body>\n", mermaidJS)
	last := 0
	for _, m := range mermaidFence.FindAllStringSubmatchIndex(md, -1) {
		fmt.Fprintf(&b, "<pre>%s</pre>\n<div class=\"mermaid-src\" hidden>%s</div>\n", html.EscapeString(md[last:m[0]]), html.EscapeString(md[m[2]:m[3]]))
		last = m[1]
	}
	fmt.Fprintf(&b, "<pre>%s</pre>\n", html.EscapeString(md[last:]))
	b.WriteString(`<div id="out"></div><pre id="result"></pre>
<script>
(async () => {
  const res = {errors: [], diagrams: []};
  try {
    mermaid.initialize({startOnLoad: false, securityLevel: 'strict'});
    const srcs = document.querySelectorAll('.mermaid-src');
    for (let i = 0; i < srcs.length; i++) {
      const text = srcs[i].textContent;
      try {
        await mermaid.parse(text);
        const {svg} = await mermaid.render('graph' + i, text);
        const div = document.createElement('div');
        div.innerHTML = svg;
        document.getElementById('out').appendChild(div);
        const edges = [...div.querySelectorAll('path[data-id^="L_"]')].map(e => e.getAttribute('data-id'));
        const labels = [...div.querySelectorAll('.edgeLabel .label[data-id^="L_"]')].map(e => [e.getAttribute('data-id'), e.textContent.trim()]);
        const dels = [...div.querySelectorAll('del')].map(e => e.textContent.trim());
        res.diagrams.push({edges, labels, dels});
      } catch (e) {
        res.errors.push('diagram ' + i + ': ' + ((e && e.message) || String(e)));
      }
    }
  } catch (e) {
    res.errors.push(String(e));
  }
  document.getElementById('result').textContent = JSON.stringify(res);
})();
</script>
</body></html>
`)
	return b.String()
}

// drawn is what the page says Mermaid drew.
type drawn struct {
	Errors   []string `json:"errors"`
	Diagrams []struct {
		Edges  []string    `json:"edges"`
		Labels [][2]string `json:"labels"`
		Dels   []string    `json:"dels"`
	} `json:"diagrams"`
}

// TestPlanMermaidInChromium: the job summary of a plan whose upgrade
// graphs are the corpus packages' (and skipper's, whose CSVs skip and
// have a skipRange), before and after, is drawn by
// Mermaid (the npm package, hack/mermaid/build.sh) in Debian's headless
// Chromium, started once: no diagram fails to parse or render, each
// drawn edge is one the package's CSVs give (replaces, skips, skipRange
// between versions listed in that channel) with its kind as label, and
// every such edge is drawn; each delisted version is struck out. The
// screenshot of the page is kept (PUBLISH_TEST_ARTIFACTS, else the
// system's temporary directory) and its path logged.
func TestPlanMermaidInChromium(t *testing.T) {
	chromium := testenv.Require(t, "chromium", "chromium")
	js := os.Getenv("MERMAID_JS")
	if js == "" {
		testenv.Skip(t, "this test needs Mermaid: run hack/mermaid/build.sh and set MERMAID_JS to the path it prints")
	}
	p, byPkg := corpusGraphs(t)
	if len(p.Graphs) < 6 {
		t.Fatalf("%d corpus packages drawn, want the corpus", len(p.Graphs))
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "summary.html")
	if err := os.WriteFile(page, []byte(summaryPage(p.Markdown(), js)), 0o644); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("PUBLISH_TEST_ARTIFACTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "operator-publish-test-artifacts")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, "plan-mermaid.png")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--allow-file-access-from-files", "--virtual-time-budget=10000", "--window-size=1400,6000",
		"--screenshot="+shot, "--dump-dom", "file://"+page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	t.Logf("screenshot of the job summary: %s", shot)
	m := regexp.MustCompile(`(?s)<pre id="result">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil || len(m[1]) == 0 {
		t.Fatalf("the page wrote no result (Mermaid did not run?):\n%s", stderr.String())
	}
	var got drawn
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
		t.Fatalf("result: %v\n%s", err, m[1])
	}
	for _, e := range got.Errors {
		t.Errorf("mermaid: %s", e)
	}
	if len(got.Diagrams) != len(p.Graphs) {
		t.Fatalf("%d diagrams drawn, want %d", len(got.Diagrams), len(p.Graphs))
	}
	edges := 0
	for i, g := range p.Graphs {
		d := got.Diagrams[i]
		label := map[string]string{}
		for _, l := range d.Labels {
			label[l[0]] = l[1]
		}
		// The drawn edges, per side and channel: "<from> <kind> <to>".
		have := map[string]map[string]bool{}
		for _, id := range d.Edges {
			f := strings.Split(id, "_")
			if len(f) != 4 {
				t.Errorf("%s: edge id %q", g.Package, id)
				continue
			}
			from, ci, okf := nodeVersion(g, f[1])
			to, cj, okt := nodeVersion(g, f[2])
			if !okf || !okt || ci != cj || f[1][0] != f[2][0] {
				t.Errorf("%s: edge %s joins nodes that are no versions of one channel and side", g.Package, id)
				continue
			}
			k := f[1][:1] + g.Channels[ci].Name
			if have[k] == nil {
				have[k] = map[string]bool{}
			}
			have[k][from+" "+label[id]+" "+to] = true
			edges++
		}
		var gone int
		for _, c := range g.Channels {
			for _, side := range []struct {
				key    string
				listed []string
			}{{"b" + c.Name, c.Before.Versions}, {"a" + c.Name, c.After.Versions}} {
				want := wantEdges(byPkg[g.Package], side.listed, c.Name)
				for e := range want {
					if !have[side.key][e] {
						t.Errorf("%s channel %s (%s): edge %q not drawn", g.Package, c.Name, side.key[:1], e)
					}
				}
				for e := range have[side.key] {
					if !want[e] {
						t.Errorf("%s channel %s (%s): edge %q drawn, not in the CSVs", g.Package, c.Name, side.key[:1], e)
					}
				}
			}
			after := map[string]bool{}
			for _, v := range c.After.Versions {
				after[v] = true
			}
			for _, v := range c.Before.Versions {
				if !after[v] {
					gone++
				}
			}
		}
		if len(d.Dels) != gone {
			t.Errorf("%s: %d versions struck out (%v), want %d delisted", g.Package, len(d.Dels), d.Dels, gone)
		}
	}
	if edges == 0 {
		t.Error("no edge drawn for the whole corpus")
	}
	t.Logf("%d diagrams, %d edges drawn and checked", len(got.Diagrams), edges)
}

// nodeVersion maps a node id of g's Mermaid (report.NodeID) back to its
// version and channel index.
func nodeVersion(g report.PlanGraph, id string) (string, int, bool) {
	var side byte
	var ci, i int
	if _, err := fmt.Sscanf(id, "%c%dv%d", &side, &ci, &i); err != nil || ci >= len(g.Channels) {
		return "", 0, false
	}
	vs := g.Channels[ci].Before.Versions
	if side == 'a' {
		vs = g.Channels[ci].After.Versions
	}
	if side != 'a' && side != 'b' || i >= len(vs) {
		return "", 0, false
	}
	return vs[i], ci, true
}
