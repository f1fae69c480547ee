package crdcheck

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FieldError is one problem of one field of an object that Validate
// checked.
//
// Field is the path of the field from the object's root, dotted, with [i]
// for list indexes, as k8s.io/apimachinery's field.Path prints it, without
// its root: "spec.present", "spec.tagPatterns[0].name", "metadata.name";
// "" for the object itself. Message is what is wrong with the field,
// without the path: for a schema violation the body of the
// k8s.io/apiextensions-apiserver validation error (field.Error's
// ErrorBody, e.g. `Required value`, or `Invalid value: "string":
// spec.present in body must be of type boolean: "string"`), "unknown field
// (the API server would drop it)" for a field pruning would drop, "required"
// or "required for a namespaced kind" for a missing metadata.name or
// metadata.namespace.
type FieldError struct {
	Field   string
	Message string

	// text is the problem as the error text gives it, when it differs
	// from Field + ": " + Message (see schemaError).
	text string
}

// Error returns the field's problem as ObjectError's text lists it:
// "<path>: <message>". For a schema violation the path is field.Error's,
// whose root Validate names "" and field.Path prints "[]", e.g.
// "[].spec.tag: Required value".
func (e FieldError) Error() string {
	if e.text != "" {
		return e.text
	}
	return e.Field + ": " + e.Message
}

// schemaError converts one error of k8s.io/apiextensions-apiserver's
// schema validation, whose path is below field.NewPath(""): e.Field is
// "[]" for the root and "[].spec.x" below it.
func schemaError(e *field.Error) FieldError {
	p := strings.TrimPrefix(e.Field, "[]")
	p = strings.TrimPrefix(p, ".")
	return FieldError{Field: p, Message: e.ErrorBody(), text: e.Error()}
}

// ObjectError is what Validate returns for an object its CRD rejects:
// the object's Kind and Name (metadata.name, "" when the object has none
// or it is not a string) and every field problem, sorted by their Error
// text.
type ObjectError struct {
	Kind   string
	Name   string
	Fields []FieldError

	// shownName is metadata.name as Error shows it (fmt.Sprint of the
	// value: <nil> when missing); "" means Name.
	shownName string
}

// Error returns "<Kind> <name>: <field problem>; <field problem>…", each
// field problem as FieldError.Error gives it, in the order of Fields. The
// name is metadata.name formatted with fmt.Sprint ("<nil>" when the
// object has none).
func (e *ObjectError) Error() string {
	name := e.shownName
	if name == "" {
		name = e.Name
	}
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Error()
	}
	return e.Kind + " " + name + ": " + strings.Join(msgs, "; ")
}
