package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rulesTable renders the catalog as the Markdown table of
// docs/lint-rules.md.
func rulesTable() string {
	html := strings.NewReplacer("<", "&lt;", ">", "&gt;")
	esc := func(s string) string {
		// Angle brackets outside code spans would be read as HTML.
		parts := strings.Split(strings.NewReplacer("|", `\|`, "\n", " ").Replace(s), "`")
		for i := 0; i < len(parts); i += 2 {
			parts[i] = html.Replace(parts[i])
		}
		return strings.Join(parts, "`")
	}
	var b strings.Builder
	b.WriteString("| ID | Default severity | What it checks | How to fix |\n|---|---|---|---|\n")
	for _, r := range Rules() {
		sev := string(r.Severity)
		if r.Validator {
			sev += " (validator's grade)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.ID, sev, esc(r.Summary), esc(r.Hint))
	}
	return b.String()
}

// TestDocs keeps the table of docs/lint-rules.md equal to the catalog
// (go test ./internal/lint/ -update rewrites it).
func TestDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "lint-rules.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	const begin, end = "<!-- rules:begin", "<!-- rules:end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no %s ... %s markers", path, begin, end)
	}
	i += strings.Index(doc[i:], "\n") + 1
	got := doc[:i] + rulesTable() + doc[j:]
	if got == doc {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the rule table differs from the catalog (go test ./internal/lint/ -update)", path)
}
