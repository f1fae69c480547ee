package olm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
)

// releaseBundle is csvBundle of package tiny at version v with
// spec.release rel (named tiny-v<v>-<rel>, as opm wants it) or, with
// substitutes set, the olm.substitutesFor annotation.
func releaseBundle(t *testing.T, v, rel, substitutes string) *bundle.Bundle {
	t.Helper()
	b := csvBundle(t, "tiny", v, "", nil, "", "stable")
	if rel != "" {
		b.Release = rel
		b.CSVName = "tiny-v" + v + "-" + rel
		b.CSV.Name = b.CSVName
	}
	if substitutes != "" {
		b.SubstitutesFor = substitutes
		b.CSV.Annotations["olm.substitutesFor"] = substitutes
		b.Loaded.Objects[0].SetAnnotations(b.CSV.Annotations)
	}
	return b
}

// chain returns the entries of a channel from its tail to its head, along
// replaces.
func chain(t *testing.T, es []declcfg.ChannelEntry) []string {
	t.Helper()
	byReplaces := map[string]string{}
	for _, e := range es {
		byReplaces[e.Replaces] = e.Name
	}
	var out []string
	for cur := byReplaces[""]; cur != ""; cur = byReplaces[cur] {
		out = append(out, cur)
	}
	if len(out) != len(es) {
		t.Fatalf("channel %+v is not one replaces chain", es)
	}
	return out
}

// plusless takes the "+" of build metadata out of the entries' images
// (entries names them after the CSV), which no image reference holds.
func plusless(es []Entry) []Entry {
	for i := range es {
		es[i].Image = strings.ReplaceAll(es[i].Image, "+", "-")
	}
	return es
}

