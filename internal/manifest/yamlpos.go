package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v4"
)

// SyntaxError is a YAML syntax error at the offending token: Line and
// Column are 1-based (0: unknown), Msg is the parser's message with what
// was left open when the cause is an unclosed construct.
type SyntaxError struct {
	Line, Column int
	Msg          string
}

// YAMLSyntax returns where err, an error of go.yaml.in/yaml/v4 (a
// *yaml.LoadError), is: the position of the offending token. yaml.v3
// reports many errors at the start of the enclosing block (a bad indent on
// line 13 at 5:1); v4 gives the token. For an unclosed flow collection or
// quoted scalar the offending token is its opening, which v4 gives as the
// context mark. ok is false when err carries no position.
func YAMLSyntax(err error) (s SyntaxError, ok bool) {
	var le *yaml.LoadError
	if !errors.As(err, &le) || le.Mark.Line == 0 {
		return SyntaxError{}, false
	}
	s = SyntaxError{Line: le.Mark.Line, Column: le.Mark.Column, Msg: le.Message}
	if opened(le.ContextMsg) && le.ContextMark.Line > 0 {
		what := strings.TrimPrefix(strings.TrimPrefix(le.ContextMsg, "while parsing "), "while scanning ")
		s.Msg = fmt.Sprintf("%s: %s opened here is not closed (the parser reached line %d)", le.Message, what, le.Mark.Line)
		s.Line, s.Column = le.ContextMark.Line, le.ContextMark.Column
	}
	return s, true
}

// opened reports whether a v4 context message names a construct that an
// opening token starts and a closing token must end.
func opened(ctx string) bool {
	for _, c := range []string{"flow sequence", "flow mapping", "quoted scalar"} {
		if strings.Contains(ctx, c) {
			return true
		}
	}
	return false
}

// CheckYAMLSyntax parses every document of data with go.yaml.in/yaml/v4
// and returns the first syntax error at its offending token (nil when the
// YAML is well formed).
func CheckYAMLSyntax(data []byte) *SyntaxError {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if s, ok := YAMLSyntax(err); ok {
			return &s
		}
		return &SyntaxError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
}
