package ci

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// Tekton passes a step's results through the container's termination
// message: at most 4096 bytes for all results of the step together, as JSON
// ([{"key":"changed","value":"true","type":1},...]), next to Tekton's own
// entries (StartedAt). publish keeps each result's JSON entry within
// TektonResultMax and all of them within tektonBudget.
const (
	TektonResultMax = 1024
	tektonBudget    = 3072
	tektonEntry     = len(`{"key":"","value":,"type":1},`)
)

type tekton struct {
	plain
	resultsDir, reportDir string
	used                  map[string]int // encoded entry size per result written
}

func (t *tekton) Name() string { return Tekton }

// SetOutput writes the result file resultsDir/name, truncated to fit the
// termination message; the full value then goes to $PUBLISH_REPORT_DIR/name
// and the truncated value ends with a pointer to it.
func (t *tekton) SetOutput(name, value string) error {
	if err := checkOutputName(name); err != nil {
		return err
	}
	if t.used == nil {
		t.used = map[string]int{}
	}
	delete(t.used, name) // rewriting a result replaces it
	others := 0
	for _, n := range t.used {
		others += n
	}
	limit := min(TektonResultMax, tektonBudget-others) - tektonEntry - len(name)
	out := value
	if encodedLen(value) > limit {
		where := "set " + EnvReportDir + " to keep the full value"
		if t.reportDir != "" {
			full := filepath.Join(t.reportDir, name)
			err := os.MkdirAll(t.reportDir, 0o755)
			if err == nil {
				err = os.WriteFile(full, []byte(value), 0o644)
			}
			if err != nil {
				where = "full value not saved: " + err.Error()
			} else {
				where = "full value in " + full
			}
		}
		note := "\n[truncated: " + where + "]"
		out = ""
		if room := limit - encodedLen(note) + 2; room > 2 {
			out = truncateEncoded(value, room) + note
		}
		fmt.Fprintf(t.w, "publish: result %s truncated to fit Tekton's 4 KB results limit: %s\n", name, where)
	}
	if err := os.WriteFile(filepath.Join(t.resultsDir, name), []byte(out), 0o644); err != nil {
		fmt.Fprintf(t.w, "publish: warning: result %s not written: %v\n", name, err)
		return fmt.Errorf("result %s: %w", name, err)
	}
	t.used[name] = encodedLen(out) + tektonEntry + len(name)
	return nil
}

func (t *tekton) Summary(markdown string) error { return reportSummary(t.reportDir, markdown) }

// encodedLen is the length of s as a JSON string, quotes included, as
// Tekton's entrypoint (encoding/json) writes it.
func encodedLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// truncateEncoded returns the longest prefix of s, on a rune boundary, whose
// JSON encoding fits limit bytes.
func truncateEncoded(s string, limit int) string {
	n := 2 // quotes
	for i, r := range s {
		size := utf8.RuneLen(r)
		if r == utf8.RuneError {
			if _, w := utf8.DecodeRuneInString(s[i:]); w == 1 {
				size = 1
			}
		}
		c := encodedLen(s[i:i+size]) - 2
		if n+c > limit {
			return s[:i]
		}
		n += c
	}
	return s
}
