package lint

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	verrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/operator-publish/publish/internal/bundle"
)

// validatorRun is one operator-framework validator and the classification
// of its findings into our rule IDs.
type validatorRun struct {
	name     string
	v        interfaces.Validator
	classify func(low string) string // low: the lower-cased message
}

// validators are the validators run on every bundle: the three of
// validation.DefaultBundleValidators (CSV, CRD, bundle), then OperatorHubV2,
// GoodPractices and the deprecated-APIs validator. Each runs on its own so
// that a crash of one does not hide the findings of the others.
var validators = []validatorRun{
	{"ClusterServiceVersion", validation.ClusterServiceVersionValidator, classifyCSV},
	{"CustomResourceDefinition", validation.CustomResourceDefinitionValidator, func(string) string { return RuleValidatorCRD }},
	{"bundle", validation.BundleValidator, classifyBundle},
	{"OperatorHub", validation.OperatorHubV2Validator, classifyOperatorHub},
	{"good-practices", validation.GoodPracticesValidator, classifyGoodPractices},
	{"deprecated-APIs", validation.AlphaDeprecatedAPIsValidator, func(string) string { return RuleValidatorDeprecatedAPI }},
}

// common classifications shared by several validators (OperatorHubV2 runs
// the deprecated-API and minKubeVersion checks too; duplicates are merged).
func classifyCommon(low string) string {
	switch {
	case strings.Contains(low, "deprecated and removed"):
		return RuleValidatorDeprecatedAPI
	case strings.Contains(low, "minkubeversion"):
		return RuleValidatorMinKubeVersion
	}
	return ""
}

func classifyCSV(low string) string {
	if r := classifyCommon(low); r != "" {
		return r
	}
	switch {
	case strings.Contains(low, "example") || strings.Contains(low, "annotations not found") ||
		strings.Contains(low, "provided api") || strings.Contains(low, "plural.group"):
		return RuleValidatorExamples
	case strings.Contains(low, "install mode") || strings.Contains(low, "installmode"):
		return RuleValidatorInstallModes
	}
	return RuleValidatorCSV
}

func classifyBundle(low string) string {
	switch {
	case strings.Contains(low, "owned crd") || strings.Contains(low, "not defined in csv") || strings.Contains(low, "duplicate crd"):
		return RuleValidatorOwnedCRDs
	case strings.Contains(low, "relatedimages"):
		return RuleValidatorRelatedImages
	case strings.Contains(low, "service account"):
		return RuleValidatorServiceAccount
	}
	return RuleValidatorBundle
}

func classifyOperatorHub(low string) string {
	if r := classifyCommon(low); r != "" {
		return r
	}
	switch {
	case strings.Contains(low, "spec.icon"):
		return RuleValidatorIcon
	case strings.Contains(low, "spec.links"):
		return RuleValidatorLinks
	case strings.Contains(low, "spec.maintainers"):
		return RuleValidatorMaintainers
	case strings.Contains(low, "spec.provider"):
		return RuleValidatorProvider
	}
	return RuleValidatorOperatorHub
}

func classifyGoodPractices(low string) string {
	switch {
	case strings.Contains(low, "resource requests"):
		return RuleValidatorResourceRequests
	case strings.Contains(low, "channel"):
		return RuleValidatorChannelNaming
	case strings.Contains(low, "empty description"):
		return RuleValidatorCRDDescription
	case strings.Contains(low, "permissions to create crd"):
		return RuleValidatorCRDRBAC
	case strings.Contains(low, "csv.metadata.name"):
		return RuleValidatorCSVName
	}
	return RuleValidatorGoodPractices
}

// vfinding is one classified validator finding.
type vfinding struct {
	rule string
	sev  Severity
	msg  string
	hint string
}

