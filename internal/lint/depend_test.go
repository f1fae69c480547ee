package lint

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/operator-publish/publish/internal/bundle"
)

// TestDependencyMissing: the op bundle requires the GVK Gadget and the
// package store. Gadget is met by another bundle the cluster lists when
// every listed version was read (Complete), missing without it, and not
// checked when the cluster lists versions the run did not read; a listing
// that cannot be read is a finding naming why; without a listing (publish
// lint) nothing is reported.
func TestDependencyMissing(t *testing.T) {
	_, files := parseTxtar([]byte(`-- packages/op/1.0.0/bundle/manifests/op.clusterserviceversion.yaml.replace --
<<<
  customresourcedefinitions:
    owned:
===
  customresourcedefinitions:
    required:
    - name: gadgets.other.example.com
      version: v1
      kind: Gadget
      displayName: Gadget
      description: A Gadget of another operator.
    owned:
>>>
-- packages/op/1.0.0/bundle/metadata/dependencies.yaml --
dependencies:
- type: olm.package
  value:
    packageName: store
    version: ">=1.0.0"
`))
	base, cfg := loadCase(t, files)
	const opPath, gadgetPath = "packages/op/1.0.0/manifest.yaml", "packages/gadget/1.0.0/manifest.yaml"
	op := base.Bundles[opPath]
	if op == nil {
		t.Fatal("no op bundle")
	}
	// gadget: another operator's bundle, which owns the API service Gadget.
	gadget := *op
	gadget.CSV = op.CSV.DeepCopy()
	gadget.CSV.Spec.CustomResourceDefinitions.Required = nil
	gadget.CSV.Spec.APIServiceDefinitions.Owned = []v1alpha1.APIServiceDescription{{Name: "gadgets", Group: "other.example.com", Version: "v1", Kind: "Gadget"}}
	gadget.Metadata = map[string][]byte{"annotations.yaml": op.Metadata["annotations.yaml"]}
	var gadgetFile File
	for _, f := range base.Files {
		if f.Path == opPath {
			gadgetFile = File{Path: gadgetPath, Data: []byte(strings.NewReplacer("op.v1.0.0", "gadget.v1.0.0", "op-bundle", "gadget-bundle").Replace(string(f.Data)))}
		}
	}

	store := func(string) ([]string, error) { return []string{"1.2.0"}, nil }
	for _, c := range []struct {
		name    string
		listing *Listing
		gadget  bool
		want    []string // message parts, one finding each
	}{
		{name: "met by another bundle listed", listing: &Listing{Cluster: "edge", Versions: store, Complete: true}, gadget: true},
		{name: "no bundle provides the GVK", listing: &Listing{Cluster: "edge", Versions: store, Complete: true},
			want: []string{"requires other.example.com/v1, Kind=Gadget (olm.gvk.required): no bundle cluster edge lists provides it"}},
		{name: "versions not read: GVKs not checked", listing: &Listing{Cluster: "edge", Versions: store}},
		{name: "listing unreadable", listing: &Listing{Cluster: "edge", Versions: func(string) ([]string, error) { return nil, errors.New("entry store does not parse") }},
			want: []string{`requires package store in range ">=1.0.0" (olm.package.required): what cluster edge lists of store cannot be read: entry store does not parse`}},
		{name: "no cluster"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := base
			in.Listing = c.listing
			in.Bundles = map[string]*bundle.Bundle{opPath: op}
			in.Files = append([]File(nil), base.Files...)
			if c.gadget {
				in.Bundles[gadgetPath] = &gadget
				in.Files = append(in.Files, gadgetFile)
			}
			var got []Finding
			for _, f := range Run(context.Background(), cfg, in) {
				if f.Rule == RuleDependencyMissing {
					got = append(got, f)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d findings, want %d: %v", len(got), len(c.want), got)
			}
			for i, f := range got {
				if f.Path != opPath || f.Line != 7 || f.Severity != Error || !strings.Contains(f.Message, c.want[i]) || f.Artifact != "op" {
					t.Errorf("finding %v, want at %s:7 with %q", f, opPath, c.want[i])
				}
			}
		})
	}
}
