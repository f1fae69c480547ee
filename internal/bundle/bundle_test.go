package bundle_test

import (
	"archive/tar"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
)

// bundleFacts is the part of a Bundle that is plain data.
type bundleFacts struct {
	CSVName, Version, DisplayName, Description string
	ProviderType, Provider, ProviderURL        string
	Package, DefaultChannel                    string
	Channels, Images                           []string
	CRDs, Objects                              int
	HasCSV                                     bool
}

func facts(b *bundle.Bundle) bundleFacts {
	f := bundleFacts{
		CSVName: b.CSVName, Version: b.Version, DisplayName: b.DisplayName, Description: b.Description,
		ProviderType: b.ProviderType, Provider: b.Provider, ProviderURL: b.ProviderURL,
		Package: b.Package, DefaultChannel: b.DefaultChannel,
		Channels: b.Channels, Images: b.Images,
		HasCSV: b.CSV != nil,
	}
	if b.Loaded != nil {
		f.CRDs = len(b.Loaded.V1CRDs) + len(b.Loaded.V1beta1CRDs)
		f.Objects = len(b.Loaded.Objects)
	}
	return f
}

// demoFacts are the facts of testdata/demo.
var demoFacts = bundleFacts{
	CSVName:        "demo-operator.v1.2.3",
	Version:        "1.2.3",
	DisplayName:    "Demo Operator",
	Description:    "Runs demo workloads on Kubernetes",
	ProviderType:   "community",
	Provider:       "Demo Inc",
	ProviderURL:    "https://demo.example.com",
	Package:        "demo",
	DefaultChannel: "stable",
	Channels:       []string{"stable", "fast"},
	Images: []string{
		"busybox:1.36",
		"quay.io/demo/agent:2.0",
		"quay.io/demo/console:3",
		"quay.io/demo/init:1.0",
		"quay.io/demo/manager:v1.2.3",
		"registry.example.com/db/postgres@sha256:1111111111111111111111111111111111111111111111111111111111111111",
	},
	CRDs:    1,
	Objects: 2,
	HasCSV:  true,
}

