package lint

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/operator-publish/publish/internal/manifest"
)

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
		if d := manifest.EditDistance(strings.ToLower(s), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// str returns the text of the value at dotted path p ("" when absent, null
