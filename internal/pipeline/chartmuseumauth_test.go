package pipeline

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"helm.sh/helm/v4/pkg/getter"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/operator-publish/publish/internal/chartmuseum"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestChartsChartMuseumAuth: the ChartMuseum way against real
// ChartMuseums that want credentials. One started with basic auth
// (--basic-auth-user/--basic-auth-pass) refuses the upload without
// credentials and with a wrong password (the run stops, nothing is
// committed, the error names --chart-repo-username and never prints the
// password) and accepts it with --chart-repo-username/--chart-repo-password;
// the Helm SDK's repository client, with the same credentials as `helm
// repo add --username --password`, reads its index.yaml and pulls the
// chart, and without them is refused. One started with --bearer-auth
// (a JWT its --auth-cert-path verifies) accepts the upload with
// --chart-repo-token.
func TestChartsChartMuseumAuth(t *testing.T) {
	const user, pass = "publisher", "cm-s3cret-pass"
	basic := testenv.ChartMuseum(t, "--basic-auth-user="+user, "--basic-auth-pass="+pass)
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeValues(t)
	e.commit(t, "web")
	ctx := context.Background()
	repoURL := basic.URL + "/public-charts"
	var log bytes.Buffer
	opts := func(auth chartmuseum.Auth) Options {
		o := e.options()
		o.Render.ChartRepo = render.ChartRepoRef{Name: "public-charts", URL: repoURL}
		o.ChartRepoAuth = auth
		o.Log = slog.New(slog.NewTextHandler(&log, nil))
		return o
	}
	for _, auth := range []chartmuseum.Auth{{}, {Username: user, Password: "wrong-" + pass}} {
		_, err := Run(ctx, opts(auth))
		if err == nil || !errors.Is(err, chartmuseum.ErrUnauthorized) || !strings.Contains(err.Error(), "--chart-repo-username") || !strings.Contains(err.Error(), "nothing committed") {
			t.Fatalf("run with %q: %v; want the refusal naming --chart-repo-username", auth.Username, err)
		}
		if strings.Contains(err.Error(), pass) || strings.Contains(log.String(), pass) {
			t.Errorf("the password is in the error or the log: %v\n%s", err, log.String())
		}
	}
	if r, err := git.PlainOpen(e.catalog); err != nil {
		t.Fatal(err)
	} else if _, err := r.Reference("refs/heads/main", true); err == nil {
		t.Fatal("a refused upload committed to the catalog")
	}
	if _, err := Run(ctx, opts(chartmuseum.Auth{Username: user, Password: pass})); err != nil {
		t.Fatalf("run with --chart-repo-username/--chart-repo-password: %v", err)
	}
	if strings.Contains(log.String(), pass) {
		t.Errorf("the password is in the log:\n%s", log.String())
	}

	// As a user would: helm repo add --username --password, helm pull.
	if _, err := helmRepoIndex(t, repoURL, "", ""); err == nil {
		t.Error("the Helm SDK read the index.yaml of a ChartMuseum with basic auth without credentials")
	}
	idx, err := helmRepoIndex(t, repoURL, user, pass)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := idx.Get("web", "1.0.0")
	if err != nil {
		t.Fatalf("index.yaml: %v", err)
	}
	u, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		t.Fatal(err)
	}
	g, _ := getter.NewHTTPGetter(getter.WithURL(repoURL), getter.WithBasicAuth(user, pass)) // helm pull sends them to the repository's host
	data, err := g.Get(u)
	if err != nil {
		t.Fatalf("helm pulls %s: %v", u, err)
	}
	if !bytes.Equal(data.Bytes(), e.archives["web 1.0.0"]) {
		t.Error("the web 1.0.0 the repository serves is not the archive published")
	}

	// A bearer token (ChartMuseum's --bearer-auth).
	key, certPath := bearerKey(t)
	bearer := testenv.ChartMuseum(t, "--bearer-auth", "--auth-realm=https://auth.example.com/token", "--auth-service=charts.example.com", "--auth-cert-path="+certPath)
	repoURL = bearer.URL + "/public-charts"
	e.catalog = t.TempDir() // a catalog that has not published web yet
	if _, err := git.PlainInit(e.catalog, true); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, opts(chartmuseum.Auth{Username: user, Password: pass})); !errors.Is(err, chartmuseum.ErrUnauthorized) {
		t.Fatalf("run with a password where a token is wanted: %v", err)
	}
	token := bearerToken(t, key, "public-charts")
	if _, err := Run(ctx, opts(chartmuseum.Auth{Token: token})); err != nil {
		t.Fatalf("run with --chart-repo-token: %v", err)
	}
	if strings.Contains(log.String(), token) {
		t.Error("the token is in the log")
	}
	digest, err := chartmuseum.Repo{URL: repoURL, Auth: chartmuseum.Auth{Token: token}}.Digest(ctx, "web", "1.0.0")
	sum := sha256.Sum256(e.archives["web 1.0.0"])
	if err != nil || digest != hex.EncodeToString(sum[:]) {
		t.Errorf("the token's ChartMuseum lists web 1.0.0 with digest %q (%v), want the archive's", digest, err)
	}
}