func TestLoadDemo(t *testing.T) {
	b, err := bundle.Load(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(b); !reflect.DeepEqual(got, demoFacts) {
		t.Errorf("Load = %+v\nwant   %+v", got, demoFacts)
	}
	if b.Ref != "" || b.Digest != "" {
		t.Errorf("Load set Ref %q, Digest %q; want both empty", b.Ref, b.Digest)
	}
}

func TestFetch(t *testing.T) {
	host := startRegistry(t, nil)
	img, err := bundle.Build(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	digest := push(t, host+"/demo/bundle:v1.2.3", img)

	for _, ref := range []string{
		host + "/demo/bundle:v1.2.3",
		host + "/demo/bundle@" + digest.String(),
	} {
		t.Run(ref, func(t *testing.T) {
			b, err := bundle.Fetch(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := facts(b); !reflect.DeepEqual(got, demoFacts) {
				t.Errorf("Fetch = %+v\nwant    %+v", got, demoFacts)
			}
			if b.Ref != ref || b.Digest != digest.String() {
				t.Errorf("Ref %q Digest %q; want %q %q", b.Ref, b.Digest, ref, digest)
			}
			for _, img := range b.Images {
				if strings.Contains(img, "not-a-related-image") {
					t.Errorf("Images holds %q, the value of an env var not named RELATED_IMAGE_*", img)
				}
			}
		})
	}
}

func TestImages(t *testing.T) {
	container := func(image string, env ...corev1.EnvVar) corev1.Container {
		return corev1.Container{Name: "c", Image: image, Env: env}
	}
	env := func(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }
	csv := func(init, containers []corev1.Container, related ...string) *v1alpha1.ClusterServiceVersion {
		c := &v1alpha1.ClusterServiceVersion{}
		c.Spec.InstallStrategy.StrategySpec.DeploymentSpecs = []v1alpha1.StrategyDeploymentSpec{{
			Name: "d",
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{InitContainers: init, Containers: containers}}},
		}}
		for _, r := range related {
			c.Spec.RelatedImages = append(c.Spec.RelatedImages, v1alpha1.RelatedImage{Name: "r", Image: r})
		}
		return c
	}
	tests := []struct {
		name string
		csv  *v1alpha1.ClusterServiceVersion
		want []string
	}{
		{"empty CSV", &v1alpha1.ClusterServiceVersion{}, []string{}},
		{"containers and init containers", csv([]corev1.Container{container("b/init:1")}, []corev1.Container{container("a/main:1")}), []string{"a/main:1", "b/init:1"}},
		{
			"RELATED_IMAGE_ env only",
			csv(nil, []corev1.Container{container("m:1",
				env("RELATED_IMAGE_X", "x:1"),
				env("RELATED_IMAGE_INIT", " y:1 "),
				env("OPERAND_IMAGE", "not:1"),
				env("related_image_lower", "not:2"),
				env("MY_RELATED_IMAGE_Z", "not:3"),
				env("RELATED_IMAGE_EMPTY", ""),
				corev1.EnvVar{Name: "RELATED_IMAGE_REF", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			)}),
			[]string{"m:1", "x:1", "y:1"},
		},
		{"RELATED_IMAGE_ in init containers", csv([]corev1.Container{container("i:1", env("RELATED_IMAGE_A", "a:1"))}, nil), []string{"a:1", "i:1"}},
		{"spec.relatedImages", csv(nil, nil, "z:1", "", "  ", "a:1"), []string{"a:1", "z:1"}},
		{
			"duplicates across sources",
			csv([]corev1.Container{container("a:1")}, []corev1.Container{container("a:1", env("RELATED_IMAGE_A", "a:1")), container(" a:1")}, "a:1"),
			[]string{"a:1"},
		},
		{"empty container image", csv(nil, []corev1.Container{container(""), container("b:1")}), []string{"b:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := bundle.Images(tc.csv)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Images = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFetchIndex(t *testing.T) {
	host := startRegistry(t, nil)
	demo, err := bundle.Build(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	other := func(csvName string) v1.Image {
		d := t.TempDir()
		writeFiles(t, d, map[string]string{
			"manifests/csv.yaml":        csvNamed(csvName),
			"metadata/annotations.yaml": readDemo(t, "metadata/annotations.yaml"),
		})
		img, err := bundle.Build(d)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	platform := func(os, arch string) *v1.Platform { return &v1.Platform{OS: os, Architecture: arch} }
	type child struct {
		img      v1.Image
		platform *v1.Platform
	}
	tests := []struct {
		name     string
		children []child
		want     string // CSV name
	}{
		{"amd64 after arm64", []child{{other("arm.v1"), platform("linux", "arm64")}, {demo, platform("linux", "amd64")}}, demoFacts.CSVName},
		{"amd64 last of three", []child{{other("s390x.v1"), platform("linux", "s390x")}, {other("win.v1"), platform("windows", "amd64")}, {demo, platform("linux", "amd64")}}, demoFacts.CSVName},
		{"amd64 first", []child{{demo, platform("linux", "amd64")}, {other("arm.v1"), platform("linux", "arm64")}}, demoFacts.CSVName},
		{"no linux/amd64: the first child", []child{{other("first.v1"), platform("linux", "arm64")}, {other("second.v1"), platform("linux", "ppc64le")}}, "first.v1"},
		{"no platforms: the first child", []child{{other("first.v1"), nil}, {demo, nil}}, "first.v1"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var idx v1.ImageIndex = empty.Index
			for _, c := range tc.children {
				idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: c.img, Descriptor: v1.Descriptor{Platform: c.platform}})
			}
			ref := host + "/demo/multi:" + string(rune('a'+i))
			digest := pushIndex(t, ref, idx)
			b, err := bundle.Fetch(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if b.CSVName != tc.want {
				t.Errorf("CSVName %q, want %q", b.CSVName, tc.want)
			}
			if b.Digest != digest.String() {
				t.Errorf("Digest %s, want the index digest %s", b.Digest, digest)
			}
		})
	}
}

func TestFetchErrors(t *testing.T) {
	host := startRegistry(t, nil)
	authHost := startRegistry(t, requireBasicAuth("user", "secret"))
	demo, err := bundle.Build(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	push(t, host+"/demo/bundle:v1", demo)
	push(t, authHost+"/demo/bundle:v1", demo, remote.WithAuth(&authn.Basic{Username: "user", Password: "secret"}))

	buildDir := func(files map[string]string) v1.Image {
		d := t.TempDir()
		writeFiles(t, d, files)
		img, err := bundle.Build(d)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	annotations := readDemo(t, "metadata/annotations.yaml")
	noCSV := buildDir(map[string]string{
		"manifests/crd.yaml":        readDemo(t, "manifests/demo.example.com_widgets.yaml"),
		"metadata/annotations.yaml": annotations,
	})
	twoCSVs := buildDir(map[string]string{
		"manifests/a.clusterserviceversion.yaml": csvNamed("a.v1"),
		"manifests/b.clusterserviceversion.yaml": csvNamed("b.v1"),
		"metadata/annotations.yaml":              annotations,
	})
	badYAML := buildDir(map[string]string{
		"manifests/csv.yaml":        csvNamed("a.v1") + "  bogus: [\n",
		"metadata/annotations.yaml": annotations,
	})
	rnd, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	push(t, host+"/demo/nocsv:v1", noCSV)
	push(t, host+"/demo/twocsvs:v1", twoCSVs)
	push(t, host+"/demo/badyaml:v1", badYAML)
	push(t, host+"/demo/random:v1", rnd)
	emptyIndex := pushIndex(t, host+"/demo/emptyindex:v1", empty.Index)

	const (
		notFound = "not found"
		invalid  = "invalid"
		other    = "other"
	)
	tests := []struct {
		name   string
		ref    string
		opts   []remote.Option
		kind   string
		status int    // for other: the transport status
		msg    string // in err.Error()
	}{
		{name: "missing tag", ref: host + "/demo/bundle:v2", kind: notFound},
		{name: "missing repository", ref: host + "/demo/nothing:v1", kind: notFound},
		{name: "missing digest", ref: host + "/demo/bundle@sha256:" + strings.Repeat("0", 64), kind: notFound},
		{name: "no CSV", ref: host + "/demo/nocsv:v1", kind: invalid, msg: "find a csv"},
		{name: "no manifests dir", ref: host + "/demo/random:v1", kind: invalid, msg: "no manifests/ directory"},
		{name: "two CSVs", ref: host + "/demo/twocsvs:v1", kind: invalid, msg: "multiple CSVs"},
		{name: "unparseable CSV", ref: host + "/demo/badyaml:v1", kind: invalid},
		{name: "empty index", ref: host + "/demo/emptyindex@" + emptyIndex.String(), kind: invalid, msg: "no manifests"},
		{name: "malformed reference", ref: host + "/Demo/UPPER:v1", kind: invalid},
		{name: "401 without credentials", ref: authHost + "/demo/bundle:v1", kind: other, status: http.StatusUnauthorized},
		{name: "401 with wrong credentials", ref: authHost + "/demo/bundle:v1", kind: other, status: http.StatusUnauthorized,
			opts: []remote.Option{remote.WithAuth(&authn.Basic{Username: "user", Password: "wrong"})}},
		{name: "401 missing tag", ref: authHost + "/demo/bundle:v2", kind: other, status: http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bundle.Fetch(context.Background(), tc.ref, tc.opts...)
			if err == nil {
				t.Fatalf("Fetch succeeded (%s), want an error", b.CSVName)
			}
			var nf *bundle.NotFoundError
			var inv *bundle.InvalidError
			isNF, isInv := errors.As(err, &nf), errors.As(err, &inv)
			switch tc.kind {
			case notFound:
				if !isNF || nf.Ref != tc.ref {
					t.Errorf("err = %v (%T), want *NotFoundError for %s", err, err, tc.ref)
				}
			case invalid:
				if !isInv || inv.Ref != tc.ref {
					t.Errorf("err = %v (%T), want *InvalidError for %s", err, err, tc.ref)
				}
			case other:
				if isNF || isInv {
					t.Errorf("err = %v (%T), want a registry error, neither NotFound nor Invalid", err, err)
				}
				var te *transport.Error
				if !errors.As(err, &te) || te.StatusCode != tc.status {
					t.Errorf("err = %v, want a transport error with status %d", err, tc.status)
				}
			}
			if !strings.Contains(err.Error(), tc.ref) {
				t.Errorf("error %q does not name %s", err, tc.ref)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}

	t.Run("right credentials", func(t *testing.T) {
		b, err := bundle.Fetch(context.Background(), authHost+"/demo/bundle:v1", remote.WithAuth(&authn.Basic{Username: "user", Password: "secret"}))
		if err != nil {
			t.Fatal(err)
		}
		if b.CSVName != demoFacts.CSVName {
			t.Errorf("CSVName %q", b.CSVName)
		}
	})
	t.Run("canceled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := bundle.Fetch(ctx, host+"/demo/bundle:v1")
		var nf *bundle.NotFoundError
		var inv *bundle.InvalidError
		if err == nil || errors.As(err, &nf) || errors.As(err, &inv) || !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled, neither NotFound nor Invalid", err)
		}
	})
}

// TestFetchHostileLayers checks that links and path traversal under
// manifests/ or metadata/ make the image invalid, and that nothing is
// written outside the temporary directory of FromImage (which is removed).
func TestFetchHostileLayers(t *testing.T) {
	host := startRegistry(t, nil)
	base := t.TempDir()
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	victim := filepath.Join(base, "victim")

	tests := []struct {
		name    string
		entries []entry
		msg     string
	}{
		{"dot-dot under manifests", []entry{reg("manifests/../../escaped.yaml", "x: 1\n")}, "escapes"},
		{"dot-dot under metadata", []entry{reg("metadata/../../../escaped.yaml", "x: 1\n")}, "escapes"},
		{"absolute dot-dot", []entry{reg("/../escaped.yaml", "x: 1\n")}, "escapes"},
		{"dot-dot outside the bundle dirs", []entry{reg("usr/../../escaped", "x\n")}, "escapes"},
		{"absolute symlink then write through it", []entry{
			{name: "manifests/evil", typ: tar.TypeSymlink, linkname: victim},
			reg("manifests/evil/pwned.yaml", "x: 1\n"),
		}, "link"},
		{"escaping relative symlink", []entry{
			{name: "manifests/evil", typ: tar.TypeSymlink, linkname: "../../../victim"},
			reg("manifests/evil/pwned.yaml", "x: 1\n"),
		}, "link"},
		{"symlink inside the bundle", []entry{{name: "manifests/copy.yaml", typ: tar.TypeSymlink, linkname: "demo.example.com_widgets.yaml"}}, "link"},
		{"symlinked manifests dir", []entry{{name: "manifests", typ: tar.TypeSymlink, linkname: victim}}, "link"},
		{"symlinked metadata file", []entry{{name: "metadata/annotations.yaml", typ: tar.TypeSymlink, linkname: victim}}, "link"},
		{"hard link", []entry{{name: "manifests/hard.yaml", typ: tar.TypeLink, linkname: "manifests/demo.example.com_widgets.yaml"}}, "link"},
		{"fifo", []entry{{name: "manifests/fifo", typ: tar.TypeFifo}}, "special"},
		{"char device", []entry{{name: "metadata/null", typ: tar.TypeChar}}, "special"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, hostileFirst := range []bool{true, false} {
				var entries []entry
				if hostileFirst {
					entries = append(append(entries, tc.entries...), demoEntries(t)...)
				} else {
					entries = append(demoEntries(t), tc.entries...)
				}
				ref := host + "/hostile/b:" + strings.Repeat("x", i+1)
				if !hostileFirst {
					ref += "-last"
				}
				push(t, ref, imageOf(t, layer(t, entries...)))
				_, err := bundle.Fetch(context.Background(), ref)
				var inv *bundle.InvalidError
				if !errors.As(err, &inv) {
					t.Errorf("hostile entry first=%v: err = %v (%T), want *InvalidError", hostileFirst, err, err)
				} else if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %q does not say %q", err, tc.msg)
				}
				assertOnlyEmptyTmp(t, base)
			}
		})
	}

	// Links and traversal outside manifests/ and metadata/ (a base image's
	// /bin -> usr/bin) are no concern of a bundle.
	t.Run("links elsewhere are ignored", func(t *testing.T) {
		entries := append([]entry{
			{name: "bin", typ: tar.TypeSymlink, linkname: "usr/bin"},
			{name: "etc/passwd", typ: tar.TypeSymlink, linkname: victim},
			{name: "dev/null", typ: tar.TypeChar},
		}, demoEntries(t)...)
		ref := host + "/hostile/elsewhere:v1"
		push(t, ref, imageOf(t, layer(t, entries...)))
		b, err := bundle.Fetch(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := facts(b); !reflect.DeepEqual(got, demoFacts) {
			t.Errorf("facts = %+v\nwant %+v", got, demoFacts)
		}
		assertOnlyEmptyTmp(t, base)
	})
}

// assertOnlyEmptyTmp fails unless base holds nothing but the empty
// directory tmp.
func assertOnlyEmptyTmp(t *testing.T, base string) {
	t.Helper()
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == base || p == filepath.Join(base, "tmp") {
			return nil
		}
		t.Errorf("left behind: %s (%s)", p, d.Type())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFetchLayers checks how several layers combine: upper layers win,
// whiteouts and opaque directories hide lower entries.
func TestFetchLayers(t *testing.T) {
	host := startRegistry(t, nil)
	annotations := reg("metadata/annotations.yaml", readDemo(t, "metadata/annotations.yaml"))
	tests := []struct {
		name   string
		layers [][]entry // lowest first
		want   string    // CSV name; "" for an *InvalidError
	}{
		{"manifests and metadata in separate layers", [][]entry{
			{reg("manifests/csv.yaml", csvNamed("a.v1"))},
			{annotations},
		}, "a.v1"},
		{"upper file replaces lower", [][]entry{
			{reg("manifests/csv.yaml", csvNamed("old.v1")), annotations},
			{reg("manifests/csv.yaml", csvNamed("new.v1"))},
		}, "new.v1"},
		{"whiteout removes a second CSV", [][]entry{
			{reg("manifests/a.yaml", csvNamed("a.v1")), reg("manifests/b.yaml", csvNamed("b.v1")), annotations},
			{reg("manifests/.wh.b.yaml", "")},
		}, "a.v1"},
		{"two CSVs without whiteout", [][]entry{
			{reg("manifests/a.yaml", csvNamed("a.v1")), annotations},
			{reg("manifests/b.yaml", csvNamed("b.v1"))},
		}, ""},
		{"opaque manifests dir", [][]entry{
			{reg("manifests/a.yaml", csvNamed("a.v1")), reg("manifests/b.yaml", csvNamed("b.v1")), annotations},
			{reg("manifests/.wh..wh..opq", ""), reg("manifests/c.yaml", csvNamed("c.v1"))},
		}, "c.v1"},
		{"whiteout of the manifests dir", [][]entry{
			{reg("manifests/a.yaml", csvNamed("a.v1")), annotations},
			{reg(".wh.manifests", "")},
		}, ""},
		{"whiteout then new manifests in a higher layer", [][]entry{
			{reg("manifests/a.yaml", csvNamed("a.v1")), annotations},
			{reg(".wh.manifests", "")},
			{reg("manifests/z.yaml", csvNamed("z.v1"))},
		}, "z.v1"},
		{"upper file shadows a lower directory", [][]entry{
			{reg("manifests/a.yaml", csvNamed("a.v1")), reg("manifests/sub/b.yaml", csvNamed("b.v1")), annotations},
			{reg("manifests/sub", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n")},
		}, "a.v1"},
		{"link in a shadowed lower layer", [][]entry{
			{{name: "manifests/link.yaml", typ: tar.TypeSymlink, linkname: "/etc/passwd"}},
			{reg("manifests/link.yaml", csvNamed("a.v1")), annotations},
		}, ""},
		{"lower file where upper has a directory", [][]entry{
			{reg("manifests", "a file\n"), annotations},
			{reg("manifests/a.yaml", csvNamed("a.v1"))},
		}, "a.v1"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ls []v1.Layer
			for _, es := range tc.layers {
				ls = append(ls, layer(t, es...))
			}
			ref := host + "/layers/b:" + strings.Repeat("l", i+1)
			push(t, ref, imageOf(t, ls...))
			b, err := bundle.Fetch(context.Background(), ref)
			if tc.want == "" {
				var inv *bundle.InvalidError
				if !errors.As(err, &inv) {
					t.Fatalf("err = %v, want *InvalidError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.CSVName != tc.want {
				t.Errorf("CSVName %q, want %q", b.CSVName, tc.want)
			}
		})
	}
}

// TestFetchCorpus reads a real community-operators bundle.
func TestFetchCorpus(t *testing.T) {
	shared, ok := testenv.SharedDir()
	dir := filepath.Join(shared, "corpus", "community-operators", "etcd", "0.9.4")
	if !ok {
		testenv.Skip(t, "no shared directory (../shared beside the repo, or PUBLISH_SHARED_DIR)")
	}
	if _, err := os.Stat(dir); err != nil {
		testenv.Skipf(t, "corpus bundle absent: %v", err)
	}
	want := bundleFacts{
		CSVName:        "etcdoperator.v0.9.4",
		Version:        "0.9.4",
		DisplayName:    "etcd",
		Description:    "Create and maintain highly-available etcd clusters on Kubernetes",
		Package:        "etcd",
		DefaultChannel: "singlenamespace-alpha",
		Channels:       []string{"singlenamespace-alpha"},
		Images:         []string{"quay.io/coreos/etcd-operator@sha256:66a37fd61a06a43969854ee6d3e21087a98b93838e284a6086b13917f96b0d9b"},
		CRDs:           3,
		Objects:        4,
		HasCSV:         true,
	}
	loaded, err := bundle.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(loaded); !reflect.DeepEqual(got, want) {
		t.Errorf("Load = %+v\nwant   %+v", got, want)
	}

	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.Labels["operators.operatorframework.io.bundle.package.v1"] != "etcd" {
		t.Errorf("labels %v lack the package", cf.Config.Labels)
	}
	host := startRegistry(t, nil)
	ref := host + "/community-operators/etcd-bundle:v0.9.4"
	digest := push(t, ref, img)
	b, err := bundle.Fetch(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := facts(b); !reflect.DeepEqual(got, want) {
		t.Errorf("Fetch = %+v\nwant    %+v", got, want)
	}
	if b.Digest != digest.String() {
		t.Errorf("Digest %s, want %s", b.Digest, digest)
	}
}
