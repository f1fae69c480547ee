package forge_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		url                string
		kind, api, repo    string
		wantErr            string // substring of the error, "" for none
		wantErrNotContains string
	}{
		{url: "https://github.com/acme/catalog.git", kind: "github", api: "https://api.github.com", repo: "acme/catalog"},
		{url: "https://github.com/acme/catalog", kind: "github", api: "https://api.github.com", repo: "acme/catalog"},
		{url: "git@github.com:acme/catalog.git", kind: "github", api: "https://api.github.com", repo: "acme/catalog"},
		{url: "ssh://git@github.com/acme/catalog.git", kind: "github", api: "https://api.github.com", repo: "acme/catalog"},
		{url: "https://x-access-token:s3cr3t@github.com/acme/catalog.git", kind: "github", api: "https://api.github.com", repo: "acme/catalog"},
		{url: "https://gitlab.com/platform/operators/catalog.git", kind: "gitlab", api: "https://gitlab.com/api/v4", repo: "platform/operators/catalog"},
		{url: "git@gitlab.example.com:team/catalog.git", kind: "gitlab", api: "https://gitlab.example.com/api/v4", repo: "team/catalog"},
		{url: "ssh://git@gitlab.example.com:2222/team/catalog.git", kind: "gitlab", api: "https://gitlab.example.com/api/v4", repo: "team/catalog"},
		{url: "https://gitlab.example.com:8443/team/catalog", kind: "gitlab", api: "https://gitlab.example.com:8443/api/v4", repo: "team/catalog"},
		{url: "https://codeberg.org/acme/catalog.git", kind: "gitea", api: "https://codeberg.org/api/v1", repo: "acme/catalog"},
		{url: "https://gitea.example.com/acme/catalog.git", kind: "gitea", api: "https://gitea.example.com/api/v1", repo: "acme/catalog"},
		{url: "http://forgejo.local:3000/acme/catalog.git", kind: "gitea", api: "http://forgejo.local:3000/api/v1", repo: "acme/catalog"},
		{url: "https://github.example.com/acme/catalog.git", wantErr: "--forge github"},
		{url: "https://git.example.com/acme/catalog.git", wantErr: "set --forge"},
		{url: "http://127.0.0.1:3000/acme/catalog.git", wantErr: "set --forge"},
		{url: "https://user:s3cr3t@git.example.com/acme/catalog.git", wantErr: "set --forge", wantErrNotContains: "s3cr3t"},
		{url: "https://github.com/catalog", wantErr: "OWNER/NAME"},
		{url: "ftp://github.com/acme/catalog", wantErr: "scheme ftp"},
		{url: "/srv/git/catalog.git", wantErr: "not a Git URL"},
		{url: "https://user:s3cr3t@github.com/x", wantErr: "OWNER/NAME", wantErrNotContains: "s3cr3t"},
	} {
		kind, api, repo, err := forge.Detect(tc.url)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Detect(%q) = %v, want an error containing %q", tc.url, err, tc.wantErr)
			}
			if err != nil && tc.wantErrNotContains != "" && strings.Contains(err.Error(), tc.wantErrNotContains) {
				t.Errorf("Detect(%q): error %q shows the credential", tc.url, err)
			}
			continue
		}
		if err != nil || kind != tc.kind || api != tc.api || repo != tc.repo {
			t.Errorf("Detect(%q) = %q, %q, %q, %v; want %q, %q, %q", tc.url, kind, api, repo, err, tc.kind, tc.api, tc.repo)
		}
	}
}

func TestNewDerives(t *testing.T) {
	for _, tc := range []struct {
		o          forge.Options
		kind, repo string
	}{
		{forge.Options{CatalogURL: "https://github.com/acme/catalog.git", Token: "t"}, "github", "acme/catalog"},
		{forge.Options{Kind: "github", CatalogURL: "https://ghe.example.com/acme/catalog.git", Token: "t"}, "github", "acme/catalog"},
		{forge.Options{Kind: "Forgejo", CatalogURL: "http://127.0.0.1:3000/acme/catalog.git", Token: "t\n"}, "gitea", "acme/catalog"},
		{forge.Options{Kind: "gitlab", APIURL: "https://git.example.com/api/v4", Repo: "a/b/c", Token: "t"}, "gitlab", "a/b/c"},
		{forge.Options{CatalogURL: "https://github.com/acme/catalog.git", Repo: "acme/other", Token: "t"}, "github", "acme/other"},
	} {
		f, err := forge.New(tc.o)
		if err != nil {
			t.Errorf("New(%+v): %v", tc.o, err)
			continue
		}
		if f.Kind() != tc.kind || f.Repo() != tc.repo {
			t.Errorf("New(%+v) = %s %s, want %s %s", tc.o, f.Kind(), f.Repo(), tc.kind, tc.repo)
		}
	}
}

