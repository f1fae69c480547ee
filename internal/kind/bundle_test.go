package kind_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// TestBundleKind: the bundle kind reads spec.artifact as a bundle image;
// the version's images are spec.relatedImages then those the CSV deploys,
// its display facts the CSV's, and lint gets the bundle; a bundle that
// does not exist is the version's read error, which lint gets too.
func TestBundleKind(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := bundle.Build("../bundle/testdata/demo")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/demo-bundle:v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	mc, err := mirror.New(mirror.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	good := pm(manifest.TypeBundle, "demo", "1.2.3", "quay.io/demo/agent:2.0")
	good.Spec.Artifact = ref.String()
	gone := pm(manifest.TypeBundle, "demo", "1.2.4")
	gone.Spec.Artifact = host + "/demo-bundle:v1.2.4"
	vs := model.NewVersions([]*manifest.PackageManifest{good, gone})
	if err := kind.Read(context.Background(), kind.Env{Client: mc}, vs); err != nil {
		t.Fatal(err)
	}
	b := kind.BundleOf(vs[0])
	if b == nil {
		t.Fatalf("no bundle read: %v", vs[0].ReadErr)
	}
	if want := append([]string{"quay.io/demo/agent:2.0"}, without(b.Images, "quay.io/demo/agent:2.0")...); !reflect.DeepEqual(vs[0].Images, want) || len(b.Images) == 0 {
		t.Errorf("images %v, want %v", vs[0].Images, want)
	}
	if name, _ := vs[0].Content.Info(); name != "Demo Operator" || vs[0].Content.ImagesFrom() != "the bundle's CSV" {
		t.Errorf("display name %q, images from %q", name, vs[0].Content.ImagesFrom())
	}
	var nf *bundle.NotFoundError
	if !errors.As(vs[1].ReadErr, &nf) || vs[1].Content != nil {
		t.Errorf("a missing bundle: %v", vs[1].ReadErr)
	}
	var in lint.Input
	kind.Lint(&in, kind.Env{}, vs)
	if in.Bundles[good.Path] != b || in.Annotations[good.Path] == nil || in.BundleErrors[gone.Path] != vs[1].ReadErr || len(in.Bundles) != 1 || len(in.BundleErrors) != 1 {
		t.Errorf("lint input: bundles %v, errors %v", in.Bundles, in.BundleErrors)
	}
}

func without(in []string, drop string) []string {
	var out []string
	for _, s := range in {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}
