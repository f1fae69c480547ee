package pipeline

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/render"
)

func TestCommitMessageTemplate(t *testing.T) {
	ch := render.Changes{Listed: []string{"tiny 1.0.0"}, Delisted: []string{"old 0.1.0"}}
	tmpl, err := ParseCommitTemplate("chore(catalog): {{.Subject}}\n\n{{range .Listed}}+ {{.}}\n{{end}}{{range .Delisted}}- {{.}}\n{{end}}")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := commitMessage(tmpl, ch, "abc123", "https://git.example.com/ops.git")
	if err != nil {
		t.Fatal(err)
	}
	want := "chore(catalog): publish: list 1, delist 1\n\n+ tiny 1.0.0\n- old 0.1.0\n\nSource-Commit: abc123\nSource-Repo: https://git.example.com/ops.git\n"
	if msg != want {
		t.Errorf("message:\n%s\nwant:\n%s", msg, want)
	}
	// The default names every change and the trailers.
	def, _ := commitMessage(nil, ch, "abc123", "")
	for _, s := range []string{"publish: list 1, delist 1", "Listed:\n- tiny 1.0.0", "Delisted:\n- old 0.1.0", "Source-Commit: abc123"} {
		if !strings.Contains(def, s) {
			t.Errorf("default message lacks %q:\n%s", s, def)
		}
	}
	for _, bad := range []string{"{{.Nope}}", "{{.Subject", "{{range .Listed}}"} {
		if _, err := ParseCommitTemplate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCommitMessageClusters: the message of several clusters groups the
// changes by cluster; a template sees .Clusters, and the flat fields hold
// every cluster's changes once.
func TestCommitMessageClusters(t *testing.T) {
	cs := []ClusterChanges{
		{Name: "a", Changes: render.Changes{Listed: []string{"tiny 1.0.0"}}},
		{Name: "b", Changes: render.Changes{Listed: []string{"tiny 1.0.0"}, Delisted: []string{"other (artifact)"}}},
	}
	msg, err := commitMessageClusters(nil, cs, "abc123", "")
	if err != nil {
		t.Fatal(err)
	}
	want := "publish: list 1, delist 1 on a, b\n\nCluster a:\nListed:\n- tiny 1.0.0\n\nCluster b:\nListed:\n- tiny 1.0.0\n\nDelisted:\n- other (artifact)\n\nSource-Commit: abc123\n"
	if msg != want {
		t.Errorf("message:\n%q\nwant:\n%q", msg, want)
	}
	tmpl, err := ParseCommitTemplate("{{.Subject}}\n{{range .Clusters}}[{{.Name}}]{{range .Listed}} +{{.}}{{end}}{{range .Delisted}} -{{.}}{{end}}\n{{end}}")
	if err != nil {
		t.Fatal(err)
	}
	msg, err = commitMessageClusters(tmpl, cs, "abc123", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "publish: list 1, delist 1\n[a] +tiny 1.0.0\n[b] +tiny 1.0.0 -other (artifact)\n\nSource-Commit: abc123\n"; msg != want {
		t.Errorf("template:\n%q\nwant:\n%q", msg, want)
	}
	// One cluster, named or not: the message of one cluster.
	one, _ := commitMessageClusters(nil, []ClusterChanges{{Changes: cs[0].Changes}}, "abc123", "")
	if one != CommitMessage(cs[0].Changes, "abc123", "") {
		t.Errorf("one cluster:\n%s", one)
	}
}
