package olm

import (
	"strings"
	"testing"
)

const testDigest = "registry.local/olm/catalog@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestCatalogSource(t *testing.T) {
	data, err := CatalogSource(SourceOptions{Image: testDigest, PollInterval: "45m", Secrets: []string{"pull"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: operator-publish
  namespace: olm
spec:
  displayName: Operators published by operator-publish
  image: ` + testDigest + `
  publisher: operator-publish
  secrets:
  - pull
  sourceType: grpc
  updateStrategy:
    registryPoll:
      interval: 45m
`
	if string(data) != want {
		t.Errorf("CatalogSource:\n%s\nwant:\n%s", data, want)
	}
	off, err := CatalogSource(SourceOptions{Image: testDigest, PollInterval: "off", Name: "mirror", Namespace: "operators"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(off), "updateStrategy") || !strings.Contains(string(off), "name: mirror") {
		t.Errorf("polling off:\n%s", off)
	}
}

// TestCatalogSourceNoPollByDefault: the catalog image is named by digest,
// which never changes, so polling it finds nothing new; registryPoll is
// rendered only when pollInterval asks for it.
func TestCatalogSourceNoPollByDefault(t *testing.T) {
	data, err := CatalogSource(SourceOptions{Image: testDigest})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "updateStrategy") || strings.Contains(string(data), "registryPoll") {
		t.Errorf("CatalogSource of an image by digest without pollInterval polls:\n%s", data)
	}
}

func TestCatalogSourceErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		o    SourceOptions
		want string
	}{
		"tag only":     {SourceOptions{Image: "registry.local/olm/catalog:v1"}, "not pinned by digest"},
		"bad interval": {SourceOptions{Image: testDigest, PollInterval: "soon"}, "poll interval"},
		"bad name":     {SourceOptions{Image: testDigest, Name: "Not_A_Name"}, "CatalogSource name"},
		"bad ns":       {SourceOptions{Image: testDigest, Namespace: "a.b"}, "CatalogSource namespace"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CatalogSource(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// The CRD check is the real CatalogSource CRD of operator-framework/api:
// it rejects what the API server would.
func TestValidateCatalogSourceAgainstCRD(t *testing.T) {
	for name, tc := range map[string]struct {
		doc  string
		want string // "" valid
	}{
		"valid": {`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: c, namespace: olm}
spec: {sourceType: grpc, image: x@sha256:00, updateStrategy: {registryPoll: {interval: 10m}}}
`, ""},
		"unknown field": {`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: c, namespace: olm}
spec: {sourceType: grpc, image: x, pollInterval: 10m}
`, "pollInterval"},
		"missing sourceType": {`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: c, namespace: olm}
spec: {image: x}
`, "sourceType"},
		"no namespace": {`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: c}
spec: {sourceType: grpc, image: x}
`, "namespace"},
	} {
		t.Run(name, func(t *testing.T) {
			err := ValidateCatalogSource([]byte(tc.doc))
			if tc.want == "" && err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}
