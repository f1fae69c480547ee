// Package crdcheck validates objects against CustomResourceDefinitions in
// process, with the API server's own code (k8s.io/apiextensions-apiserver):
// the OpenAPI v3 schema of the served version, and pruning, so that a field
// the API server would silently drop is reported as an error too.
package crdcheck

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

type version struct {
	validator  validation.SchemaValidator
	structural *structuralschema.Structural
	namespaced bool
}

// Validator checks objects of the kinds its CRDs define.
type Validator struct {
	kinds map[schema.GroupVersionKind]version
}

//go:embed crds/*.yaml
var embedded embed.FS

// OwnFiles are the CRDs built into the binary that have no reference copy
// in ../shared/crds: ChartRepo (chartrepos.app.alauda.io/v1beta1), a copy
// of ACP's docs/shared/crds/app.alauda.io_chartrepos.yaml (alauda/acp-docs).
// Tests that install the reference CRDs into an API server install these
// too (WriteOwn).
var OwnFiles = []string{"app.alauda.io_chartrepos.yaml"}

// WriteOwn writes the OwnFiles into dir (created if missing), for a test
// that installs CRDs from a directory. It returns the paths written, or
// the first error of writing one.
func WriteOwn(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range OwnFiles {
		data, err := embedded.ReadFile("crds/" + f)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Alauda returns a Validator for the Alauda CRDs built into the binary
// (Artifact, ArtifactVersion, Library: copies of ../shared/crds kept equal
// by a test; ChartRepo: the project's own, OwnFiles).
func Alauda() (*Validator, error) {
	v := &Validator{kinds: map[schema.GroupVersionKind]version{}}
	entries, err := fs.Glob(embedded, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := embedded.ReadFile(e)
		if err != nil {
			return nil, err
		}
		if err := v.addFile(e, data); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// FromCRDs returns a Validator for the given CRDs (for example the OLM
// CRDs of github.com/operator-framework/api/crds). Versions without a
// schema are skipped; an invalid schema is an error.
func FromCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	v := &Validator{kinds: map[schema.GroupVersionKind]version{}}
	for _, crd := range crds {
		if err := v.add(crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
	}
	return v, nil
}

// Knows reports whether a CRD for apiVersion/kind was loaded.
func (v *Validator) Knows(apiVersion, kind string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false
	}
	_, ok := v.kinds[gv.WithKind(kind)]
	return ok
}

// Load reads every CRD (apiextensions.k8s.io/v1) in the YAML files of dir.
// Errors name the file.
func Load(dir string) (*Validator, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	v := &Validator{kinds: map[schema.GroupVersionKind]version{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := v.addFile(f, data); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (v *Validator) addFile(name string, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := dec.Decode(&crd); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			continue
		}
		if err := v.add(&crd); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

func (v *Validator) add(crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, ver := range crd.Spec.Versions {
		if !ver.Served || ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(ver.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return err
		}
		sv, _, err := validation.NewSchemaValidator(&internal)
		if err != nil {
			return err
		}
		st, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return err
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind}
		v.kinds[gvk] = version{validator: sv, structural: st, namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped}
	}
	return nil
}

// Validate checks one object (YAML or JSON) against the CRD of its
// apiVersion and kind, as the API server would: the OpenAPI v3 schema of
// the served version (k8s.io/apiextensions-apiserver validation), pruning
// (fields the API server would silently drop), a missing metadata.name,
// and a missing metadata.namespace on a namespaced kind. It returns nil
// when the object is valid; an *ObjectError listing every field problem
// when it is not; another error when data is not an object, or no CRD
// defines its kind.
func (v *Validator) Validate(data []byte) error {
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return err
	}
	ver, ok := v.kinds[gv.WithKind(kind)]
	if !ok {
		return fmt.Errorf("no CRD defines %s %s", apiVersion, kind)
	}
	var fields []FieldError
	for _, e := range validation.ValidateCustomResource(field.NewPath(""), obj, ver.validator) {
		fields = append(fields, schemaError(e))
	}
	md, _ := obj["metadata"].(map[string]any)
	if n, _ := md["name"].(string); n == "" {
		fields = append(fields, FieldError{Field: "metadata.name", Message: "required"})
	}
	if ns, _ := md["namespace"].(string); ver.namespaced && ns == "" {
		fields = append(fields, FieldError{Field: "metadata.namespace", Message: "required for a namespaced kind"})
	}
	copyObj, err := roundTrip(obj)
	if err != nil {
		return err
	}
	for _, p := range pruning.PruneWithOptions(copyObj, ver.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		fields = append(fields, FieldError{Field: p, Message: "unknown field (the API server would drop it)"})
	}
	if len(fields) == 0 {
		return nil
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].Error() < fields[j].Error() })
	name, _ := md["name"].(string)
	return &ObjectError{Kind: kind, Name: name, Fields: fields, shownName: fmt.Sprint(md["name"])}
}

func roundTrip(obj map[string]any) (map[string]any, error) {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, yaml.Unmarshal(data, &out)
}
