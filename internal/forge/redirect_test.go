package forge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
)

// A forge API that redirects to another host must not get the token sent
// there: GitHub's token rides on the transport (go-github) and GitLab's in
// PRIVATE-TOKEN, which net/http does not strip on a redirect, so every
// forge client refuses a redirect to another host.
func TestForgeTokenNeverFollowsARedirectToAnotherHost(t *testing.T) {
	const token = "s3cret-forge-token"
	var (
		mu   sync.Mutex
		seen []string
	)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for k, vs := range r.Header {
			for _, v := range vs {
				seen = append(seen, k+": "+v)
			}
		}
		mu.Unlock()
		http.Error(w, "{}", http.StatusNotFound)
	}))
	defer attacker.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, attacker.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()

	for kind, api := range map[string]string{
		forge.KindGitHub: redirecting.URL + "/api/v3",
		forge.KindGitLab: redirecting.URL + "/api/v4",
		forge.KindGitea:  redirecting.URL + "/api/v1",
	} {
		t.Run(kind, func(t *testing.T) {
			fg, err := forge.New(forge.Options{Kind: kind, APIURL: api, Repo: "acme/catalog", Token: token, HTTPClient: redirecting.Client()})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			cerr := fg.Check(ctx)
			_, ferr := fg.Find(ctx, "publish/x", "main")
			if cerr == nil && ferr == nil {
				t.Errorf("a redirect to another host was followed without an error")
			}
			for _, err := range []error{cerr, ferr} {
				if err != nil && !strings.Contains(err.Error(), "redirect") {
					t.Errorf("the error does not say redirect: %v", err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, h := range seen {
				if strings.Contains(h, token) {
					t.Errorf("the other host received the token: %s", h)
				}
			}
			seen = nil
		})
	}
}

// The token never crosses plain HTTP to another machine.
func TestForgeTokenNotOverPlainHTTP(t *testing.T) {
	_, err := forge.New(forge.Options{Kind: forge.KindGitea, APIURL: "http://gitea.example.com/api/v1", Repo: "acme/catalog", Token: "s3cret"})
	if err == nil || !strings.Contains(err.Error(), "in clear") {
		t.Errorf("http:// forge API on another host: %v", err)
	}
	if _, err := forge.New(forge.Options{Kind: forge.KindGitea, APIURL: "http://127.0.0.1:3000/api/v1", Repo: "acme/catalog", Token: "s3cret"}); err != nil {
		t.Errorf("http:// forge API on loopback: %v", err)
	}
}
