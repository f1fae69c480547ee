package config

import (
	"fmt"

	"github.com/operator-publish/publish/internal/registry"
	yaml "go.yaml.in/yaml/v4"
)

// SourceMirror is one publish.yaml sourceMirrors entry: the images below
// the registry[/path] prefix From are read from To, a registry holding
// copies of them, while every reference keeps From (--source-mirror
// FROM=TO; registry.SourceMirror).
type SourceMirror struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`
}

// checkSourceMirrors checks every sourceMirrors entry of c (both prefixes
// registry[/path], each From once). Errors: an *Error at the entry's line.
func checkSourceMirrors(path string, data []byte, c *Config) error {
	lines := seqLines(data, "sourceMirrors")
	seen := map[string]bool{}
	for i, m := range c.SourceMirrors {
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		if err := (registry.SourceMirror{From: m.From, To: m.To}).Check(); err != nil {
			return &Error{Path: path, Line: line, Msg: fmt.Sprintf("sourceMirrors[%d]: %v", i, err)}
		}
		if seen[m.From] {
			return &Error{Path: path, Line: line, Msg: fmt.Sprintf("sourceMirrors[%d]: from %q is given twice: keep one entry per prefix", i, m.From)}
		}
		seen[m.From] = true
	}
	return nil
}

// seqLines returns the line of each item of the top-level sequence key
// (none when it is missing or not a sequence).
func seqLines(data []byte, key string) []int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != key || doc.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		var out []int
		for _, item := range doc.Content[i+1].Content {
			out = append(out, item.Line)
		}
		return out
	}
	return nil
}

// sourceMirrorValue is the entries as --source-mirror takes them
// (FROM=TO, comma-separated), "" for none.
func (c *Config) sourceMirrorValue() string {
	out := ""
	for i, m := range c.SourceMirrors {
		if i > 0 {
			out += ","
		}
		out += m.From + "=" + m.To
	}
	return out
}
