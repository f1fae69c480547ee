package lint

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/operator-publish/publish/internal/bundle"
)

// providerTypes are the provider-type values the Alauda OperatorHub page
// knows; it shows anything else as custom.
var providerTypes = []string{"custom", "community", "certified", "platform"}

const quoteHint = "The value looks like an unquoted YAML boolean (yes/no/on/off/true/false load as true or false): quote it in the CSV, e.g. provider-type: \"community\"."

// platformRules checks the CSV annotations the Alauda OperatorHub page reads.
func (f *mfile) platformRules(b *bundle.Bundle) []Finding {
	var out []Finding
	add := func(rule, msg, hint string) {
		out = append(out, f.bundleFinding(rule, bundleManifestsPath, msg, hint))
	}
	pt := b.ProviderType
	switch {
	case strings.TrimSpace(pt) == "":
		add(RulePlatformProviderType, fmt.Sprintf("the CSV has no %s annotation: the OperatorHub page shows the operator as custom", bundle.AnnotationProviderType), "")
	case contains(providerTypes, pt):
	case boolLike(pt):
		add(RulePlatformProviderType, fmt.Sprintf("CSV annotation %s is %q, not one of %s: the page shows the operator as custom", bundle.AnnotationProviderType, pt, strings.Join(providerTypes, ", ")), quoteHint)
	case contains(providerTypes, strings.ToLower(strings.TrimSpace(pt))):
		add(RulePlatformProviderType, fmt.Sprintf("CSV annotation %s is %q: values are lowercase (%s); the page shows the operator as custom", bundle.AnnotationProviderType, pt, strings.ToLower(strings.TrimSpace(pt))), "")
	default:
		add(RulePlatformProviderType, fmt.Sprintf("CSV annotation %s is %q, not one of %s: the page shows the operator as custom", bundle.AnnotationProviderType, pt, strings.Join(providerTypes, ", ")), "")
	}

	p := strings.TrimSpace(b.Provider)
	switch {
	case p == "":
		add(RulePlatformProvider, fmt.Sprintf("the CSV has no %s annotation: the OperatorHub page shows \"-\" as provider", bundle.AnnotationProvider), "")
	case boolLike(p):
		add(RulePlatformProvider, fmt.Sprintf("CSV annotation %s is %q", bundle.AnnotationProvider, p), quoteHint)
	case strings.HasPrefix(p, "{") || strings.HasPrefix(p, "["):
		if msg := checkProviderJSON(p); msg != "" {
			add(RulePlatformProvider, fmt.Sprintf("CSV annotation %s %s: the page shows the raw text", bundle.AnnotationProvider, msg), "")
		}
	}

	if u := b.ProviderURL; strings.TrimSpace(u) != "" {
		hint := ""
		if boolLike(u) {
			hint = quoteHint
		}
		if msg := checkURL(u); msg != "" {
			add(RulePlatformProviderURL, fmt.Sprintf("CSV annotation %s %s", bundle.AnnotationProviderURL, msg), hint)
		}
	}
	return out
}

// checkProviderJSON returns why p is not a JSON object of non-empty
// strings, or "".
func checkProviderJSON(p string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(p), &obj); err != nil {
		return fmt.Sprintf("looks like JSON but is not a JSON object: %v", err)
	}
	if len(obj) == 0 {
		return "is an empty JSON object"
	}
	for _, k := range sortedKeys(obj) {
		s, ok := obj[k].(string)
		if !ok {
			return fmt.Sprintf("is a JSON object whose %q is not a string", k)
		}
		if strings.TrimSpace(s) == "" {
			return fmt.Sprintf("is a JSON object whose %q is empty", k)
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
