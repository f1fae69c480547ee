package config

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/operator-publish/publish/internal/manifest"
	yaml "go.yaml.in/yaml/v4"
)

// unknownField rewrites err, when it is yamlError's "unknown field F"
// *Error, to name the field by its path in data (clusters.edge.namspace)
// and to say what to write instead: for a credential (a name holding
// password, username or token) its PUBLISH_* variable, as credentials are
// never read from the file; else the nearest field of that place when one
// is within two edits ("did you mean namespace?"). Any other err is
// returned as it is.
func unknownField(err error, data []byte) error {
	var ce *Error
	if !errors.As(err, &ce) {
		return err
	}
	rest, ok := strings.CutPrefix(ce.Msg, "unknown field ")
	if !ok {
		return err
	}
	name, _, _ := strings.Cut(rest, " ")
	path := keyPath(data, name, ce.Line)
	if path == nil {
		return err
	}
	full := strings.ReplaceAll(strings.Join(path, "."), ".[", "[") // verify[0].key
	low := strings.ToLower(name)
	if strings.Contains(low, "password") || strings.Contains(low, "username") || strings.Contains(low, "token") {
		return &Error{Path: ce.Path, Line: ce.Line, Msg: "unknown field " + full + ": credentials are not read from publish.yaml: set " + envName(name) + " in the environment (or use the docker config)"}
	}
	best, dist := "", 3
	for _, f := range fieldsAt(reflect.TypeFor[Config](), path[:len(path)-1]) {
		if d := manifest.EditDistance(strings.ToLower(name), strings.ToLower(f)); d < dist {
			best, dist = f, d
		}
	}
	if best == "" {
		if full != name {
			return &Error{Path: ce.Path, Line: ce.Line, Msg: "unknown field " + full + " is not a publish.yaml field (see the README, Configuration)"}
		}
		return err
	}
	return &Error{Path: ce.Path, Line: ce.Line, Msg: "unknown field " + full + ": did you mean " + best + "? (see the README, Configuration)"}
}

// keyPath returns the path of keys (a sequence entry as [i]) from the
// document's root to the mapping key name on line, nil when not found.
func keyPath(data []byte, name string, line int) []string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	var walk func(n *yaml.Node, at []string) []string
	walk = func(n *yaml.Node, at []string) []string {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				p := append(append([]string(nil), at...), k.Value)
				if k.Value == name && k.Line == line {
					return p
				}
				if r := walk(n.Content[i+1], p); r != nil {
					return r
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := append(append([]string(nil), at...), "["+strconv.Itoa(i)+"]")
				if r := walk(c, p); r != nil {
					return r
				}
			}
		}
		return nil
	}
	return walk(root.Content[0], nil)
}

// fieldsAt returns the YAML field names of the struct that path (keys
// from the root of t; map keys and [i] step into the element) leads to,
// nil when it leads to no struct.
func fieldsAt(t reflect.Type, path []string) []string {
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map, reflect.Slice:
			t = t.Elem()
		case reflect.Struct:
			f, ok := structField(t, seg)
			if !ok {
				return nil
			}
			t = f
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	eachField(t, func(name string, _ reflect.Type) { out = append(out, name) })
	return out
}

func structField(t reflect.Type, name string) (reflect.Type, bool) {
	var ft reflect.Type
	eachField(t, func(n string, f reflect.Type) {
		if n == name && ft == nil {
			ft = f
		}
	})
	return ft, ft != nil
}

// eachField calls fn with the YAML name and type of each field of struct t
// (inline structs flattened; fields tagged "-" or unexported left out).
func eachField(t reflect.Type, fn func(string, reflect.Type)) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				eachField(ft, fn)
			}
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		fn(tag, f.Type)
	}
}

// envName is the PUBLISH_* variable of a camelCase field name:
// dstPassword gives PUBLISH_DST_PASSWORD.
func envName(field string) string {
	var b strings.Builder
	b.WriteString("PUBLISH_")
	for i, r := range field {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