// helmRepoIndex reads the index.yaml of the repository at url with the
// Helm SDK's repository client and the credentials of `helm repo add
// --username --password` ("" for none).
func helmRepoIndex(t *testing.T, url, user, pass string) (*repo.IndexFile, error) {
	t.Helper()
	r, err := repo.NewChartRepository(&repo.Entry{Name: "public-charts", URL: url, Username: user, Password: pass},
		getter.Providers{{Schemes: []string{"http", "https"}, New: getter.NewHTTPGetter}})
	if err != nil {
		t.Fatal(err)
	}
	r.CachePath = t.TempDir()
	p, err := r.DownloadIndexFile()
	if err != nil {
		return nil, err
	}
	return repo.LoadIndexFile(p)
}

// bearerKey is an RSA key whose public half ChartMuseum's --auth-cert-path
// reads (a PEM file; its path is returned).
func bearerKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "auth.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, p
}

// bearerToken is the JWT (RS256) an authorization server gives for
// ChartMuseum's --bearer-auth: the pull and push actions on the
// repository (github.com/chartmuseum/auth's claims: access entries of
// type artifact-repository).
func bearerToken(t *testing.T, key *rsa.PrivateKey, repository string) string {
	t.Helper()
	enc := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(data)
	}
	claims := map[string]any{"access": []map[string]any{{"type": "artifact-repository", "name": repository, "actions": []string{"pull", "push"}}}}
	signed := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// TestChartsPackagePushChartMuseum: on the air-gapped side, `publish push
// --catalog` into a cluster whose charts go to an existing ChartRepo
// (clusters.<cluster>.chartRepo) uploads each chart version of the archive
// the cluster lists (an OCI chart and a classic repository's chart, from
// `publish package`) to a real ChartMuseum that wants basic auth, with
// --chart-repo-username/--chart-repo-password; the catalog holds neither
// chart sources nor a ChartRepo for them. As a user would, the Helm SDK's
// repository client reads the repository's index.yaml and pulls each
// chart: the archive packaged.
func TestChartsPackagePushChartMuseum(t *testing.T) {
	const user, pass = "site-publisher", "site-cm-pass"
	cm := testenv.ChartMuseum(t, "--basic-auth-user="+user, "--basic-auth-pass="+pass)
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeChart(t, "cron", "0.1.0", "artifact: "+e.repoURL+"\n  chart: cron", e.reg.Ref("src/cron/job:1"))
	e.writeValues(t)
	e.commit(t, "two charts")
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "charts.tgz")
	cred := mirror.Credentials{Username: e.reg.Username, Password: e.reg.Password}
	if _, err := Package(ctx, PackageOptions{Source: e.source, Output: out, Mirror: mirror.Options{CAFile: e.reg.CAFile, Src: cred}}); err != nil {
		t.Fatalf("package: %v", err)
	}

	repoURL := cm.URL + "/public-charts"
	o := e.options()
	o.Source = ""
	o.Render.ChartRepo = render.ChartRepoRef{Name: "public-charts", URL: repoURL}
	if _, err := Push(ctx, PushOptions{Archive: out, Mirror: e.mirrorOptions(), Options: o}); !errors.Is(err, chartmuseum.ErrUnauthorized) {
		t.Fatalf("push --catalog without --chart-repo-username: %v, want the ChartMuseum's refusal", err)
	}
	o.ChartRepoAuth = chartmuseum.Auth{Username: user, Password: pass}
	if _, err := Push(ctx, PushOptions{Archive: out, Mirror: e.mirrorOptions(), Options: o}); err != nil {
		t.Fatalf("push --catalog: %v", err)
	}
	if st := e.state(t); st["web"].Type != "chart" || st["cron"].Type != "chart" {
		t.Fatalf("state: %+v", st)
	}
	if e.catalogFile(t, "charts/global/web/1.0.0/Chart.yaml") != "" || e.catalogFile(t, "rendered/global/web/chartrepo_web.yaml") != "" {
		t.Error("the ChartMuseum way wrote chart sources or a ChartRepo to the catalog")
	}
	idx, err := helmRepoIndex(t, repoURL, user, pass)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := getter.NewHTTPGetter(getter.WithURL(repoURL), getter.WithBasicAuth(user, pass))
	for _, c := range []struct{ name, version string }{{"web", "1.0.0"}, {"cron", "0.1.0"}} {
		cv, err := idx.Get(c.name, c.version)
		if err != nil {
			t.Fatalf("index.yaml: %v", err)
		}
		u, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
		if err != nil {
			t.Fatal(err)
		}
		data, err := g.Get(u)
		if err != nil {
			t.Fatalf("helm pulls %s: %v", u, err)
		}
		if !bytes.Equal(data.Bytes(), e.archives[c.name+" "+c.version]) {
			t.Errorf("the %s %s the repository serves is not the archive packaged", c.name, c.version)
		}
	}
}
