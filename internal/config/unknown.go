package config

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/target"
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
	if isCredential(low) {
		return &Error{Path: ce.Path, Line: ce.Line, Msg: "unknown field " + full + ": credentials are not read from publish.yaml: set " + credentialVar(path) + " in the environment (or use the docker config)"}
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
// nil when it leads to no struct. A cluster's fields include the blocks
// of the targets (blockNames), whose fields are their Kind.Schema's.
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
			if !ok && t == reflect.TypeFor[Cluster]() {
				// A target's own block (Cluster.Blocks): its Schema.
				if k, err := target.Lookup(seg); err == nil && k.Schema != nil {
					f, ok = k.Schema, true
				}
			}
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
	if t == reflect.TypeFor[Cluster]() {
		out = append(out, blockNames()...)
	}
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

// CredentialVars are the PUBLISH_* variables of the credential flags (the
// flags marked secret in cmd/publish, TestCredentialVarsAreTheSecretFlags
// there keeps the two lists equal): a credential written into publish.yaml
// is sent to one of them.
var CredentialVars = []string{
	"PUBLISH_SRC_USERNAME", "PUBLISH_SRC_PASSWORD",
	"PUBLISH_DST_USERNAME", "PUBLISH_DST_PASSWORD",
	"PUBLISH_CATALOG_USERNAME", "PUBLISH_CATALOG_PASSWORD", "PUBLISH_CATALOG_SSH_KEY_PASSWORD",
	"PUBLISH_SIGNING_KEY_PASSWORD", "PUBLISH_FORGE_TOKEN", "PUBLISH_COSIGN_KEY_PASSWORD",
	"PUBLISH_CHART_REPO_USERNAME", "PUBLISH_CHART_REPO_PASSWORD", "PUBLISH_CHART_REPO_TOKEN",
}

// isCredential tells whether a lower-case field name holds a credential.
func isCredential(low string) bool {
	for _, w := range []string{"password", "passphrase", "username", "token"} {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// credentialVar is the PUBLISH_* variable to set instead of the credential
// field at path: the field's own name (dstPassword), else it joined to
// the section it sits in (forge.token: PUBLISH_FORGE_TOKEN), when that is
// one of CredentialVars; else the list of them to choose from.
func credentialVar(path []string) string {
	name := path[len(path)-1]
	cands := []string{envName(name)}
	for i := len(path) - 2; i >= 0; i-- {
		if seg := path[i]; !strings.HasPrefix(seg, "[") {
			cands = append(cands, envName(seg+strings.ToUpper(name[:1])+name[1:]))
		}
	}
	for _, c := range cands {
		for _, v := range CredentialVars {
			if c == v {
				return v
			}
		}
	}
	return "its variable (one of " + strings.Join(CredentialVars, ", ") + ")"
}

// typeField rewrites err, when it is yamlError's construct error ("cannot
// construct !!str `many` into int"), to name the field whose value it is
// by its path in data (concurrency, clusters.edge.olm.clusterCatalog.
// priority). Any other err is returned as it is.
func typeField(err error, data []byte) error {
	var ce *Error
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Msg, "cannot ") {
		return err
	}
	path := valuePath(data, ce.Line)
	if path == nil {
		return err
	}
	full := strings.ReplaceAll(strings.Join(path, "."), ".[", "[")
	return &Error{Path: ce.Path, Line: ce.Line, Msg: full + ": " + ce.Msg + " (see the README, Configuration)"}
}

// valuePath returns the path of keys to the first mapping value (or
// sequence item) that starts on line, nil when there is none.
func valuePath(data []byte, line int) []string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	var walk func(n *yaml.Node, at []string) []string
	walk = func(n *yaml.Node, at []string) []string {
		var kids []*yaml.Node
		var segs []string
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				kids, segs = append(kids, n.Content[i+1]), append(segs, n.Content[i].Value)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				kids, segs = append(kids, c), append(segs, "["+strconv.Itoa(i)+"]")
			}
		}
		for i, k := range kids {
			p := append(append([]string(nil), at...), segs[i])
			if k.Kind == yaml.ScalarNode && k.Line == line {
				return p
			}
			if r := walk(k, p); r != nil {
				return r
			}
		}
		return nil
	}
	return walk(root.Content[0], nil)
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
