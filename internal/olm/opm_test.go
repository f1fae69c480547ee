package olm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/olm/olmtest"
	"github.com/operator-publish/publish/internal/testenv"
)

// requireOPM returns the opm binary (olmtest.RequireOPM).
func requireOPM(t *testing.T) string { t.Helper(); return olmtest.RequireOPM(t) }

// opmEnv is the environment for opm reaching reg: its CA and credentials.
func opmEnv(t *testing.T, reg *testenv.Registry) []string {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// containers/image, which opm pulls with, wants a signature policy.
	policy := filepath.Join(dir, ".config", "containers", "policy.json")
	if err := os.MkdirAll(filepath.Dir(policy), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "DOCKER_CONFIG="+dir, "SSL_CERT_FILE="+reg.CAFile, "HOME="+dir, "XDG_RUNTIME_DIR="+dir)
}

func runOPM(t *testing.T, opm string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(opm, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("opm %s: %v\n%s", tail(strings.Join(args, " "), 300), err, tail(stderr.String(), 3000))
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// pushBase pushes a stand-in for the opm image: an image index of two
// platform images running as user 1001, as the upstream opm image does.
func pushBase(t *testing.T, reg *testenv.Registry, ref string) name.Reference {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json")
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		cf = cf.DeepCopy()
		cf.Config.User = "1001"
		cf.OS, cf.Architecture = "linux", arch
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx, reg.Options()...); err != nil {
		t.Fatal(err)
	}
	return r
}

// corpusInRegistry publishes the corpus to reg (testenv.BuildCorpus) and
// reads every bundle back from it, grouped by package, each with its image
// by digest.
func corpusInRegistry(t *testing.T, ctx context.Context, reg *testenv.Registry) (map[string][]Entry, []string) {
	t.Helper()
	shared := testenv.RequireShared(t)
	c, err := testenv.BuildCorpus(ctx, filepath.Join(shared, "corpus"), reg.Host, t.TempDir(), reg.Options()...)
	if err != nil {
		t.Logf("corpus bundles left out: %v", err)
	}
	if len(c.Packages) < 30 {
		t.Fatalf("only %d corpus bundles were published", len(c.Packages))
	}
	out := map[string][]Entry{}
	seen := map[string]bool{}
	var refs []string
	for _, p := range c.Packages {
		ref := reg.Host + "/bundles/" + p.Package + "@" + p.BundleDigest
		b, err := bundle.Fetch(ctx, ref, reg.Options()...)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if seen[b.CSVName] {
			continue
		}
		seen[b.CSVName] = true
		if err := opmRefuses(p.Package, Entry{Bundle: b, Image: ref}); err != nil {
			t.Logf("left out (opm refuses it; lint does too): %v", err)
			continue
		}
		out[p.Package] = append(out[p.Package], Entry{Bundle: b, Image: ref})
		refs = append(refs, ref)
	}
	return out, refs
}

// TestCatalogImageOpm publishes the corpus to the Debian registry (TLS and
// basic auth), builds the catalog (olm.csv.metadata, the default) and its
// image there, and checks it with opm itself: `opm render` of the catalog
// image gives our catalog byte for byte, `opm render --migrate-level
// bundle-object-to-csv-metadata` of every bundle image gives our olm.bundle
// entries, `opm render` of every bundle image gives those of our
// olm.bundle.object catalog, `opm serve --cache-only
// --cache-enforce-integrity` accepts the serve cache we built into the
// image, and `opm serve` answers operator-registry's gRPC client with
// every package, channel head and bundle (checkServeGRPC).
func TestCatalogImageOpm(t *testing.T) {
	opm := requireOPM(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	ctx := context.Background()
	entries, refs := corpusInRegistry(t, ctx, reg)

	cfg, err := Build(packagesOf(entries), FormatCSVMetadata)
	if err != nil {
		t.Fatal(err)
	}
	objCfg, err := Build(packagesOf(entries), FormatBundleObject)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if files[NotesFile], err = Notes(packagesOf(entries)); err != nil {
		t.Fatal(err)
	}
	base := olmtest.PushOPMBase(t, opm, reg.Host+"/operator-framework/opm:v1.73.0", reg.Options()...)
	dst, _ := name.NewTag(reg.Host + "/olm/catalog:global")
	digest, cache, err := Push(ctx, base, dst, files, nil, reg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if !cache.Cache {
		t.Fatalf("no serve cache on a base with opm %s: %s", CacheWriterVersion(), cache.Reason)
	}
	t.Logf("catalog image %s: %d packages, %d bundles", digest, len(cfg.Packages), len(cfg.Bundles))

	// Same input, same digest: TestPushDeterministic here, and for the
	// corpus the rerun of pipeline.TestRunOLMCorpus, which commits nothing.
	checkImageConfig(t, reg, digest)
	env := opmEnv(t, reg)

	t.Run("opm render of the catalog image", func(t *testing.T) {
		got := runOPM(t, opm, env, "render", digest.String(), "-o", "json")
		var want bytes.Buffer
		if err := declcfg.WriteJSON(*cfg, &want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			gotCfg, err := declcfg.LoadReader(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			t.Errorf("opm render of the catalog image differs from our catalog: %d packages, %d channels, %d bundles (ours %d, %d, %d)",
				len(gotCfg.Packages), len(gotCfg.Channels), len(gotCfg.Bundles), len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles))
			firstDiff(t, got, want.Bytes())
		}
	})

	for _, tc := range []struct {
		format Format
		cfg    *declcfg.DeclarativeConfig
		args   []string
	}{
		{FormatCSVMetadata, cfg, []string{"--migrate-level", "bundle-object-to-csv-metadata"}},
		{FormatBundleObject, objCfg, nil},
	} {
		t.Run("opm render "+strings.Join(tc.args, " ")+" of every bundle image ("+string(tc.format)+")", func(t *testing.T) {
			args := append(append([]string{"render", "-o", "json"}, tc.args...), refs...)
			rendered, err := declcfg.LoadReader(bytes.NewReader(runOPM(t, opm, env, args...)))
			if err != nil {
				t.Fatal(err)
			}
			ours := map[string]declcfg.Bundle{}
			for _, b := range tc.cfg.Bundles {
				ours[b.Image] = b
			}
			if len(rendered.Bundles) != len(refs) {
				t.Errorf("opm rendered %d bundles, want %d", len(rendered.Bundles), len(refs))
			}
			for _, theirs := range rendered.Bundles {
				mine, ok := ours[theirs.Image]
				if !ok {
					t.Errorf("opm rendered bundle %s (%s), not in our catalog", theirs.Name, theirs.Image)
					continue
				}
				compareBundles(t, mine, theirs)
			}
		})
	}

	t.Run("the catalog image is reused", func(t *testing.T) {
		prev, err := LoadPrevious(ctx, digest, reg.Options()...)
		if err != nil {
			t.Fatal(err)
		}
		if prev.Len() != len(refs) {
			t.Errorf("%d reusable bundles in the catalog image, want %d", prev.Len(), len(refs))
		}
	})

	t.Run("the base image's own opm accepts the cache", func(t *testing.T) {
		root := extractCatalogLayer(t, reg, digest)
		own := olmtest.ExtractOPM(t, digest.String(), reg.Options()...)
		runOPM(t, own, env, "serve", filepath.Join(root, ConfigsDir), "--cache-dir="+filepath.Join(root, "tmp", "cache"), "--cache-only", "--cache-enforce-integrity")
	})

	t.Run("opm serve answers gRPC", func(t *testing.T) {
		checkServeGRPC(t, opm, extractCatalogLayer(t, reg, digest), cfg)
	})
}

// compareBundles compares an olm.bundle of ours with opm's: name,
// package, image, the properties in order (values compared as JSON), and
// the relatedImages as a set (opm leaves deployment images in map order).
func compareBundles(t *testing.T, mine, theirs declcfg.Bundle) {
	t.Helper()
	if mine.Name != theirs.Name || mine.Package != theirs.Package || mine.Image != theirs.Image {
		t.Errorf("bundle %s/%s/%s, opm says %s/%s/%s", mine.Package, mine.Name, mine.Image, theirs.Package, theirs.Name, theirs.Image)
	}
	norm := func(b declcfg.Bundle) []string {
		var out []string
		for _, p := range b.Properties {
			var v any
			_ = json.Unmarshal(p.Value, &v)
			data, _ := json.Marshal(v)
			out = append(out, p.Type+" "+string(data))
		}
		return out
	}
	if a, b := norm(mine), norm(theirs); !reflect.DeepEqual(a, b) {
		t.Errorf("bundle %s: properties differ from opm render:\nours: %v\nopm:  %v", mine.Name, short(a), short(b))
	}
	ri := func(b declcfg.Bundle) []string {
		var out []string
		for _, r := range b.RelatedImages {
			out = append(out, r.Name+"="+r.Image)
		}
		sort.Strings(out)
		return out
	}
	if a, b := ri(mine), ri(theirs); !reflect.DeepEqual(a, b) {
		t.Errorf("bundle %s: relatedImages differ from opm render:\nours: %v\nopm:  %v", mine.Name, a, b)
	}
}

func short(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if len(s) > 160 {
			s = s[:160] + "..."
		}
		out[i] = s
	}
	return out
}

func firstDiff(t *testing.T, a, b []byte) {
	t.Helper()
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	lo := max(0, n-200)
	t.Errorf("first difference at byte %d:\nopm:  %q\nours: %q", n, a[lo:min(len(a), n+200)], b[lo:min(len(b), n+200)])
}

// checkImageConfig checks the label, entrypoint and command of every
// platform image of the catalog image.
func checkImageConfig(t *testing.T, reg *testenv.Registry, d name.Digest) {
	t.Helper()
	idx, err := remote.Index(d, reg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Errorf("catalog index has %d images, want 2 (one per base platform)", len(im.Manifests))
	}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.Labels[ConfigsLabel] != "/configs" || !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/bin/opm"}) ||
			!reflect.DeepEqual(cf.Config.Cmd, []string{"serve", "/configs", "--cache-dir=/tmp/cache"}) || cf.Config.User != "1001" {
			t.Errorf("%s: labels %v, entrypoint %v, cmd %v, user %q", m.Platform, cf.Config.Labels, cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.User)
		}
	}
}

// extractCatalogLayer writes the top layer of the catalog image's first
// platform image into a directory and returns it (olmtest.ExtractLayer).
func extractCatalogLayer(t *testing.T, reg *testenv.Registry, d name.Digest) string {
	t.Helper()
	return olmtest.ExtractLayer(t, d.String(), reg.Options()...)
}
