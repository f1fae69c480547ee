package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/blang/semver/v4"
	yaml "go.yaml.in/yaml/v3"

	"github.com/operator-publish/publish/internal/manifest"
)

// mfile is one manifest.yaml being linted: its bytes, its YAML tree with
// positions, the PackageManifest when manifest.Parse accepts it, and the
// findings of the manifest rules.
type mfile struct {
	path string
	raw  []byte
	text []byte // raw without BOM, invalid UTF-8 replaced

	lines [][]byte
	// undecodable is set when the encoding is not UTF-8 at all (UTF-16):
	// the YAML rules do not run.
	undecodable bool
	root        *yaml.Node                // the document's top node, nil when it does not parse
	keys        map[string]*yaml.Node     // key node of each dotted path (first occurrence)
	vals        map[string]*yaml.Node     // value node of each dotted path (aliases resolved)
	pm          *manifest.PackageManifest // lenient (built from the tree) when Parse fails but the identity is sound

	artifact, version string // best effort, for Finding.Artifact/Version
	// related are the spec.relatedImages entries that are valid references,
	// in order, with their nodes; arch the known platforms of spec.arch.
	related []relatedImage
	// relatedText is every non-empty spec.relatedImages entry, valid or not.
	relatedText []string
	arch        []string
	// channels and defaultChannel of the bundle, set by bundleRules.
	channels       []string
	defaultChannel string
	fs             []Finding
}

type relatedImage struct {
	ref  string
	node *yaml.Node
}

// checkManifest runs the manifest rules on one file.
func checkManifest(path string, data []byte) *mfile {
	f := &mfile{path: path, raw: data, keys: map[string]*yaml.Node{}, vals: map[string]*yaml.Node{}}
	f.hygiene()
	if !f.undecodable {
		// A UTF-16 file has no text to parse: "empty" would be untrue.
		f.parseYAML()
	}
	if f.root != nil {
		f.walkStyle(f.root)
		f.checkSchema(f.root, "", "")
		f.checkFields()
	}
	f.tabs()
	pm, err := manifest.Parse(path, data)
	if pm != nil {
		f.pm = pm
		f.artifact, f.version = pm.Artifact, pm.Version.String()
	} else {
		f.pm = f.lenientManifest()
	}
	if err != nil {
		f.explainParse(err)
	}
	for i := range f.fs {
		f.fs[i].Artifact, f.fs[i].Version = f.artifact, f.version
	}
	return f
}

// explainParse reports the error of manifest.Parse as manifest/parse
// unless a finding of severity error already explains it. The rules cover
// every rejection known (the fuzz test checks it), so this is a safety net.
func (f *mfile) explainParse(err error) {
	for _, x := range f.fs {
		if x.Severity == Error {
			return
		}
	}
	msg := err.Error()
	line := 1
	var me *manifest.Error
	if errors.As(err, &me) {
		msg = me.Msg
		if me.Line > 0 {
			line = me.Line
		}
	}
	f.add(RuleManifestParse, line, f.firstCol(line), msg, "")
}

// add records a finding of rule at line:col with the catalog's severity and
// hint unless hint is given.
func (f *mfile) add(rule string, line, col int, msg, hint string) {
	f.fs = append(f.fs, newFinding(rule, f.path, line, col, msg, hint))
}

func (f *mfile) addAt(rule string, n *yaml.Node, msg, hint string) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, max(n.Column, 1)
	}
	f.add(rule, line, col, msg, hint)
}

func newFinding(rule, path string, line, col int, msg, hint string) Finding {
	info := catalogByID[rule]
	if hint == "" {
		hint = info.Hint
	}
	return Finding{Rule: rule, Severity: info.Severity, Path: path, Line: line, Column: col, Message: msg, Hint: hint}
}

// offsetPos turns a byte offset of raw into a 1-based line and column
// (columns count characters).
func offsetPos(b []byte, off int) (int, int) {
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	start := bytes.LastIndexByte(b[:off], '\n') + 1
	return line, 1 + utf8.RuneCount(b[start:off])
}

// firstCol is the column of the first non-blank character of line (1 when
// the line is blank or beyond the end).
func (f *mfile) firstCol(line int) int {
	if line < 1 || line > len(f.lines) {
		return 1
	}
	l := f.lines[line-1]
	trimmed := bytes.TrimLeft(l, " \t")
	return 1 + utf8.RuneCount(l[:len(l)-len(trimmed)])
}

