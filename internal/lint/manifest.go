package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
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

// fieldKind is the YAML shape a PackageManifest field must have.
type fieldKind int

const (
	kText    fieldKind = iota // a scalar
	kMap                      // a mapping checked against its own schema
	kTextMap                  // a mapping of scalars (labels, annotations)
	kList                     // a sequence of scalars
	kLinks                    // a sequence of {name, url} mappings
)

// schema is manifest.PackageManifest's shape (strict parsing rejects any
// other field), derived from its yaml tags: mapping path ("" for the
// document, "link" for a spec.info.links entry) to field to kind.
var schema = deriveSchema(reflect.TypeFor[manifest.PackageManifest]())

// deriveSchema walks the struct t and its nested structs: a string field is
// kText, a struct kMap (its own entry, keyed by dotted path), a map of
// strings kTextMap, a slice of strings kList, a slice of manifest.Link
// kLinks (its entry is "link"). Fields tagged "-" are not YAML.
func deriveSchema(t reflect.Type) map[string]map[string]fieldKind {
	out := map[string]map[string]fieldKind{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		fields := map[string]fieldKind{}
		out[path] = fields
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
			if name == "-" || name == "" || !sf.IsExported() {
				continue
			}
			ft := sf.Type
			switch {
			case ft.Kind() == reflect.String:
				fields[name] = kText
			case ft.Kind() == reflect.Struct:
				fields[name] = kMap
				walk(ft, join(path, name))
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.String:
				fields[name] = kTextMap
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
				fields[name] = kList
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				fields[name] = kLinks
				walk(ft.Elem(), "link")
			default:
				panic(fmt.Sprintf("lint: no schema kind for PackageManifest field %s (%s)", join(path, name), ft))
			}
		}
	}
	walk(t, "")
	return out
}

var kindWords = map[fieldKind]string{
	kText:    "text",
	kMap:     "a mapping",
	kTextMap: "a mapping of text values",
	kList:    "a list of text values",
	kLinks:   "a list of {name, url} entries",
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

// walkStyle reports anchors, aliases, merge keys and duplicate keys.
func (f *mfile) walkStyle(n *yaml.Node) {
	if n == nil {
		return
	}
	if n.Anchor != "" {
		f.addAt(RuleManifestAnchor, n, fmt.Sprintf("YAML anchor &%s: write every value out instead of sharing it", n.Anchor), "")
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

// checkSchema checks the keys and value shapes of mapping n (at dotted path
// p, checked against schema[s]) and records key and value positions.
func (f *mfile) checkSchema(n *yaml.Node, p, s string) {
	fields := schema[s]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			f.addAt(RuleManifestFieldType, k, fmt.Sprintf("a key of %s is %s: keys are field names", where(p), nodeWord(k)), "")
			continue
		}
		if k.Value == "<<" && (k.ShortTag() == "!!merge" || k.Tag == "") {
			// Reported by walkStyle; check the merged fields as if written here.
			switch {
			case v != nil && v.Kind == yaml.MappingNode:
				f.checkSchema(v, p, s)
			case v != nil && v.Kind == yaml.SequenceNode:
				for _, c := range v.Content {
					if c = resolve(c); c != nil && c.Kind == yaml.MappingNode {
						f.checkSchema(c, p, s)
					}
				}
			}
			continue
		}
		kind, ok := fields[k.Value]
		fp := join(p, k.Value)
		if !ok {
			msg := fmt.Sprintf("unknown field %s", fp)
			if s == "link" {
				msg = fmt.Sprintf("unknown field %q in a spec.info.links entry", k.Value)
			}
			if sug := suggest(k.Value, fields); sug != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", sug)
			}
			f.addAt(RuleManifestUnknownField, k, msg, "")
			continue
		}
		if _, dup := f.keys[fp]; !dup {
			f.keys[fp] = k
			f.vals[fp] = v
		}
		f.checkKind(v, fp, kind)
	}
}

// where names a mapping for messages.
func where(p string) string {
	if p == "" {
		return "the document"
	}
	return p
}

