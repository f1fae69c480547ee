package bundle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	semver "github.com/blang/semver/v4"
	"github.com/operator-publish/publish/internal/scratch"
	yaml "go.yaml.in/yaml/v4"
)

// numericRelease checks the text spec.release of the CSV in the bundle
// directory dir (checkRelease: the error names the file and line), and
// finds, in the manifests/ files of the bundle directory
// dir, a ClusterServiceVersion whose spec.release is a YAML number
// (`release: 2`). opm accepts a number there and reads it as text
// (operator-registry v1.73.0, pkg/registry/csv.go GetRelease: a whole
// number as "%d", another as "%g"), while operator-framework/api's CSV type
// takes a string only and fails to load the bundle. It returns the file's
// name in manifests/, the file with that value written as the quoted
// text opm reads (data), and that text; file is "" when no CSV has a
// numeric release.
func numericRelease(dir string) (file string, data []byte, release string, err error) {
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return "", nil, "", nil // Load reports it
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name()))
		if err != nil {
			return "", nil, "", nil
		}
		if !bytes.Contains(raw, []byte("ClusterServiceVersion")) || !bytes.Contains(raw, []byte("release")) {
			continue // no CSV with a spec.release here: not worth a YAML parse
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc yaml.Node
			if err := dec.Decode(&doc); err != nil {
				break // the end, or not YAML: Load reports it
			}
			n := releaseNode(&doc)
			if n == nil {
				continue
			}
			if n.Tag != "!!int" && n.Tag != "!!float" {
				if err := checkRelease(n.Value); err != nil {
					return "", nil, "", fmt.Errorf("manifests/%s:%d: spec.release %q: %v (opm wants dot-separated identifiers of letters, digits and hyphens, without leading zeros)", e.Name(), n.Line, n.Value, err)
				}
				continue
			}
			f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if err != nil {
				return "", nil, "", fmt.Errorf("manifests/%s:%d: spec.release %s: want text or a number", e.Name(), n.Line, n.Value)
			}
			text := fmt.Sprintf("%g", f)
			if f == float64(int64(f)) {
				text = fmt.Sprintf("%d", int64(f))
			}
			out, ok := replaceAt(raw, n.Line, n.Column, n.Value, strconv.Quote(text))
			if !ok {
				return "", nil, "", fmt.Errorf("manifests/%s:%d: spec.release %s: write it as text (release: \"%s\")", e.Name(), n.Line, n.Value, text)
			}
			return e.Name(), out, text, nil
		}
	}
	return "", nil, "", nil
}

// checkRelease parses a text release as operator-framework/api's
// OperatorRelease does: dot-separated semver pre-release identifiers.
func checkRelease(s string) error {
	for _, seg := range strings.Split(s, ".") {
		if _, err := semver.NewPRVersion(seg); err != nil {
			return err
		}
	}
	return nil
}

// releaseNode returns the spec.release value of doc when doc is a
// ClusterServiceVersion, else nil.
func releaseNode(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	get := func(m *yaml.Node, key string) *yaml.Node {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	if k := get(doc, "kind"); k == nil || k.Value != "ClusterServiceVersion" {
		return nil
	}
	return get(get(doc, "spec"), "release")
}

// replaceAt replaces old, found at line and column (1-based, as yaml.Node
// gives them) of data, by repl; false when old is not there.
func replaceAt(data []byte, line, column int, old, repl string) ([]byte, bool) {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return nil, false
		}
		off += i + 1
	}
	off += column - 1
	if off < 0 || off+len(old) > len(data) || string(data[off:off+len(old)]) != old {
		return nil, false
	}
	out := append(append(append([]byte(nil), data[:off]...), repl...), data[off+len(old):]...)
	return out, true
}

// withTextRelease returns the bundle directory Load gives to
// operator-framework/api: dir itself, or, when a CSV there has a numeric
// spec.release (numericRelease), a copy of manifests/ and metadata/ with
// that value written as text, and a function that removes the copy.
func withTextRelease(dir string) (string, func(), error) {
	file, data, _, err := numericRelease(dir)
	if err != nil {
		return "", nil, &InvalidError{Err: err}
	}
	if file == "" {
		return dir, func() {}, nil
	}
	tmp, err := scratch.MkdirTemp("", "bundle-release")
	if err != nil {
		return "", nil, err
	}
	done := func() { os.RemoveAll(tmp) }
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Join(tmp, sub), 0o755); err != nil {
			done()
			return "", nil, err
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				done()
				return "", nil, err
			}
			if sub == "manifests" && e.Name() == file {
				b = data
			}
			if err := os.WriteFile(filepath.Join(tmp, sub, e.Name()), b, 0o644); err != nil {
				done()
				return "", nil, err
			}
		}
	}
	return tmp, done, nil
}
