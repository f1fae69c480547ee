package olm

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/olm/olmtest"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestServeCacheVersions builds the catalog image of one bundle on opm
// base images (olmtest.PushOPMBase) and serves it with the base's own
// opm, taken out of the catalog image: on a base whose opm is the
// operator-registry version that writes the cache, the image has the
// cache, the command enforces it, and the base's opm accepts it (`serve
// --cache-only --cache-enforce-integrity`); on a base of another version
// (the same opm, its build information naming v1.72.0:
// olmtest.OtherVersion), on one without opm, and with serveCache false, it
// has none, the command is `serve /configs`, and the base's opm still
// serves it over gRPC (it builds the cache at start).
func TestServeCacheVersions(t *testing.T) {
	opm := requireOPM(t)
	if v := CacheWriterVersion(); v != registryVersion {
		t.Fatalf("CacheWriterVersion %s, go.mod says %s: update registryVersion", v, registryVersion)
	}
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	ctx := context.Background()
	cfg, err := Build([]Package{{Name: "demo", Entries: []Entry{releaseBundleImage(t, ctx, reg, "")}}}, FormatCSVMetadata)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env := opmEnv(t, reg)
	same := olmtest.PushOPMBase(t, opm, reg.Host+"/operator-framework/opm:v1.73.0", reg.Options()...)
	other := olmtest.PushOPMBase(t, olmtest.OtherVersion(t, opm, "v1.73.0", "v1.72.0"), reg.Host+"/operator-framework/opm:v1.72.0", reg.Options()...)
	none := pushBase(t, reg, reg.Host+"/stand-in/opm:none")
	off := false
	for _, tc := range []struct {
		name       string
		base       name.Reference
		serveCache *bool
		cache      bool
		reason     string
	}{
		{"same version", same, nil, true, "operator-registry v1.73.0, which wrote"},
		{"another version", other, nil, false, "operator-registry v1.72.0, the serve cache would be written by v1.73.0"},
		{"serveCache false", same, &off, false, "serveCache is false"},
		{"no opm", none, nil, false, "the base image has no /bin/opm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst, _ := name.NewTag(reg.Host + "/olm/catalog:" + strings.ReplaceAll(tc.name, " ", "-"))
			digest, dec, err := Push(ctx, tc.base, dst, files, tc.serveCache, reg.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			if dec.Cache != tc.cache || !strings.Contains(dec.Reason, tc.reason) {
				t.Fatalf("cache %v (%s), want %v (…%s…)", dec.Cache, dec.Reason, tc.cache, tc.reason)
			}
			img, err := remote.Image(digest, reg.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			want := CmdNoCache
			if tc.cache {
				want = Cmd
			}
			if !reflect.DeepEqual(cf.Config.Cmd, want) {
				t.Errorf("command %v, want %v", cf.Config.Cmd, want)
			}
			root := extractCatalogLayer(t, reg, digest)
			_, statErr := os.Stat(filepath.Join(root, "tmp", "cache"))
			if (statErr == nil) != tc.cache {
				t.Errorf("/tmp/cache in the layer: %v, want %v", statErr == nil, tc.cache)
			}
			if tc.base == none {
				return // nothing there to serve it
			}
			own := olmtest.ExtractOPM(t, digest.String(), reg.Options()...)
			if tc.cache {
				runOPM(t, own, env, "serve", filepath.Join(root, ConfigsDir), "--cache-dir="+filepath.Join(root, "tmp", "cache"), "--cache-only", "--cache-enforce-integrity")
			}
			checkServeGRPC(t, own, root, cfg)
		})
	}
}
