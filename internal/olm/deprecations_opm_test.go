package olm

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/olm/olmtest"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestDeprecatedCorpusOpm keeps a delisted version of a real package of
// the corpus (akka-cluster-operator 0.2.0, between 0.0.1 and 0.2.3) in
// the catalog for its deprecation period, and checks the catalog image
// with the base image's own opm v1.73.0: `opm validate` accepts the
// olm.deprecations, `opm serve` returns the bundle with its deprecation
// over gRPC, and a Subscription-style upgrade from it (the replacement in
// its channel, GetReplacementBundleInPackageChannel, as OLM's catalog
// operator asks) resolves to the next version.
func TestDeprecatedCorpusOpm(t *testing.T) {
	opm := requireOPM(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	ctx := context.Background()
	es := semverCorpus(t, ctx, reg)["akka-cluster-operator"]
	const msg = "akka-cluster-operator 0.2.0 is no longer published: upgrade to 1.0.2, the newest published version"
	var old string
	for i, e := range es {
		if e.Bundle.Version == "0.2.0" {
			es[i].Deprecated, es[i].DelistedSince = msg, time.Date(2026, 11, 2, 8, 30, 0, 0, time.UTC)
			old = e.Bundle.CSVName
		}
	}
	if old == "" {
		t.Fatal("no akka-cluster-operator 0.2.0 in the corpus")
	}
	cfg, err := Build([]Package{{Name: "akka-cluster-operator", Entries: es}}, FormatCSVMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Deprecations) != 1 {
		t.Fatalf("deprecations %+v", cfg.Deprecations)
	}
	files, err := Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := olmtest.PushOPMBase(t, opm, reg.Host+"/operator-framework/opm:v1.73.0", reg.Options()...)
	dst, _ := name.NewTag(reg.Host + "/olm/catalog:deprecated")
	digest, _, err := Push(ctx, base, dst, files, nil, reg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	root := extractCatalogLayer(t, reg, digest)
	own := olmtest.ExtractOPM(t, digest.String(), reg.Options()...)
	env := opmEnv(t, reg)
	runOPM(t, own, env, "validate", filepath.Join(root, ConfigsDir))

	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, _ := olmtest.Serve(t, sctx, own, root)
	channel := ""
	for _, b := range olmtest.Bundles(t, sctx, c) {
		if b.CsvName != old {
			continue
		}
		channel = b.ChannelName
		if b.Deprecation == nil || b.Deprecation.Message != msg {
			t.Errorf("opm serve: %s in channel %s: deprecation %+v, want %q", old, b.ChannelName, b.Deprecation, msg)
		}
	}
	if channel == "" {
		t.Fatalf("opm serve does not list the deprecated %s", old)
	}
	next, err := c.GetReplacementBundleInPackageChannel(sctx, old, "akka-cluster-operator", channel)
	if err != nil || !strings.Contains(next.GetCsvName(), "0.2.3") {
		t.Errorf("upgrade from the deprecated %s in channel %s: %v %v, want the 0.2.3 bundle", old, channel, next.GetCsvName(), err)
	}
}