func (f *mfile) checkKind(v *yaml.Node, fp string, kind fieldKind) {
	if v == nil || isNull(v) {
		return
	}
	bad := func() {
		f.addAt(RuleManifestFieldType, v, fmt.Sprintf("%s must be %s, not %s", fp, kindWords[kind], nodeWord(v)), "")
	}
	switch kind {
	case kText:
		if v.Kind != yaml.ScalarNode {
			bad()
			return
		}
		f.checkTag(v, fp)
	case kMap:
		if v.Kind != yaml.MappingNode {
			bad()
			return
		}
		f.checkSchema(v, fp, fp)
	case kTextMap:
		if v.Kind != yaml.MappingNode {
			bad()
			return
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, x := resolve(v.Content[i]), resolve(v.Content[i+1])
			if k == nil || k.Kind != yaml.ScalarNode {
				f.addAt(RuleManifestFieldType, v.Content[i], fmt.Sprintf("a key of %s is %s: keys are text", fp, nodeWord(k)), "")
				continue
			}
			if x != nil && x.Kind != yaml.ScalarNode {
				f.addAt(RuleManifestFieldType, x, fmt.Sprintf("%s.%s must be text, not %s", fp, k.Value, nodeWord(x)), "")
			} else if x != nil {
				f.checkTag(x, fp+"."+k.Value)
			}
		}
	case kList:
		if v.Kind != yaml.SequenceNode {
			msg := fmt.Sprintf("%s must be %s, not %s", fp, kindWords[kind], nodeWord(v))
			if v.Kind == yaml.ScalarNode {
				msg += fmt.Sprintf(" (write [%s] or a \"- \" list)", v.Value)
			}
			f.addAt(RuleManifestFieldType, v, msg, "")
			return
		}
		for i, c := range v.Content {
			c = resolve(c)
			ip := fmt.Sprintf("%s.%d", fp, i)
			f.vals[ip] = c
			if c != nil && c.Kind != yaml.ScalarNode {
				f.addAt(RuleManifestFieldType, c, fmt.Sprintf("%s[%d] must be text, not %s", fp, i, nodeWord(c)), "")
			} else if c != nil {
				f.checkTag(c, fmt.Sprintf("%s[%d]", fp, i))
			}
		}
	case kLinks:
		if v.Kind != yaml.SequenceNode {
			bad()
			return
		}
		for i, c := range v.Content {
			c = resolve(c)
			ip := fmt.Sprintf("%s.%d", fp, i)
			f.vals[ip] = c
			if isNull(c) {
				continue
			}
			if c.Kind != yaml.MappingNode {
				f.addAt(RuleManifestFieldType, c, fmt.Sprintf("%s[%d] must be a mapping with name and url, not %s", fp, i, nodeWord(c)), "")
				continue
			}
			f.checkSchema(c, ip, "link")
		}
	}
}

// checkTag reports a scalar whose explicit tag (!!int, !!bool, ...) does
// not fit its text: YAML refuses to load it.
func (f *mfile) checkTag(v *yaml.Node, fp string) {
	if v.Style&yaml.TaggedStyle == 0 {
		return
	}
	switch v.ShortTag() {
	case "!!str", "!!null":
		return
	}
	var x any
	if err := v.Decode(&x); err != nil {
		f.addAt(RuleManifestFieldType, v, fmt.Sprintf("%s: %s", fp, strings.TrimPrefix(err.Error(), "yaml: ")), "Remove the explicit YAML tag (!!int, !!bool, ...) or quote the value.")
	}
}