// hygiene checks the bytes: BOM, encoding, line endings.
func (f *mfile) hygiene() {
	b := f.raw
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		f.add(RuleManifestBOM, 1, 1, "the file starts with a UTF-8 byte order mark (BOM)", "")
		b = b[3:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}) || bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		f.add(RuleManifestUTF8, 1, 1, "the file is UTF-16 (it starts with a UTF-16 byte order mark); manifests are UTF-8", "")
		b = nil
		f.undecodable = true
	}
	if b != nil && !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, size := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		line, col := offsetPos(b, off)
		f.add(RuleManifestUTF8, line, col, fmt.Sprintf("invalid UTF-8 byte 0x%02X (the file is not UTF-8; Latin-1 or a binary file?)", b[off]), "")
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	if b == nil {
		b = []byte{}
	}
	f.text = b
	f.lines = bytes.Split(b, []byte("\n"))
	crlf, cr := 0, 0
	first := -1
	for i, l := range f.lines {
		if j := bytes.IndexByte(l, '\r'); j >= 0 {
			if j == len(l)-1 && i < len(f.lines)-1 {
				crlf++
			} else {
				cr++
			}
			if first < 0 {
				first = i
			}
		}
	}
	if first >= 0 {
		l := f.lines[first]
		col := 1 + utf8.RuneCount(l[:bytes.IndexByte(l, '\r')])
		what := "CRLF (Windows) line endings"
		if cr > 0 {
			what = "carriage returns (CR)"
		}
		n := crlf + cr
		msg := fmt.Sprintf("the file uses %s: this line", what)
		if n > 1 {
			msg += fmt.Sprintf(" and %d more", n-1)
		}
		f.add(RuleManifestCRLF, first+1, col, msg, "")
	}
}

// parseYAML decodes the first document into f.root and reports syntax
// errors, empty files, non-mapping documents and further documents.
func (f *mfile) parseYAML() {
	dec := yaml.NewDecoder(bytes.NewReader(f.text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			f.add(RuleManifestYAML, 1, 1, "the file is empty: a manifest.yaml holds one PackageManifest", "")
			return
		}
		f.yamlError(err, "")
		return
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		line, col := extra.Line, extra.Column
		if line == 0 {
			line, col = 1, 1
		}
		// The document starts after its "---" marker: point at the marker.
		for l := min(line, len(f.lines)); l >= 1; l-- {
			if bytes.HasPrefix(f.lines[l-1], []byte("---")) {
				line, col = l, 1
				break
			}
		}
		f.add(RuleManifestMultiDocument, line, col, "more than one YAML document: a manifest.yaml holds exactly one PackageManifest", "")
	} else if !errors.Is(err, io.EOF) {
		f.yamlError(err, "after the first document: ")
	}
	if len(doc.Content) == 0 {
		f.add(RuleManifestYAML, 1, 1, "the file holds no YAML document: a manifest.yaml holds one PackageManifest", "")
		return
	}
	top := doc.Content[0]
	if top.Kind == yaml.AliasNode && top.Alias != nil {
		top = top.Alias
	}
	switch {
	case top.Kind == yaml.MappingNode:
		f.root = top
	case top.Kind == yaml.ScalarNode && top.ShortTag() == "!!null":
		// An empty document: every required field is missing.
		f.root = &yaml.Node{Kind: yaml.MappingNode, Line: top.Line, Column: top.Column}
	default:
		f.addAt(RuleManifestYAML, top, fmt.Sprintf("the document is %s, not a mapping of fields (apiVersion, kind, metadata, spec)", nodeWord(top)), "")
	}
}

// yamlError reports a syntax error of the YAML tree's parser (yaml.v3) at
// the offending token as go.yaml.in/yaml/v4 finds it: v3 often names the
// start of the enclosing block instead (a bad indent on line 13 at 5:1).
func (f *mfile) yamlError(err error, prefix string) {
	line, col, msg := 1, 0, strings.TrimPrefix(err.Error(), "yaml: ")
	if s := manifest.CheckYAMLSyntax(f.text); s != nil {
		msg = s.Msg
		if s.Line > 0 {
			line, col = s.Line, s.Column
		}
	}
	if col < 1 {
		col = f.firstCol(line)
	}
	f.add(RuleManifestYAML, line, col, "not valid YAML: "+prefix+msg, "")
}

func nodeWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("the %s %q", strings.TrimPrefix(n.ShortTag(), "!!"), clip(n.Value, 40))
	case yaml.AliasNode:
		return "an alias"
	}
	return "not a value"
}

// coreTag are the tags of the YAML 1.2 core schema
// (https://yaml.org/spec/1.2.2/#103-core-schema): a value tagged so reads
// the same to every reader.
var coreTag = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!map": true, "!!seq": true}

