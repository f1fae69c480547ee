package publish

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// quotedDocs are the docs that quote publish's messages for a user to find
// them: troubleshooting.md's table (its first column) and the error lines in
// the code blocks of package-repo.md.
var quotedDocs = []string{"docs/troubleshooting.md", "docs/package-repo.md"}

// foreignMessages are quoted messages that publish does not write: they come
// from a library or a server and reach the user inside publish's own
// message. Each names where it comes from.
var foreignMessages = map[string]string{
	"knownhosts: key mismatch":                           "golang.org/x/crypto/ssh/knownhosts",
	"ssh: handshake failed: ssh: unable to authenticate": "golang.org/x/crypto/ssh",
	"x509: certificate signed by unknown authority":      "crypto/x509",
	"is forbidden: User":                                 "the Kubernetes API server's RBAC refusal",
	"MANIFEST_BLOB_UNKNOWN":                              "the distribution spec's error code",
}

// composedMessages are quoted messages that publish builds from pieces no
// one literal holds; each names the function that composes it, whose own
// tests pin the text.
var composedMessages = map[string]string{
	"TLS with HOST failed: pass":            "internal/registry's Error.Error, its hint joined by pass and or",
	"clone failed: authentication required": "internal/gitops' UnreachableError.Error (its Op, go-git's transport.ErrAuthenticationRequired)",
	"unknown field archs":                   "internal/manifest's fixTypeMsg over yaml v4's message",
}

// TestDocsQuoteMessages: every message that docs/troubleshooting.md and
// docs/package-repo.md quote for a user to look up is one publish prints.
// Each quoted message is cut at its placeholders (…, HOST, NAME, N, a
// quoted value, a path or a number); every run of at least two words left
// must be found in one string literal of the non-test code under cmd/ and
// internal/, where a format verb (%s, %d, %q, %v, …) of the literal stands
// for any words of the doc. A message that a library or a server writes is
// named in foreignMessages instead, and one composed from pieces in
// composedMessages.
func TestDocsQuoteMessages(t *testing.T) {
	lits := codeLiterals(t)
	for _, doc := range quotedDocs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range quotedMessages(string(data)) {
			if foreign(q.text) {
				continue
			}
			for _, run := range docRuns(q.text) {
				if !foundIn(run, lits) {
					t.Errorf("%s:%d quotes %q, but no message of cmd/ or internal/ holds %q: quote what publish prints (or name the library in foreignMessages)",
						doc, q.line, q.text, strings.Join(run, " "))
					break
				}
			}
		}
	}
}

type quoted struct {
	text string
	line int
}

// quotedMessages returns the backquoted spans of the first column of the
// doc's tables and the "error: " lines of its code blocks.
func quotedMessages(doc string) []quoted {
	var out []quoted
	span := regexp.MustCompile("`([^`]+)`")
	inBlock := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			if m, ok := strings.CutPrefix(line, "error: "); ok {
				out = append(out, quoted{m, i + 1})
			}
			continue
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(line, " | ")
		first := strings.TrimPrefix(cells[0], "| ")
		for _, m := range span.FindAllStringSubmatch(first, -1) {
			// A command name before the message ("`publish adopt`: `…`")
			// and the flags a row is about are not messages.
			if strings.HasPrefix(m[1], "publish ") || strings.HasPrefix(m[1], "--") && !strings.Contains(m[1], " ") {
				continue
			}
			out = append(out, quoted{m[1], i + 1})
		}
	}
	return out
}

func foreign(msg string) bool {
	for _, m := range []map[string]string{foreignMessages, composedMessages} {
		for f := range m {
			if strings.Contains(msg, f) {
				return true
			}
		}
	}
	return false
}

// wild stands for the words a placeholder or a format verb holds.
const wild = "\x00"

var (
	formatVerb  = regexp.MustCompile(`%[-+# 0-9.*\[\]]*[a-zA-Z%]`)
	docToken    = regexp.MustCompile(`"[^"]*"|<[^>]*>|…|\.\.\.|--[\w-]+:|\w+=|[\w.:/-]*[/:.][\w.:/-]*\w|[\w-]+|[^\w\s]`)
	placeholder = regexp.MustCompile(`^([A-Z][A-Z_]*|N|X|Y|[0-9][\w.]*|x|op|sha256)$`)
)

