package target

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/model"
	yaml "go.yaml.in/yaml/v4"
)

// testBlock returns the olm block written in text (its keys at the top
// level, line 1 first) as internal/config hands it to decodeOLM: the node
// and a Line that walks keys from it.
func testBlock(t *testing.T, text string) Block {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	b := Block{File: "publish.yaml", Cluster: "edge"}
	if len(doc.Content) == 0 {
		return b
	}
	b.Node = doc.Content[0]
	b.Line = func(keys ...string) int {
		n, at := b.Node, 0
		for _, k := range keys {
			var next *yaml.Node
			switch n.Kind {
			case yaml.MappingNode:
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						at, next = n.Content[i].Line, n.Content[i+1]
						break
					}
				}
			case yaml.SequenceNode:
				if i, err := strconv.Atoi(k); err == nil && i < len(n.Content) {
					next = n.Content[i]
					at = next.Line
				}
			}
			if next == nil {
				return at
			}
			n = next
		}
		return at
	}
	return b
}

// TestDecodeOLMProblems: each rule of the olm block is refused when
// publish.yaml is read, at the line of its key and named by its path, and
// Check refuses the same settings built in code with the same words.
func TestDecodeOLMProblems(t *testing.T) {
	v1 := "catalogKinds: [ClusterCatalog]\n"
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"bundle format", "bundleFormat: csv\n", 1, "bundleFormat: "},
		{"deprecation period", "bundleFormat: olm.csv.metadata\ndeprecationPeriod: a month\n", 2, `deprecationPeriod: "a month": want a number of days (30d) or a Go duration (720h); 0 removes delisted versions at once`},
		{"negative deprecation period", "deprecationPeriod: -3d\n", 1, `deprecationPeriod: "-3d": want 0 or more days`},
		{"channels", "channels: streams\n", 1, `channels: "streams": want bundles (the default: the channels the bundles name) or semver`},
		{"default channel type", "channels: semver\ndefaultChannelTypePreference: patch\n", 2, `defaultChannelTypePreference "patch": want minor (the default) or major`},
		{"default channel type without semver", "defaultChannelTypePreference: major\n", 1, "defaultChannelTypePreference is set, but channels is not semver"},
		{"source name", "catalogSource:\n  name: Not_A_Name\n", 2, "catalogSource.name: CatalogSource name"},
		{"source namespace", "catalogSource:\n  namespace: a.b\n", 2, "catalogSource.namespace: CatalogSource namespace"},
		{"poll interval", "catalogSource:\n  pollInterval: soon\n", 2, `catalogSource.pollInterval: poll interval "soon"`},
		{"catalog kind", "catalogKinds: [CatalogSource, Subscription]\n", 1, `catalogKinds: "Subscription": want CatalogSource, ClusterCatalog or both`},
		{"catalog kind item", "catalogKinds:\n- ClusterCatalog\n- OperatorGroup\n", 3, `catalogKinds: "OperatorGroup"`},
		{"cluster catalog", v1 + "clusterCatalog:\n  pollIntervalMinutes: -5\n", 2, "clusterCatalog: "},
		{"cluster catalog without v1", "clusterCatalog:\n  name: ours\n", 1, "clusterCatalog is set, but catalogKinds does not include ClusterCatalog"},
		{"redirection", "imageRedirection:\n- ImageDigestMirrorSet\n- docker\n", 3, `imageRedirection: "docker": want some of`},
		{"extensions without v1", "clusterExtensions:\n- package: etcd\n  namespace: etcd\n", 1, "clusterExtensions need catalogKinds to include ClusterCatalog"},
		{"extension", v1 + "clusterExtensions:\n- package: etcd\n  namespace: etcd\n- package: flux\n", 5, "clusterExtensions[1]: "},
		{"extension version", v1 + "clusterExtensions:\n- package: etcd\n  namespace: etcd\n  version: \"> = 1\"\n", 3, "clusterExtensions[0]: "},
		{"extension upgrade policy", v1 + "clusterExtensions:\n- package: etcd\n  namespace: etcd\n  upgradeConstraintPolicy: Never\n", 3, `clusterExtensions[0]: ClusterExtension etcd: upgradeConstraintPolicy "Never": want CatalogProvided (the default) or SelfCertified`},
		{"extension twice", v1 + "clusterExtensions:\n- package: etcd\n  namespace: etcd\n- package: etcd\n  namespace: other\n", 5, "clusterExtensions[1]: a second ClusterExtension named etcd: give one a name"},
	} {
		b := testBlock(t, tc.text)
		_, err := decodeOLM(b)
		var be *BlockError
		if !errors.As(err, &be) || be.Line != tc.line || !strings.HasPrefix(be.Msg, "clusters.edge.olm."+tc.want) {
			t.Errorf("%s: %v, want line %d: clusters.edge.olm.%s…", tc.name, err, tc.line, tc.want)
		}
		var y olmBlock
		if err := b.Node.Load(&y); err != nil {
			t.Fatal(err)
		}
		err = newOLM(Settings{Cluster: "edge", Own: y.options()}).Check()
		var ie *model.InputError
		if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), "publish.yaml clusters.edge.olm: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check: %v, want publish.yaml clusters.edge.olm: …%s", tc.name, err, tc.want)
		}
	}
}

