package pipeline

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/operator-publish/publish/internal/target"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"sigs.k8s.io/yaml"
)

// TestRunOLMTargetSigned: with a signing key, publish
// run signs the olm catalog image it pushed: the digest the CatalogSource
// names has a Sigstore bundle referrer, and the log says so.
func TestRunOLMTargetSigned(t *testing.T) {
	f := newFixture(t)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	pushRandom(t, f.src+"/operator-framework/olm:v0.38.0")
	priv, _, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sign.LoadKey(priv, nil, "key", "--cosign-key-password")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := Run(context.Background(), Options{
		Log: slog.New(slog.NewTextHandler(&log, nil)), Source: f.source, Cluster: "edge", Target: target.OLM,
		Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog),
		TargetSettings: target.OLMOptions{BaseImage: f.src + "/operator-framework/opm:v1.73.0", Images: []string{f.src + "/operator-framework/olm:v0.38.0"}},
		Sign:           sign.ImageSigner{Key: key},
	}); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	var cs struct {
		Spec struct{ Image string } `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(f.catalogFile(t, "rendered/edge/"+target.CatalogSourceFile)), &cs); err != nil {
		t.Fatal(err)
	}
	d, ok := mustRef(t, cs.Spec.Image).(name.Digest)
	if !ok {
		t.Fatalf("CatalogSource image %q is not by digest", cs.Spec.Image)
	}
	signed, err := hasBundle(context.Background(), d, nil)
	if err != nil || !signed {
		t.Errorf("catalog image %s: signed %v, %v", cs.Spec.Image, signed, err)
	}
	if !strings.Contains(log.String(), "olm: signed the catalog image") {
		t.Errorf("the log does not say the catalog image was signed:\n%s", log.String())
	}
}