// docRuns cuts a quoted message at its placeholders and returns the runs of
// tokens between them that hold at least two words.
func docRuns(msg string) [][]string {
	var runs [][]string
	var cur []string
	words := 0
	flush := func() {
		// Punctuation at either end belongs to the placeholder beside it.
		for len(cur) > 0 && !regexp.MustCompile(`\w`).MatchString(cur[0]) {
			cur = cur[1:]
		}
		for len(cur) > 0 && !regexp.MustCompile(`\w`).MatchString(cur[len(cur)-1]) {
			cur = cur[:len(cur)-1]
		}
		if words >= 2 {
			runs = append(runs, cur)
		}
		cur, words = nil, 0
	}
	for _, tok := range docToken.FindAllString(msg, -1) {
		// A path, a file or field name, a digest, a flag's prefix of its
		// error ("--flag: "), a log attribute's key ("host=").
		isValue := len(tok) > 1 && (strings.ContainsAny(tok, "/:.=") && !strings.HasPrefix(tok, "--") || strings.HasPrefix(tok, "--") && strings.HasSuffix(tok, ":"))
		if tok == "…" || tok == "..." || strings.HasPrefix(tok, `"`) || strings.HasPrefix(tok, "<") || placeholder.MatchString(tok) || isValue {
			flush()
			continue
		}
		cur = append(cur, tok)
		if regexp.MustCompile(`^[A-Za-z][\w-]*$`).MatchString(tok) {
			words++
		}
	}
	flush()
	return runs
}

// litTokens tokenises a Go string literal's value as docRuns tokenises a
// message, with each format verb one wild token.
func litTokens(s string) []string {
	s = formatVerb.ReplaceAllString(s, " "+wild+" ")
	var out []string
	for _, f := range strings.Fields(s) {
		if f == wild {
			out = append(out, wild)
			continue
		}
		out = append(out, regexp.MustCompile(`[\w-]+|[^\w\s]`).FindAllString(f, -1)...)
	}
	return out
}

// foundIn reports whether the run of doc tokens occurs in one literal,
// starting and ending anywhere in it: a format verb of the literal takes one
// token of the run at its ends (a value the doc writes out, as "archs") and
// one or two inside it, and more than half of the run is spelt out.
func foundIn(run []string, lits [][]string) bool {
	for _, lit := range lits {
		for start := range lit {
			if matchFrom(run, lit[start:], 0, len(run)) {
				return true
			}
		}
	}
	return false
}

// matchFrom matches run against the start of lit; spelt counts the tokens
// matched literally so far, of total.
func matchFrom(run, lit []string, spelt, total int) bool {
	if len(run) == 0 {
		return 2*spelt > total
	}
	if len(lit) == 0 {
		return false
	}
	if lit[0] == wild {
		// At either end of the run it takes one token (a value the doc
		// writes out beside the words), inside it one or two.
		most := 2
		if spelt == 0 {
			most = 1
		}
		for k := 1; k <= most && k <= len(run); k++ {
			if k == len(run) && k > 1 {
				break
			}
			if matchFrom(run[k:], lit[1:], spelt, total) {
				return true
			}
		}
		return false
	}
	return run[0] == lit[0] && matchFrom(run[1:], lit[1:], spelt+1, total)
}

// codeLiterals returns the tokens of every string literal in the non-test
// Go files of cmd/ and internal/, literals joined by + taken as one.
func codeLiterals(t *testing.T) [][]string {
	var out [][]string
	fset := token.NewFileSet()
	for _, root := range []string{"cmd", "internal"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BinaryExpr:
					if s, ok := concat(n); ok {
						out = append(out, litTokens(s))
						return false
					}
				case *ast.BasicLit:
					if n.Kind == token.STRING {
						if s, err := strconv.Unquote(n.Value); err == nil {
							out = append(out, litTokens(s))
						}
					}
				}
				return true
			})
			return nil
		})
	}
	return out
}

// concat folds "a" + "b" (+ …) of string literals; any other operand
// becomes a wild token.
func concat(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		l, lok := concat(e.X)
		r, rok := concat(e.Y)
		if !lok && !rok {
			return "", false
		}
		if !lok {
			l = "%v"
		}
		if !rok {
			r = "%v"
		}
		return l + r, true
	case *ast.ParenExpr:
		return concat(e.X)
	}
	return "", false
}