func TestNewBadInput(t *testing.T) {
	const secret = "ghp_s3cr3tTOKENvalue"
	for _, tc := range []struct {
		name string
		o    forge.Options
		want []string // substrings of the error
	}{
		{"unknown forge", forge.Options{Kind: "bitbucket", CatalogURL: "https://github.com/a/b", Token: secret}, []string{"--forge", "bitbucket", "github, gitlab or gitea"}},
		{"undetectable", forge.Options{CatalogURL: "https://git.example.com/a/b.git", Token: secret}, []string{"--forge", "git.example.com"}},
		{"nothing to detect from", forge.Options{Token: secret}, []string{"--forge", "github|gitlab|gitea"}},
		{"no api url", forge.Options{Kind: "gitlab", Repo: "a/b", Token: secret}, []string{"--forge-api-url", "/api/v4"}},
		{"api url not http", forge.Options{Kind: "gitlab", APIURL: "gitlab.example.com/api/v4", Repo: "a/b", Token: secret}, []string{"--forge-api-url", "http(s)"}},
		{"api url with credentials", forge.Options{Kind: "gitlab", APIURL: "https://me:" + secret + "@gitlab.example.com/api/v4", Repo: "a/b", Token: secret}, []string{"--forge-api-url", "--forge-token"}},
		{"gitea api url without /api/v1", forge.Options{Kind: "gitea", APIURL: "https://gitea.example.com", Repo: "a/b", Token: secret}, []string{"--forge-api-url", "/api/v1"}},
		{"no repo", forge.Options{Kind: "github", APIURL: "https://api.github.com", Token: secret}, []string{"--forge-repo", "owner/name"}},
		{"repo too deep for github", forge.Options{Kind: "github", APIURL: "https://api.github.com", Repo: "a/b/c", Token: secret}, []string{"--forge-repo", "a/b/c"}},
		{"repo with a space", forge.Options{Kind: "gitlab", APIURL: "https://gitlab.com/api/v4", Repo: "a/b c", Token: secret}, []string{"--forge-repo"}},
		{"repo dot-dot", forge.Options{Kind: "gitea", APIURL: "https://gitea.example.com/api/v1", Repo: "../b", Token: secret}, []string{"--forge-repo"}},
		{"no token", forge.Options{CatalogURL: "https://github.com/a/b"}, []string{"--forge-token", "PUBLISH_FORGE_TOKEN"}},
		{"token with a newline inside", forge.Options{CatalogURL: "https://github.com/a/b", Token: "ghp_one\nghp_" + secret}, []string{"--forge-token", "white space"}},
		{"bad CA bundle", forge.Options{CatalogURL: "https://github.com/a/b", Token: secret, CABundle: []byte("not pem")}, []string{"CA bundle", "PEM"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := forge.New(tc.o)
			if err == nil {
				t.Fatalf("New = %v, want an error", f)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
}

func TestPermissionErrorText(t *testing.T) {
	e := &forge.PermissionError{Kind: "github", Repo: "a/b", Op: "create pull request", Need: "Pull requests: write", Status: 403, Message: "Resource not accessible by personal access token"}
	for _, w := range []string{"github a/b", "create pull request", "--forge-token", "Pull requests: write", "HTTP 403", "Resource not accessible"} {
		if !strings.Contains(e.Error(), w) {
			t.Errorf("%q does not say %q", e.Error(), w)
		}
	}
}

func TestAutoMergeBadMethod(t *testing.T) {
	gh := forgetest.NewGitHub(t, "acme/catalog")
	f := newGitHub(t, gh)
	err := f.AutoMerge(context.Background(), &forge.PullRequest{Number: 1}, "fast-forward")
	if err == nil || !strings.Contains(err.Error(), "merge, squash or rebase") || errors.Is(err, forge.ErrAutoMergeUnsupported) {
		t.Errorf("AutoMerge(fast-forward) = %v", err)
	}
	if n := len(gh.Requests()); n != 0 {
		t.Errorf("%d requests sent for a bad method", n)
	}
}

func TestOptionsHideToken(t *testing.T) {
	o := forge.Options{Kind: "github", Token: "ghp_s3cr3t", CatalogURL: "https://me:pw123@github.com/a/b.git"}
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), fmt.Sprintf("%v", &o)} {
		if strings.Contains(s, "ghp_s3cr3t") || strings.Contains(s, "pw123") {
			t.Errorf("%s shows a secret", s)
		}
	}
}

// A self-hosted forge with its own CA: CABundle makes its certificate
// trusted; without it the TLS handshake fails.
func TestCABundle(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":1,"full_name":"a/b","permissions":{"push":true,"pull":true}}`))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, tc := range []struct {
		ca   []byte
		fail bool
	}{{ca, false}, {nil, true}} {
		f, err := forge.New(forge.Options{Kind: "github", APIURL: srv.URL + "/api/v3", Repo: "a/b", Token: "token-for-the-ca-test", CABundle: tc.ca})
		if err != nil {
			t.Fatal(err)
		}
		err = f.Check(context.Background())
		if (err != nil) != tc.fail {
			t.Errorf("Check with CA bundle %v: %v", tc.ca != nil, err)
		}
		if err != nil && !strings.Contains(err.Error(), "certificate") {
			t.Errorf("Check without the CA: %v, want a certificate error", err)
		}
	}
}
