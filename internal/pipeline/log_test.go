package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestLog: progress is Info, warnings are Warn without the "warning: "
// prefix, also for the lines internal/diff writes; no logger discards.
func TestLog(t *testing.T) {
	var buf bytes.Buffer
	o := Options{Log: slog.New(slog.NewJSONHandler(&buf, nil))}
	o.logf("scan: %d package manifests", 3)
	o.warnf("%d manifest files differ", 1)
	fmt.Fprintf(o.logWriter(), "diff: warning: shallow clone\ndiff: base abc (state)\n")
	fmt.Fprintf(o.logWriter(), "diff: a partial ")
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, rec.Level+" "+rec.Msg)
	}
	want := []string{"INFO scan: 3 package manifests", "WARN 1 manifest files differ", "WARN diff: shallow clone", "INFO diff: base abc (state)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	(&Options{}).warnf("nobody listens") // no logger: discarded, no panic
}