// walkStyle reports anchors, aliases, merge keys, explicit tags and
// duplicate keys.
func (f *mfile) walkStyle(n *yaml.Node) {
	if n == nil {
		return
	}
	if n.Anchor != "" {
		f.addAt(RuleManifestAnchor, n, fmt.Sprintf("YAML anchor &%s: write every value out instead of sharing it", n.Anchor), "")
	}
	if n.Style&yaml.TaggedStyle != 0 && n.Kind != yaml.DocumentNode && !coreTag[n.ShortTag()] {
		// !!binary decodes to other bytes than the file shows, an unknown
		// tag means something to one reader only: every value is plain.
		// The core schema's tags (!!str, !!int, ...) only restate a type,
		// which manifest/field-type checks.
		f.addAt(RuleManifestAnchor, n, fmt.Sprintf("YAML tag %s: write the value plainly (quote it to make it a string)", n.Tag), "")
	}
	switch n.Kind {
	case yaml.AliasNode:
		f.addAt(RuleManifestAnchor, n, fmt.Sprintf("YAML alias *%s: write the value out instead", n.Value), "")
		return // the anchored node is reported where it is defined
	case yaml.MappingNode:
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode {
				if k.Value == "<<" && (k.ShortTag() == "!!merge" || k.Tag == "") {
					f.addAt(RuleManifestAnchor, k, "YAML merge key <<: write the fields out instead", "")
				}
				id := k.ShortTag() + "\x00" + k.Value
				if first, ok := seen[id]; ok {
					f.addAt(RuleManifestDuplicateKey, k, fmt.Sprintf("key %q is already defined at line %d", k.Value, first.Line), "")
				} else {
					seen[id] = k
				}
			}
		}
	}
	for _, c := range n.Content {
		f.walkStyle(c)
	}
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// or not a scalar) and whether it is a scalar that is set.
func (f *mfile) str(p string) (string, bool) {
	v := f.vals[p]
	if v == nil || v.Kind != yaml.ScalarNode || isNull(v) {
		return "", false
	}
	return v.Value, true
}

// node returns the best node to point at for dotted path p: its value, its
// key when the value is empty, or the nearest parent's key.
func (f *mfile) node(p string) *yaml.Node {
	if v := f.vals[p]; v != nil && !(isNull(v) && v.Value == "") && v.Line > 0 {
		return v
	}
	for p != "" {
		if k := f.keys[p]; k != nil {
			return k
		}
		i := strings.LastIndex(p, ".")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	if f.root != nil && len(f.root.Content) > 0 {
		return f.root.Content[0]
	}
	return nil
}

// tabs reports the first line indented with a tab. When the YAML parsed,
// only lines where a node starts count (a tab inside a block scalar's text
// is content, not indentation).
func (f *mfile) tabs() {
	starts := map[int]bool{}
	if f.root != nil {
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			if n == nil {
				return
			}
			starts[n.Line] = true
			for _, c := range n.Content {
				walk(c)
			}
		}
		walk(f.root)
	}
	first, count := 0, 0
	for i, l := range f.lines {
		lead := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
		if bytes.IndexByte(lead, '\t') < 0 || len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if f.root != nil && !starts[i+1] {
			continue
		}
		if count == 0 {
			first = i + 1
		}
		count++
	}
	if count == 0 {
		return
	}
	// The finding's position is the first line: the message does not
	// repeat it.
	msg := "indented with a tab"
	if count > 1 {
		msg = fmt.Sprintf("this line and %d more are indented with tabs", count-1)
	}
	col := 1 + bytes.IndexByte(f.lines[first-1], '\t')
	// A YAML syntax error on a tab-indented line is this finding.
	kept := f.fs[:0]
	for _, x := range f.fs {
		if x.Rule == RuleManifestYAML && x.Line == first {
			continue
		}
		kept = append(kept, x)
	}
	f.fs = kept
	f.add(RuleManifestTabIndent, first, col, msg, "")
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// lenientManifest builds the PackageManifest from the YAML tree when the
// identity of the version is sound (apiVersion/kind, type, name,
// semver version, a valid spec.artifact) although manifest.Parse rejects the
// file, so that the bundle and repo rules still run. It returns nil
// otherwise.
func (f *mfile) lenientManifest() *manifest.PackageManifest {
	if f.root == nil || f.artifact == "" {
		return nil
	}
	for _, x := range f.fs {
		switch x.Rule {
		case RuleManifestYAML, RuleManifestMultiDocument, RuleManifestAPIVersion, RuleManifestRequired,
			RuleManifestType, RuleManifestVersion, RuleManifestName, RuleManifestArtifact:
			return nil
		}
	}
	v, err := semver.Parse(f.version)
	if err != nil {
		return nil
	}
	m := &manifest.PackageManifest{APIVersion: manifest.APIVersion, Kind: manifest.Kind, Path: f.path,
		Artifact: f.artifact, Version: v, Lines: map[string]int{}}
	m.Metadata.Name, _ = f.str("metadata.name")
	m.Spec.Type, _ = f.str("spec.type")
	m.Spec.Artifact, _ = f.str("spec.artifact")
	m.Spec.Chart, _ = f.str("spec.chart")
	m.Spec.Version, _ = f.str("spec.version")
	m.Spec.Info.DisplayName, _ = f.str("spec.info.displayName")
	m.Spec.Arch = f.arch
	for _, r := range f.related {
		m.Spec.RelatedImages = append(m.Spec.RelatedImages, r.ref)
	}
	for p, k := range f.keys {
		m.Lines[p] = k.Line
	}
	return m
}

// ManifestFile runs the manifest rules (manifest/...) on the text data of
// one manifest.yaml at path, without reading a registry or the bundle, and
// returns their findings with the catalog's severities (no waivers or
// re-grading applied). `publish create` uses it to leave out of a scaffolded
// manifest what these rules would refuse.
func ManifestFile(path string, data []byte) []Finding {
	return checkManifest(path, data).fs
}