// TestDecodeOLM: a good block reaches OLMOptions, each ClusterExtension
// with its file:line; no block is the defaults; the image references are
// left to Check (which a run calls before pushing); a wrong type or an
// unknown field is go.yaml.in/yaml/v4's error, for internal/config to name.
func TestDecodeOLM(t *testing.T) {
	own, err := decodeOLM(testBlock(t, "catalogImage: registry.local/olm/catalog\nbundleFormat: olm.bundle.object\ncatalogKinds: [CatalogSource, ClusterCatalog]\ncatalogSource:\n  pollInterval: 30m\nclusterExtensions:\n- package: etcd\n  namespace: etcd\nimageRedirection: [containerd]\nchannels: semver\ndefaultChannelTypePreference: major\nserveCache: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := own.(OLMOptions)
	if o.CatalogImage != "registry.local/olm/catalog" || o.BundleFormat != "olm.bundle.object" || !o.UsesOLMv1() || o.Source.PollInterval != "30m" ||
		len(o.Extensions) != 1 || o.Extensions[0].Where != "publish.yaml:7" || len(o.Redirect) != 1 ||
		o.Channels != ChannelsSemver || o.DefaultChannelType != "major" || o.ServeCache == nil || *o.ServeCache {
		t.Errorf("settings: %+v", o)
	}
	if own, err := decodeOLM(Block{Cluster: "edge"}); err != nil || !reflect.DeepEqual(own, OLMOptions{}) {
		t.Errorf("no block: %+v %v", own, err)
	}
	own, err = decodeOLM(testBlock(t, "catalogImage: registry.local/catalog@sha256:00\n"))
	if err != nil {
		t.Fatalf("catalogImage is Check's: %v", err)
	}
	if err := newOLM(Settings{Cluster: "edge", Own: own}).Check(); err == nil || !strings.Contains(err.Error(), "catalogImage") {
		t.Errorf("Check: %v, want catalogImage", err)
	}
	for _, text := range []string{"clusterCatalog:\n  priority: high\n", "catalogSource:\n  pollIntervall: 10m\n"} {
		var le *yaml.LoadErrors
		if _, err := decodeOLM(testBlock(t, text)); !errors.As(err, &le) || le.Errors[0].Mark.Line != 2 {
			t.Errorf("%q: %v, want a *yaml.LoadErrors at line 2", text, err)
		}
	}
}

// TestPreviewServeCache: the plan says whether the catalog image will hold
// opm's serve cache: never with serveCache false, else only when the base
// image's opm is the operator-registry version that writes it.
func TestPreviewServeCache(t *testing.T) {
	off := false
	for _, tc := range []struct {
		o    OLMOptions
		want string
	}{
		{OLMOptions{ServeCache: &off}, "the catalog image has no serve cache (serveCache: false)"},
		{OLMOptions{}, "gets opm's serve cache only if the opm of " + DefaultOPMImage + " is operator-registry v1.73.0"},
	} {
		w, err := newOLM(Settings{Cluster: "edge", Own: tc.o}).Preview(nil, nil, "")
		if err != nil || !strings.Contains(w, tc.want) {
			t.Errorf("%+v: %q, %v; want …%s…", tc.o, w, err, tc.want)
		}
	}
}
