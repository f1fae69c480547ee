package pipeline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/target"
)

// recordingKind is the bundle kind, recording each bundle as its Read
// leaves it (read, linted and made slim or condensed, or whole): what the
// lint engine and the target then get.
type recordingKind struct {
	kind.Kind
	mu   sync.Mutex
	read map[string]*bundle.Bundle // by spec.artifact
}

func (k *recordingKind) Read(ctx context.Context, env kind.Env, vs []*model.Version) error {
	err := k.Kind.Read(ctx, env, vs)
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, v := range vs {
		if b := kind.BundleOf(v); b != nil {
			k.read[v.Manifest.Spec.Artifact] = b
		}
	}
	return err
}

// TestRunOLMCondensesBundles: with the default bundle format the olm
// target's bundles are condensed as soon as they are read (their
// olm.bundle kept, their objects and install strategy dropped), with
// olm.bundle.object they stay whole; both catalogs list both versions. A
// condensed bundle is kept in the lint cache as it is and read back
// condensed.
func TestRunOLMCondensesBundles(t *testing.T) {
	bk, ok := kind.Lookup(manifest.TypeBundle)
	if !ok {
		t.Fatal("no bundle kind")
	}
	for _, tc := range []struct {
		format olm.Format
		whole  bool
	}{{"", false}, {olm.FormatBundleObject, true}} {
		t.Run("format="+string(tc.format), func(t *testing.T) {
			f := newFixture(t)
			pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
			pushRandom(t, f.src+"/operator-framework/olm:v0.38.0")
			rk := &recordingKind{Kind: bk, read: map[string]*bundle.Bundle{}}
			defer kind.Register(rk)()
			var log bytes.Buffer
			o := f.olmOptions("0", nil, &log)
			o.LintCache = t.TempDir()
			s := o.TargetSettings.(target.OLMOptions)
			s.BundleFormat = tc.format
			o.TargetSettings = s
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatalf("run: %v\n%s", err, log.String())
			}
			if len(rk.read) != 2 {
				t.Fatalf("%d bundles read, want 2", len(rk.read))
			}
			for ref, b := range rk.read {
				objects := len(b.Loaded.Objects)
				deployments := len(b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs)
				condensed := b.Catalog != nil
				if tc.whole && (objects == 0 || deployments == 0 || condensed) {
					t.Errorf("%s: %d objects, %d deployments, condensed %v: want it whole", ref, objects, deployments, condensed)
				}
				if !tc.whole && (objects != 0 || deployments != 0 || !condensed || b.CSV.Spec.Description == "") {
					t.Errorf("%s: %d objects, %d deployments, condensed %v, description %q: want it condensed", ref, objects, deployments, condensed, b.CSV.Spec.Description)
				}
			}
			pkgs, imgs := f.catalogBundles(t)
			if len(pkgs) != 1 || len(imgs) != 2 || !strings.HasPrefix(imgs[0], "tiny.v1.0.0="+f.dst+"/mirror/tiny/bundle@sha256:") {
				t.Errorf("catalog: packages %v bundles %v", pkgs, imgs)
			}
			if tc.whole {
				return
			}
			entries, _ := filepath.Glob(filepath.Join(o.LintCache, "*", "*.json"))
			for _, e := range entries {
				if data, _ := os.ReadFile(e); !bytes.Contains(data, []byte(`"Catalog":{"bundle":`)) {
					t.Errorf("lint cache entry %s holds no condensed bundle", e)
				}
			}
			if len(entries) != 2 {
				t.Errorf("%d lint cache entries, want 2", len(entries))
			}
			// A run into a new catalog repo reads both versions again, from
			// the lint cache the first run filled: condensed bundles, the
			// same catalog.
			f.catalog = t.TempDir()
			if _, err := git.PlainInit(f.catalog, true); err != nil {
				t.Fatal(err)
			}
			rk.read = map[string]*bundle.Bundle{}
			o.Catalog = catalogOpts(f.catalog)
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatalf("run from the lint cache: %v\n%s", err, log.String())
			}
			if len(rk.read) != 2 {
				t.Fatalf("%d bundles read from the lint cache, want 2", len(rk.read))
			}
			for ref, b := range rk.read {
				if b.Catalog == nil || len(b.Loaded.Objects) != 0 {
					t.Errorf("%s from the lint cache: not condensed", ref)
				}
			}
			if pkgs2, imgs2 := f.catalogBundles(t); strings.Join(pkgs2, ",") != strings.Join(pkgs, ",") || strings.Join(imgs2, ",") != strings.Join(imgs, ",") {
				t.Errorf("catalog from the lint cache: packages %v bundles %v, want %v %v", pkgs2, imgs2, pkgs, imgs)
			}
		})
	}
}
