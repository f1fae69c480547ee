package lint

import (
	"bytes"
	"strings"
	"testing"
)

// A manifest value quoted in a finding (a name holding a line break and a
// workflow command, an escape sequence in a path) is printed as text: no
// line of the text output is a workflow command.
func TestFormatTextIsNoWorkflowCommand(t *testing.T) {
	fs := []Finding{{
		Path: "packages/a\x1b[2J/manifest.yaml", Line: 3, Severity: Error, Rule: "name",
		Message: "metadata.name \"x\n::error file=README.md::pwned\" is not <artifact>.v<version>",
		Hint:    "rename it\n##[add-mask]x",
	}}
	var out bytes.Buffer
	if err := Format(&out, fs, FormatText); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if l := strings.TrimLeft(line, " \t"); strings.HasPrefix(l, "::") || strings.HasPrefix(l, "##[") {
			t.Errorf("a workflow command: %q", line)
		}
	}
	if strings.Contains(out.String(), "\x1b") || !strings.Contains(out.String(), "pwned") {
		t.Errorf("output:\n%s", out.String())
	}
}
