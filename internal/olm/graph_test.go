package olm

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	semver "github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/bundle"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// csvBundle is a bundle of package p at version v whose CSV replaces,
// skips and skipRange as given, in channels.
func csvBundle(t *testing.T, p, v, replaces string, skips []string, skipRange string, channels ...string) *bundle.Bundle {
	t.Helper()
	csv := &v1alpha1.ClusterServiceVersion{
		TypeMeta:   metav1.TypeMeta{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion"},
		ObjectMeta: metav1.ObjectMeta{Name: p + ".v" + v, Annotations: map[string]string{}},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			Version:  version.OperatorVersion{Version: semver.MustParse(v)},
			Replaces: replaces, Skips: skips,
			InstallStrategy: v1alpha1.NamedInstallStrategy{StrategyName: "deployment"},
		},
	}
	if skipRange != "" {
		csv.Annotations["olm.skipRange"] = skipRange
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle.Bundle{
		CSV: csv, CSVName: csv.Name, Version: v, Package: p, Channels: channels, DefaultChannel: channels[0],
		Loaded: &manifests.Bundle{Name: csv.Name, CSV: csv, Objects: []*unstructured.Unstructured{{Object: obj}}},
	}
}

func entries(bs ...*bundle.Bundle) []Entry {
	var es []Entry
	for _, b := range bs {
		es = append(es, Entry{Bundle: b, Image: "registry.local/b/" + b.CSVName + "@sha256:" + strings.Repeat("a", 64)})
	}
	return es
}

func channelOf(t *testing.T, cfg *declcfg.DeclarativeConfig, ch string) []declcfg.ChannelEntry {
	t.Helper()
	for _, c := range cfg.Channels {
		if c.Name == ch {
			return c.Entries
		}
	}
	t.Fatalf("no channel %s in %+v", ch, cfg.Channels)
	return nil
}

func TestChannelGraph(t *testing.T) {
	for name, tc := range map[string]struct {
		bundles []*bundle.Bundle
		want    []declcfg.ChannelEntry
	}{
		"the CSVs' own graph is kept": {
			bundles: []*bundle.Bundle{
				csvBundle(t, "op", "1.0.0", "op.v0.9.0", nil, "", "stable"),
				csvBundle(t, "op", "1.1.0", "op.v1.0.0", nil, ">=1.0.0 <1.1.0", "stable"),
				csvBundle(t, "op", "1.2.0", "op.v1.0.0", []string{"op.v1.1.0"}, "", "stable"),
			},
			want: []declcfg.ChannelEntry{
				{Name: "op.v1.0.0", Replaces: "op.v0.9.0"},
				{Name: "op.v1.1.0", Replaces: "op.v1.0.0", SkipRange: ">=1.0.0 <1.1.0"},
				{Name: "op.v1.2.0", Replaces: "op.v1.0.0", Skips: []string{"op.v1.1.0"}},
			},
		},
		"a delisted middle version: the versions order links the rest": {
			bundles: []*bundle.Bundle{
				csvBundle(t, "op", "1.0.0", "", nil, "", "stable"),
				csvBundle(t, "op", "1.2.0", "op.v1.1.0", nil, "", "stable"),
			},
			want: []declcfg.ChannelEntry{
				{Name: "op.v1.0.0"},
				{Name: "op.v1.2.0", Replaces: "op.v1.0.0"},
			},
		},
		"a left-out version and a skip of an older published one: the chain stays whole": {
			// 1.3.0 replaces 1.2.5, which is not published, and skips
			// 1.1.0, which is: kept, operator-registry would stop
			// following replaces at 1.1.0 and strand 1.0.0.
			bundles: []*bundle.Bundle{
				csvBundle(t, "op", "1.0.0", "", nil, "", "stable"),
				csvBundle(t, "op", "1.1.0", "op.v1.0.0", nil, "", "stable"),
				csvBundle(t, "op", "1.2.0", "op.v1.1.0", nil, "", "stable"),
				csvBundle(t, "op", "1.3.0", "op.v1.2.5", []string{"op.v1.1.0", "op.v1.2.1"}, "", "stable"),
			},
			want: []declcfg.ChannelEntry{
				{Name: "op.v1.0.0"},
				{Name: "op.v1.1.0", Replaces: "op.v1.0.0"},
				{Name: "op.v1.2.0", Replaces: "op.v1.1.0"},
				{Name: "op.v1.3.0", Replaces: "op.v1.2.0", Skips: []string{"op.v1.2.1"}},
			},
		},
		"no replaces at all (skipRange only)": {
			bundles: []*bundle.Bundle{
				csvBundle(t, "op", "2.0.0", "", nil, "<2.0.0", "stable"),
				csvBundle(t, "op", "1.0.0", "", nil, "", "stable"),
			},
			want: []declcfg.ChannelEntry{
				{Name: "op.v1.0.0"},
				{Name: "op.v2.0.0", Replaces: "op.v1.0.0", SkipRange: "<2.0.0"},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Build([]Package{{Name: "op", Entries: entries(tc.bundles...)}}, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := channelOf(t, cfg, "stable"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestBuildPackagesAndChannels(t *testing.T) {
	cfg, err := Build([]Package{
		{Name: "op", Entries: entries(
			csvBundle(t, "op", "1.0.0", "", nil, "", "stable", "fast"),
			csvBundle(t, "op", "1.1.0", "op.v1.0.0", nil, "", "fast"),
		)},
		{Name: "gone"}, // every version delisted: no package
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Packages) != 1 || cfg.Packages[0].Name != "op" || cfg.Packages[0].DefaultChannel != "fast" {
		t.Fatalf("packages %+v: want op with default channel fast (the newest bundle's)", cfg.Packages)
	}
	if len(cfg.Channels) != 2 || len(channelOf(t, cfg, "fast")) != 2 || len(channelOf(t, cfg, "stable")) != 1 {
		t.Errorf("channels %+v", cfg.Channels)
	}
	b := cfg.Bundles[0]
	if b.Schema != "olm.bundle" || b.Package != "op" || b.Properties[0].Type != "olm.package" ||
		b.Properties[len(b.Properties)-1].Type != "olm.csv.metadata" || b.RelatedImages[0].Image != b.Image {
		t.Errorf("bundle %+v", b)
	}

	// Two bundles with one CSV name cannot both be in a catalog.
	_, err = Build([]Package{{Name: "op", Entries: entries(
		csvBundle(t, "op", "1.0.0", "", nil, "", "stable"),
		csvBundle(t, "op", "1.0.0", "", nil, "", "stable"),
	)}}, "")
	if err == nil || !strings.Contains(err.Error(), "both bundles have the CSV name op.v1.0.0") {
		t.Errorf("duplicate CSV name: %v", err)
	}
}

// TestPushDeterministic builds the catalog image twice on a single-platform
// base without opm in the in-process registry: same digest, the label OLM
// expects, no serve cache (the base's opm version is unknown: DecideCache)
// and the command that has opm build it; and the catalog layer with the
// serve cache twice: same digest, /configs and /tmp/cache in it.
func TestPushDeterministic(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	base, _ := random.Image(256, 1)
	baseRef, _ := name.ParseReference(host + "/opm:v1.73.0")
	if err := remote.Write(baseRef, base); err != nil {
		t.Fatal(err)
	}
	cfg, err := Build([]Package{{Name: "op", Entries: entries(csvBundle(t, "op", "1.0.0", "", nil, "", "stable"))}}, "")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := Files(cfg)
	dst, _ := name.NewTag(host + "/olm/catalog:edge")
	var digests []string
	for range 2 {
		d, dec, err := Push(context.Background(), baseRef, dst, files, nil)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Cache {
			t.Errorf("a serve cache on a base without opm: %s", dec.Reason)
		}
		digests = append(digests, d.DigestStr())
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of one catalog: %v", digests)
	}
	img, err := remote.Image(dst)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	if cf.Config.Labels[ConfigsLabel] != "/configs" || strings.Join(cf.Config.Cmd, " ") != "serve /configs" {
		t.Errorf("config %+v", cf.Config)
	}
	if names := layerNames(t, img); slices.Contains(names, "tmp/cache/") || !slices.Contains(names, "configs/op/catalog.json") {
		t.Errorf("layer without a cache: %v", names)
	}
	var layers []string
	for range 2 {
		l, err := Layer(context.Background(), files, 1001, true)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := l.Digest()
		layers = append(layers, d.String())
		withCache, err := Image(base, l, true)
		if err != nil {
			t.Fatal(err)
		}
		if names := layerNames(t, withCache); !slices.Contains(names, "tmp/cache/") || !slices.Contains(names, "configs/op/catalog.json") {
			t.Errorf("layer with the cache: %v", names)
		}
	}
	if layers[0] != layers[1] {
		t.Errorf("two catalog layers with the cache: %v", layers)
	}
}

func layerNames(t *testing.T, img v1.Image) []string {
	t.Helper()
	ls, _ := img.Layers()
	rc, err := ls[len(ls)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tarReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	return names
}

func tarReader(r io.Reader) *tar.Reader { return tar.NewReader(r) }