// suggest returns the field of fields closest to s, or "".
func suggest(s string, fields map[string]fieldKind) string {
	best, bestD := "", 3
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if strings.EqualFold(k, s) {
			return k
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// str returns the text of the value at dotted path p ("" when absent, null
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

// Known platforms (os/arch[/variant]) of spec.arch.
var knownPlatforms = map[string]bool{
	"linux/amd64": true, "linux/arm64": true, "linux/arm64/v8": true, "linux/arm/v7": true,
	"linux/arm/v6": true, "linux/arm/v5": true, "linux/ppc64le": true, "linux/s390x": true,
	"linux/386": true, "linux/riscv64": true, "linux/mips64le": true, "linux/loong64": true,
	"windows/amd64": true, "windows/arm64": true,
}

var platformAliases = map[string]string{
	"amd64": "linux/amd64", "x86_64": "linux/amd64", "linux/x86_64": "linux/amd64", "x86-64": "linux/amd64",
	"arm64": "linux/arm64", "aarch64": "linux/arm64", "linux/aarch64": "linux/arm64",
	"arm": "linux/arm/v7", "linux/arm": "linux/arm/v7", "armhf": "linux/arm/v7", "linux/armhf": "linux/arm/v7", "armv7": "linux/arm/v7", "linux/armv7": "linux/arm/v7",
	"ppc64le": "linux/ppc64le", "s390x": "linux/s390x", "386": "linux/386", "riscv64": "linux/riscv64",
}

// checkFields checks the values of the fields.
func (f *mfile) checkFields() {
	// apiVersion / kind.
	av, _ := f.str("apiVersion")
	kd, _ := f.str("kind")
	if av != manifest.APIVersion {
		f.addAt(RuleManifestAPIVersion, f.node("apiVersion"), fmt.Sprintf("apiVersion is %q, want %s", av, manifest.APIVersion), "")
	}
	if kd != manifest.Kind {
		f.addAt(RuleManifestAPIVersion, f.node("kind"), fmt.Sprintf("kind is %q, want %s", kd, manifest.Kind), "")
	}

	// Required fields, in violet's words.
	for _, p := range []string{"metadata.name", "spec.type", "spec.artifact", "spec.version"} {
		if s, _ := f.str(p); strings.TrimSpace(s) == "" {
			f.addAt(RuleManifestRequired, f.node(p), p+" field cannot be empty", "")
		}
	}

	// spec.type.
	if t, ok := f.str("spec.type"); ok && strings.TrimSpace(t) != "" {
		switch t {
		case "bundle":
		case "chart":
			f.addAt(RuleManifestType, f.node("spec.type"), "spec.type chart is not supported yet: only bundle (an OLM bundle image) can be published", "")
		default:
			f.addAt(RuleManifestType, f.node("spec.type"), fmt.Sprintf("spec.type %q is not valid: use bundle", t), "")
		}
	}

	// spec.version and metadata.name.
	var ver *semver.Version
	if s, ok := f.str("spec.version"); ok && strings.TrimSpace(s) != "" {
		if v, err := semver.Parse(strings.TrimPrefix(s, "v")); err != nil {
			f.addAt(RuleManifestVersion, f.node("spec.version"), fmt.Sprintf("spec.version %q is not a semantic version (e.g. v1.2.3): %v", s, err), "")
			f.version = s
		} else {
			ver = &v
			f.version = v.String()
		}
	}
	if n, ok := f.str("metadata.name"); ok && strings.TrimSpace(n) != "" && ver != nil {
		suffix := ".v" + ver.String()
		if !strings.HasSuffix(n, suffix) || len(n) == len(suffix) {
			f.addAt(RuleManifestName, f.node("metadata.name"), fmt.Sprintf("metadata.name %q must be <artifact>%s (the artifact name, then .v and spec.version)", n, suffix), "")
		} else {
			a := strings.TrimSuffix(n, suffix)
			f.artifact = a
			if len(a) > 253 || !dns1123.MatchString(a) {
				f.addAt(RuleManifestName, f.node("metadata.name"), fmt.Sprintf("artifact name %q: must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (it names the Artifact object)", a), "")
			}
		}
	}

	// spec.artifact.
	if s, ok := f.str("spec.artifact"); ok && strings.TrimSpace(s) != "" {
		if _, err := name.ParseReference(s, name.StrictValidation); err != nil {
			msg := fmt.Sprintf("spec.artifact %q is not a valid image reference with a tag or digest (e.g. registry.example.com/ns/op-bundle:v1.2.3): %v", s, err)
			if full := fullReference(s); full != "" {
				msg = fmt.Sprintf("spec.artifact %q is not a full image reference: write %s", s, full)
			}
			f.addAt(RuleManifestArtifact, f.node("spec.artifact"), msg, "")
		}
	}

	// spec.arch.
	if a := f.vals["spec.arch"]; a != nil && a.Kind == yaml.SequenceNode {
		seen := map[string]bool{}
		for i := range a.Content {
			p := fmt.Sprintf("spec.arch.%d", i)
			s, ok := f.str(p)
			if !ok && f.vals[p] != nil && f.vals[p].Kind != yaml.ScalarNode {
				continue // field-type
			}
			switch {
			case strings.TrimSpace(s) == "":
				f.addAt(RuleManifestArch, f.node(p), fmt.Sprintf("spec.arch[%d] is empty", i), "")
			case !knownPlatforms[s]:
				msg := fmt.Sprintf("spec.arch[%d] %q is not a known platform (os/arch[/variant])", i, s)
				if al, ok := platformAliases[strings.ToLower(strings.TrimSpace(s))]; ok {
					msg += fmt.Sprintf(": did you mean %s?", al)
				}
				f.addAt(RuleManifestArch, f.node(p), msg, "")
			case seen[s]:
				f.addAt(RuleManifestArch, f.node(p), fmt.Sprintf("spec.arch lists %s twice", s), "Remove the duplicate entry.")
			default:
				f.arch = append(f.arch, s)
			}
			seen[s] = true
		}
	}

	// spec.relatedImages.
	if ri := f.vals["spec.relatedImages"]; ri != nil && ri.Kind == yaml.SequenceNode {
		seen := map[string]int{}
		for i := range ri.Content {
			p := fmt.Sprintf("spec.relatedImages.%d", i)
			if v := f.vals[p]; v != nil && v.Kind != yaml.ScalarNode {
				continue // field-type
			}
			s, _ := f.str(p)
			if strings.TrimSpace(s) == "" {
				f.addAt(RuleManifestRelatedImage, f.node(p), fmt.Sprintf("spec.relatedImages[%d] is empty", i), "")
				continue
			}
			f.relatedText = append(f.relatedText, s)
			if _, err := name.ParseReference(s, name.StrictValidation); err != nil {
				msg := fmt.Sprintf("spec.relatedImages[%d] %q is not a valid image reference with a tag or digest: %v", i, s, err)
				if full := fullReference(s); full != "" {
					msg = fmt.Sprintf("spec.relatedImages[%d] %q is not a full image reference: write %s", i, s, full)
				}
				f.addAt(RuleManifestRelatedImage, f.node(p), msg, "")
				continue
			}
			f.related = append(f.related, relatedImage{s, f.node(p)})
			if j, ok := seen[s]; ok {
				f.addAt(RuleManifestRelatedImageDup, f.node(p), fmt.Sprintf("spec.relatedImages[%d] %s is also spec.relatedImages[%d]", i, s, j), "")
				continue
			}
			seen[s] = i
			if !strings.Contains(s, "@") {
				f.addAt(RuleManifestRelatedImagePin, f.node(p), fmt.Sprintf("spec.relatedImages[%d] %s is not pinned by digest: the tag can move after review", i, s), "")
			}
		}
	}

	// spec.info.
	if s, _ := f.str("spec.info.displayName"); strings.TrimSpace(s) == "" && (f.vals["spec.info.displayName"] == nil || f.vals["spec.info.displayName"].Kind == yaml.ScalarNode) {
		f.addAt(RuleManifestDisplayName, f.node("spec.info.displayName"), "spec.info.displayName is empty: the OperatorHub page has no name to show", "")
	}
	f.checkSizes()
	if s, ok := f.str("spec.info.icon"); ok && s != "" {
		if msg := checkIcon(s); msg != "" {
			f.addAt(RuleManifestIcon, f.node("spec.info.icon"), "spec.info.icon "+msg, "")
		}
	}
	if l := f.vals["spec.info.links"]; l != nil && l.Kind == yaml.SequenceNode {
		for i := range l.Content {
			p := fmt.Sprintf("spec.info.links.%d", i)
			if v := f.vals[p]; v != nil && !isNull(v) && v.Kind != yaml.MappingNode {
				continue // field-type
			}
			nm, _ := f.str(p + ".name")
			u, _ := f.str(p + ".url")
			if strings.TrimSpace(nm) == "" {
				f.addAt(RuleManifestLink, f.node(p+".name"), fmt.Sprintf("spec.info.links[%d] has no name", i), "")
			}
			if msg := checkURL(u); msg != "" {
				f.addAt(RuleManifestLink, f.node(p+".url"), fmt.Sprintf("spec.info.links[%d].url %s", i, msg), "")
			}
		}
	}
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

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

// fullReference returns s with the registry, repository and tag defaults
// written out (memcached:1.5: docker.io/library/memcached:1.5) when s is a
// valid short reference, else "".
func fullReference(s string) string {
	r, err := name.ParseReference(s)
	if err != nil {
		return ""
	}
	if _, ok := r.(name.Tag); ok && !strings.Contains(s[strings.LastIndex(s, "/")+1:], ":") {
		return "" // no tag: do not suggest latest
	}
	repo := r.Context().RepositoryStr()
	full := r.Context().RegistryStr() + "/" + repo
	if r.Context().RegistryStr() == name.DefaultRegistry {
		full = "docker.io/" + repo
	}
	switch r := r.(type) {
	case name.Tag:
		full += ":" + r.TagStr()
	case name.Digest:
		full += "@" + r.DigestStr()
	}
	if _, err := name.ParseReference(full, name.StrictValidation); err != nil || full == s {
		return ""
	}
	return full
}

// lenientManifest builds the PackageManifest from the YAML tree when the
// identity of the version is sound (apiVersion/kind, type bundle, name,
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
