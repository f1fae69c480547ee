package logging

import (
	"bytes"
	"strings"
	"testing"
)

// A value from a manifest that holds a line break and a workflow command
// must not become a workflow command, an escape sequence must not reach
// the terminal, and a URL's token must not be printed: in every line the
// logger writes, whatever part of it the value is.
func TestLogLinesAreSafe(t *testing.T) {
	hostile := "hello-operator\n::error file=x::pwned\r\x1b[2J\n  ##[add-mask]x"
	url := "https://ghp_s3cretT0ken@git.example.com/o/c.git"
	for _, format := range []Format{FormatText, FormatJSON} {
		var buf bytes.Buffer
		log := New(&buf, Options{Format: format})
		log.Info("mirroring " + hostile)
		log.Warn("catalog "+url+" unreachable", "artifact", hostile, "url", url)
		log.With("name", hostile).Error("failed")
		out := buf.String()
		for _, line := range strings.Split(out, "\n") {
			l := strings.TrimLeft(line, " \t")
			if strings.HasPrefix(l, "::") || strings.HasPrefix(l, "##[") {
				t.Errorf("%s: a workflow command: %q", format, line)
			}
		}
		if strings.ContainsAny(out, "\r\x1b") {
			t.Errorf("%s: a control character: %q", format, out)
		}
		if strings.Contains(out, "s3cretT0ken") {
			t.Errorf("%s: the token is printed: %s", format, out)
		}
		if !strings.Contains(out, "pwned") || !strings.Contains(out, "git.example.com/o/c.git") {
			t.Errorf("%s: the values are not shown: %s", format, out)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain line":                 "plain line",
		"two\nlines":                 "two\nlines",
		"a\n  ::set-output name=x::": "a\n\"  ::set-output name=x::\"",
		"bell\a and esc\x1b[31m":     `bell\x07 and esc\x1b[31m`,
		"cr\rhere":                   `cr\rhere`,
		"key=a::b stays":             "key=a::b stays",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}
