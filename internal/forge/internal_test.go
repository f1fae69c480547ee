package forge

import (
	"net/http"
	"net/url"
	"testing"
)

func TestGitHubGraphQLURL(t *testing.T) {
	for api, want := range map[string]string{
		"https://api.github.com":          "https://api.github.com/graphql",
		"https://api.github.com/":         "https://api.github.com/graphql",
		"https://ghe.example.com/api/v3":  "https://ghe.example.com/api/graphql",
		"https://ghe.example.com/api/v3/": "https://ghe.example.com/api/graphql",
		"http://127.0.0.1:8080/github":    "http://127.0.0.1:8080/github/graphql",
	} {
		u, err := url.Parse(api)
		if err != nil {
			t.Fatal(err)
		}
		f, err := newGitHub(base{kind: KindGitHub, repo: "a/b", token: "token"}, u, http.DefaultClient)
		if err != nil {
			t.Fatal(err)
		}
		g := f.(*gitHub)
		if g.graphqlURL != want {
			t.Errorf("%s: GraphQL at %s, want %s", api, g.graphqlURL, want)
		}
		if p := g.c.BaseURL.Path; p == "" || p[len(p)-1] != '/' {
			t.Errorf("%s: REST base %s has no trailing slash", api, g.c.BaseURL)
		}
	}
}

func TestAcceptedPermissions(t *testing.T) {
	for h, want := range map[string]string{
		"pull_requests=write":                             "Pull requests: write",
		"pull_requests=write; contents=read,issues=write": "Pull requests: write or Contents: read and Issues: write",
		"":  gitHubNeedPR,
		";": gitHubNeedPR,
	} {
		if got := acceptedPermissions(h); got != want {
			t.Errorf("acceptedPermissions(%q) = %q, want %q", h, got, want)
		}
	}
}