// TestReleaseOrder orders the bundles of one version by release as opm
// v1.73.0 does (declcfg.Bundle.Compare): none first, then releases by
// semver pre-release rules (2 before 10); the older build-metadata form
// only with olm.substitutesFor. Two bundles equal in version and release
// are an error naming both sources.
func TestReleaseOrder(t *testing.T) {
	es := entries(
		releaseBundle(t, "1.0.0", "10", ""),
		releaseBundle(t, "0.9.0", "", ""),
		releaseBundle(t, "1.0.0", "2", ""),
		releaseBundle(t, "1.0.0", "", ""),
	)
	cfg, err := Build([]Package{{Name: "tiny", Entries: es}}, FormatCSVMetadata)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tiny.v0.9.0", "tiny.v1.0.0", "tiny-v1.0.0-2", "tiny-v1.0.0-10"}
	if got := chain(t, channelOf(t, cfg, "stable")); !slices.Equal(got, want) {
		t.Errorf("channel stable %v, want %v", got, want)
	}
	// opm's own order of the same bundles.
	bs := slices.Clone(cfg.Bundles)
	slices.SortFunc(bs, func(a, b declcfg.Bundle) int { return a.Compare(&b) })
	var opmOrder []string
	for _, b := range bs {
		opmOrder = append(opmOrder, b.Name)
	}
	if !slices.Equal(opmOrder, want) {
		t.Errorf("declcfg.Bundle.Compare orders %v, want %v", opmOrder, want)
	}

	legacy := plusless(entries(releaseBundle(t, "1.0.0+2", "", "tiny.v1.0.0+1"), releaseBundle(t, "1.0.0+1", "", "tiny.v1.0.0")))
	cfg, err = Build([]Package{{Name: "tiny", Entries: legacy}}, FormatCSVMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if got := chain(t, channelOf(t, cfg, "stable")); !slices.Equal(got, []string{"tiny.v1.0.0+1", "tiny.v1.0.0+2"}) {
		t.Errorf("olm.substitutesFor: channel stable %v, want the build metadata as the release", got)
	}

	for name, es := range map[string][]Entry{
		"same release":                      entries(releaseBundle(t, "1.0.0", "2", ""), releaseBundle(t, "1.0.0", "2", "")),
		"build metadata, no substitutesFor": plusless(entries(releaseBundle(t, "1.0.0+1", "", ""), releaseBundle(t, "1.0.0+2", "", ""))),
	} {
		es[0].Source, es[1].Source = "packages/tiny/a.yaml:4", "packages/tiny/b.yaml:4"
		es[1].Bundle.CSVName += "-b" // two CSV names, so that the release is what clashes
		_, err := Build([]Package{{Name: "tiny", Entries: es}}, FormatBundleObject)
		if err == nil || !strings.Contains(err.Error(), "packages/tiny/a.yaml:4 and packages/tiny/b.yaml:4") || !strings.Contains(err.Error(), "same version and release") {
			t.Errorf("%s: error %v, want one naming both manifests", name, err)
		}
	}
}

// releaseBundleImage pushes the demo bundle of internal/bundle at version
// 1.2.3 with spec.release rel ("" none) to reg and returns it read back.
func releaseBundleImage(t *testing.T, ctx context.Context, reg *testenv.Registry, rel string) Entry {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"manifests", "metadata"} {
		src := filepath.Join("..", "bundle", "testdata", "demo", sub)
		files, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(src, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			s := strings.ReplaceAll(string(data), "stable,, fast ,", "stable")
			if rel != "" {
				s = strings.Replace(s, "  name: demo-operator.v1.2.3\n", "  name: demo-v1.2.3-"+rel+"\n", 1)
				s = strings.Replace(s, "  version: 1.2.3\n", "  version: 1.2.3\n  release: \""+rel+"\"\n", 1)
			}
			if err := os.WriteFile(filepath.Join(dir, sub, f.Name()), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	tag := "v1.2.3"
	if rel != "" {
		tag += "-" + rel
	}
	ref, _ := name.NewTag(reg.Host + "/bundles/demo:" + tag)
	if err := remote.Write(ref, img, reg.Options()...); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	image := reg.Host + "/bundles/demo@" + d.String()
	b, err := bundle.Fetch(ctx, image, reg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	return Entry{Bundle: b, Image: image, Source: "packages/demo/" + tag + ".yaml:7"}
}

// TestReleaseOpm publishes three bundles of one version, without release
// and with the releases 2 and 10 (text: opm v1.73.0's csv-metadata
// migration fails on a numeric one, which we write as text), builds their catalog image and
// checks it with opm v1.73.0: `opm render` of each bundle image gives our
// olm.bundle (the olm.package property with its release), `opm render` of
// the catalog image gives our catalog byte for byte, opm's order
// (declcfg.Bundle.Compare of what it rendered) is our channel's replaces
// chain, and `opm serve` answers with the release 10 bundle as the head.
func TestReleaseOpm(t *testing.T) {
	opm := requireOPM(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	ctx := context.Background()
	var es []Entry
	var refs []string
	for _, rel := range []string{"10", "", "2"} {
		e := releaseBundleImage(t, ctx, reg, rel)
		es = append(es, e)
		refs = append(refs, e.Image)
	}
	cfg, err := Build([]Package{{Name: "demo", Entries: es}}, FormatCSVMetadata)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := pushBase(t, reg, reg.Host+"/operator-framework/opm:v1.73.0")
	dst, _ := name.NewTag(reg.Host + "/olm/catalog:release")
	digest, _, err := Push(ctx, base, dst, files, nil, reg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	env := opmEnv(t, reg)

	rendered, err := declcfg.LoadReader(bytes.NewReader(runOPM(t, opm, env, append([]string{"render", "-o", "json", "--migrate-level", "bundle-object-to-csv-metadata"}, refs...)...)))
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]declcfg.Bundle{}
	for _, b := range cfg.Bundles {
		ours[b.Image] = b
	}
	for _, theirs := range rendered.Bundles {
		compareBundles(t, ours[theirs.Image], theirs)
	}

	got := runOPM(t, opm, env, "render", digest.String(), "-o", "json")
	var want bytes.Buffer
	if err := declcfg.WriteJSON(*cfg, &want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		firstDiff(t, got, want.Bytes())
	}
	catalog, err := declcfg.LoadReader(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	bs := slices.Clone(catalog.Bundles)
	slices.SortFunc(bs, func(a, b declcfg.Bundle) int { return a.Compare(&b) })
	var opmOrder []string
	for _, b := range bs {
		opmOrder = append(opmOrder, b.Name)
	}
	wantOrder := []string{"demo-operator.v1.2.3", "demo-v1.2.3-2", "demo-v1.2.3-10"}
	if !slices.Equal(opmOrder, wantOrder) {
		t.Errorf("opm orders %v, want %v", opmOrder, wantOrder)
	}
	if ch := chain(t, channelOf(t, cfg, "stable")); !slices.Equal(ch, opmOrder) {
		t.Errorf("channel stable %v, opm's order %v", ch, opmOrder)
	}
	root := extractCatalogLayer(t, reg, digest)
	runOPM(t, opm, env, "validate", filepath.Join(root, ConfigsDir))
	checkServeGRPC(t, opm, root, cfg)
}