// runValidators runs the validators on b and returns their findings,
// classified, without duplicates, in a stable order. A validator that
// panics yields one bundle/validator/panic finding.
//
// The validators print nothing on the paths they are given here: the one
// fmt.Println of operator-framework/api (the deprecated-APIs check, when an
// unstructured CSV does not convert to the typed one) is avoided by leaving
// such an object out and reporting it instead.
func runValidators(b *bundle.Bundle, k8s string) []vfinding {
	if b.Loaded == nil || b.CSV == nil {
		return nil
	}
	lb := *b.Loaded
	lb.Channels = slices.Clone(lb.Channels) // GoodPractices appends to it
	// The CRD validator sets defaults in the CRDs it is given: copies, so
	// that the bundle, which the versions of one bundle image share (the
	// run's read cache), is never written while another manifest's lint
	// reads it.
	lb.V1CRDs = make([]*apiextensionsv1.CustomResourceDefinition, len(b.Loaded.V1CRDs))
	for i, c := range b.Loaded.V1CRDs {
		lb.V1CRDs[i] = c.DeepCopy()
	}
	lb.V1beta1CRDs = make([]*apiextensionsv1beta1.CustomResourceDefinition, len(b.Loaded.V1beta1CRDs))
	for i, c := range b.Loaded.V1beta1CRDs {
		lb.V1beta1CRDs[i] = c.DeepCopy()
	}
	if lb.CSV != nil {
		lb.CSV = lb.CSV.DeepCopy()
	}
	var out []vfinding
	lb.Objects = nil
	for _, o := range b.Loaded.Objects {
		if o != nil && o.GetKind() == v1alpha1.ClusterServiceVersionKind && o.GetAPIVersion() == v1alpha1.SchemeGroupVersion.String() {
			var csv v1alpha1.ClusterServiceVersion
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &csv); err != nil {
				msg := fmt.Sprintf("the deprecated-API check skipped the CSV's CRD and webhook references: the CSV does not convert to a ClusterServiceVersion (%v)", err)
				hint := ""
				if bad := nonTextAnnotations(o.Object); len(bad) > 0 {
					msg = fmt.Sprintf("the deprecated-API check skipped the CSV's CRD and webhook references: CSV annotation %s is not text in the YAML", strings.Join(bad, ", "))
					hint = quoteHint
				}
				out = append(out, vfinding{rule: RuleValidatorDeprecatedAPI, sev: Warning, msg: msg, hint: hint})
				continue
			}
		}
		lb.Objects = append(lb.Objects, o)
	}
	objs := lb.ObjectsToValidate()
	if k8s != "" {
		objs = append(objs, map[string]string{"k8s-version": k8s})
	}
	names := map[string]bool{b.CSVName: true, lb.Name: true, "": true}
	seen := map[[2]string]bool{}
	for _, vr := range validators {
		var results []verrors.ManifestResult
		var crash any
		if vr.name == "CustomResourceDefinition" {
			results, crash = validateCRDs(vr.v, b, &lb)
		} else {
			results, crash = runOne(vr.v, objs)
		}
		if crash != nil {
			msg := fmt.Sprintf("the operator-framework %s validator crashed on this bundle (%v); its other checks did not run", vr.name, crash)
			if b.CSV.Spec.Icon != nil && len(b.CSV.Spec.Icon) == 0 {
				msg += ": the CSV's spec.icon is an empty list"
			}
			out = append(out, vfinding{rule: RuleValidatorPanic, sev: Error, msg: msg})
			continue
		}
		for _, r := range results {
			for _, e := range append(append([]verrors.Error(nil), r.Errors...), r.Warnings...) {
				msg := validatorMessage(e, names)
				if vr.name == "CustomResourceDefinition" && r.Name != "" {
					msg = "CRD " + r.Name + ": " + msg
				}
				rule := vr.classify(strings.ToLower(msg))
				sev := Warning
				if e.Level == verrors.LevelError {
					sev = Error
				}
				k := [2]string{rule, msg}
				if seen[k] {
					continue
				}
				seen[k] = true
				out = append(out, vfinding{rule: rule, sev: sev, msg: msg})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].rule != out[j].rule {
			return out[i].rule < out[j].rule
		}
		return out[i].msg < out[j].msg
	})
	return out
}

// nonTextAnnotations lists the annotations of an unstructured object whose
// YAML value is not text (an unquoted yes loads as a boolean), as
// "name (value)".
func nonTextAnnotations(obj map[string]any) []string {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	var out []string
	for _, k := range sortedKeys(ann) {
		if _, ok := ann[k].(string); !ok {
			out = append(out, fmt.Sprintf("%s (%v)", k, ann[k]))
		}
	}
	return out
}

// printable renders the bad value of a validator finding when it is a
// plain value (pointers would print addresses).
func printable(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case fmt.Stringer:
		return x.String(), true
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return fmt.Sprint(v), true
	}
	return "", false
}

// runOne runs v, turning a panic into the returned value.
func runOne(v interfaces.Validator, objs []interface{}) (results []verrors.ManifestResult, crash any) {
	defer func() {
		if r := recover(); r != nil {
			results, crash = nil, r
		}
	}()
	return v.Validate(objs...), nil
}

var (
	spaceRE    = regexp.MustCompile(`\s+`)
	channelsRE = regexp.MustCompile(`channel\(s\) \[([^\]]*)\]`)
	quotedRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// validatorMessage renders e as one line: detail, the field, and the value
// unless it only repeats the CSV or bundle name. Lists the validators print
// in map order are sorted, so that messages are stable.
func validatorMessage(e verrors.Error, names map[string]bool) string {
	msg := e.Detail
	if e.Field != "" && !strings.Contains(msg, e.Field) {
		msg = e.Field + ": " + msg
	}
	if v, ok := printable(e.BadValue); ok && !names[v] && len(v) <= 200 && !strings.Contains(msg, v) {
		msg += " (" + v + ")"
	}
	if msg == "" {
		msg = string(e.Type)
	}
	msg = strings.TrimSpace(spaceRE.ReplaceAllString(msg, " "))
	msg = channelsRE.ReplaceAllStringFunc(msg, func(s string) string {
		items := quotedRE.FindAllString(s, -1)
		sort.Strings(items)
		return "channel(s) [" + strings.Join(items, " ") + "]"
	})
	return clip(msg, 1000)
}
