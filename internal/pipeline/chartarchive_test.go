package pipeline

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestChartsPackagePush: `publish package` over an OCI chart (with a
// provenance layer) and a classic repository's chart, on a registry that
// wants TLS and a password; `publish verify` reads the archive; `publish
// push --catalog` into the site's registry prefix and an empty catalog
// repo. The archive carries the OCI chart with its source digest, the
// classic one as the OCI chart `publish run` pushes (the same digest), and
// every image they render; at the site the charts have those digests, the
// catalog holds their sources and ChartRepos, and the Helm SDK pulls each
// from the destination by the reference the catalog records, as a user
// would, and finds every image it renders there.
func TestChartsPackagePush(t *testing.T) {
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeChart(t, "cron", "0.1.0", "artifact: "+e.repoURL+"\n  chart: cron", e.reg.Ref("src/cron/job:1"))
	e.writeValues(t)
	e.commit(t, "two charts")
	ctx := context.Background()

	out := filepath.Join(t.TempDir(), "charts.tgz")
	cred := mirror.Credentials{Username: e.reg.Username, Password: e.reg.Password}
	rv := &recordingVerifier{}
	trust := []archive.File{{Path: "policy.json", Data: []byte("{}")}}
	pres, err := Package(ctx, PackageOptions{Source: e.source, Output: out, Mirror: mirror.Options{CAFile: e.reg.CAFile, Src: cred}, Verify: rv, Trust: trust})
	if err != nil {
		t.Fatalf("package: %v", err)
	}
	// The policy checks the OCI chart and every image the charts render
	// or list (the classic repository's chart is in no registry).
	sort.Strings(rv.refs)
	want := []string{e.reg.Ref("src/charts/web:1.0.0"), e.reg.Ref("src/cron/job:1"), e.reg.Ref("src/web/nginx:1"), e.reg.Ref("src/web/nginx:2")}
	if strings.Join(rv.refs, " ") != strings.Join(want, " ") {
		t.Errorf("package verified %v, want %v", rv.refs, want)
	}
	if pres.Versions != 2 {
		t.Errorf("package: %d versions, want 2", pres.Versions)
	}
	vr, err := archive.Verify(out, archive.Limits{}, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	charts := map[string]archive.IndexEntry{}
	for _, im := range vr.Contents.Images {
		if im.Bundle {
			charts[im.Ref] = im
		}
	}
	// The classic repository's chart is named after the repository's
	// host and path (manifest.ChartSource.Reference).
	web, cron := charts[e.reg.Ref("src/charts/web:1.0.0")], charts[strings.TrimPrefix(e.repoURL, "http://")+"/cron:0.1.0"]
	if web.Desc.Digest.String() != e.digests["web 1.0.0"] {
		t.Errorf("web in the archive: %s, want the source's %s (entries %v)", web.Desc.Digest, e.digests["web 1.0.0"], charts)
	}
	if cron.Ref == "" {
		t.Fatalf("the archive carries no cron chart: %v", charts)
	}

	catalog := t.TempDir()
	if _, err := git.PlainInit(catalog, true); err != nil {
		t.Fatal(err)
	}
	e.catalog = catalog
	o := e.options()
	o.Source = ""
	key := chartSigningKey(t)
	o.Sign = sign.ImageSigner{Key: key}
	atSite := &recordingVerifier{}
	trusted := func([]archive.File) (ImageVerifier, []string, error) { return atSite, nil, nil }
	if _, err := Push(ctx, PushOptions{Archive: out, Mirror: e.mirrorOptions(), Options: o, Trust: trusted}); err != nil {
		t.Fatalf("push --catalog: %v", err)
	}
	st := e.state(t)
	webRec, cronRec := st["web"], st["cron"]
	if webRec.Type != "chart" || cronRec.Type != "chart" || len(webRec.Versions) != 1 || len(cronRec.Versions) != 1 {
		t.Fatalf("state: %+v %+v", webRec, cronRec)
	}
	if got := webRec.Versions[0].BundleDigest; got != e.digests["web 1.0.0"] {
		t.Errorf("web's digest at the site %s, want the source's %s", got, e.digests["web 1.0.0"])
	}
	if got := cronRec.Versions[0].BundleDigest; got != cron.Desc.Digest.String() {
		t.Errorf("cron's digest at the site %s, the archive's %s", got, cron.Desc.Digest)
	}
	e.checkDestination(t, webRec, cronRec)
	e.checkCatalog(t, "web", "1.0.0")
	e.checkCatalog(t, "cron", "0.1.0")
	e.helmAsUser(t, webRec, "web", "1.0.0", []string{e.reg.Ref("src/web/nginx:2")})
	e.helmAsUser(t, cronRec, "cron", "0.1.0", []string{e.reg.Ref("src/cron/job:1")})
	e.checkSigned(t, key, webRec, cronRec)
	// At the site the archive's policy checks both charts as pushed (by
	// the references the policy's rules name, read at the destination).
	verified := " " + strings.Join(atSite.refs, " ") + " "
	for _, ref := range []string{web.Ref, cron.Ref} {
		if !strings.Contains(verified, " "+ref+" ") {
			t.Errorf("push did not verify the chart %s at the site: %v", ref, atSite.refs)
		}
	}
}

// TestChartsRunSigned: publish run --cosign-key signs both charts at the
// destination (an OCI chart copied with its digest, a classic one pushed
// as OCI) with a Sigstore bundle referrer by the key; a second run signs
// nothing again.
func TestChartsRunSigned(t *testing.T) {
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeChart(t, "cron", "0.1.0", "artifact: "+e.repoURL+"\n  chart: cron", e.reg.Ref("src/cron/job:1"))
	e.writeValues(t)
	e.commit(t, "two charts")
	key := chartSigningKey(t)
	o := e.options()
	o.Sign = sign.ImageSigner{Key: key}
	var log bytes.Buffer
	o.Log = slog.New(slog.NewTextHandler(&log, nil))
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("run: %v", err)
	}
	st := e.state(t)
	e.checkSigned(t, key, st["web"], st["cron"])
	if !strings.Contains(log.String(), "sign: 2 charts signed at the destination, 0 were signed already") {
		t.Errorf("the log does not say both charts were signed:\n%s", log.String())
	}
}

// chartSigningKey is a new ECDSA P-256 signing key (as cosign
// generate-key-pair makes, without a password).
func chartSigningKey(t *testing.T) *sign.Key {
	t.Helper()
	priv, _, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sign.LoadKey(priv, nil, "key", "--cosign-key-password")
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// checkSigned checks that the first version of each chart record has a
// signature by key at the destination, by the digest the state records.
func (e *chartEnv) checkSigned(t *testing.T, key *sign.Key, recs ...model.ArtifactRecord) {
	t.Helper()
	for _, rec := range recs {
		repo := mustRef(t, rec.Registry+"/"+rec.Repository+":x").Context()
		d := repo.Digest(rec.Versions[0].BundleDigest)
		desc, err := remote.Head(d, e.reg.Options()...)
		if err != nil {
			t.Fatal(err)
		}
		signed, err := key.Signed(context.Background(), repo, *desc, e.reg.Options())
		if err != nil || !signed {
			t.Errorf("chart %s at %s: signed %v, %v", rec.Name, d, signed, err)
		}
	}
}
