package kind

import (
	"net/http"
	"path/filepath"
	"testing"

	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// TestChartRepoCredentials: the entry of Helm's repository config whose
// URL is the repository's gives its credentials; they go to the
// repository's scheme and host only (an archive URL on another host gets
// none) unless pass_credentials_all; no file, or no entry, gives none.
func TestChartRepoCredentials(t *testing.T) {
	config := filepath.Join(t.TempDir(), "repositories.yaml")
	t.Setenv(HelmRepositoryConfigEnv, config)
	if c, err := chartRepoCredentials("https://charts.example.com/stable"); c != nil || err != nil {
		t.Fatalf("no file: %+v, %v", c, err)
	}
	f := repo.NewFile()
	f.Update(&repo.Entry{Name: "a", URL: "https://charts.example.com/stable/", Username: "u", Password: "p"},
		&repo.Entry{Name: "b", URL: "https://all.example.com", Username: "v", Password: "q", PassCredentialsAll: true})
	if err := f.WriteFile(config, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ repoURL, get, want string }{
		{"https://charts.example.com/stable", "https://charts.example.com/stable/index.yaml", "u"},
		{"https://charts.example.com/stable", "https://cdn.example.com/web-1.0.0.tgz", ""},
		{"https://charts.example.com/stable", "http://charts.example.com/stable/index.yaml", ""},
		{"https://all.example.com", "https://cdn.example.com/web-1.0.0.tgz", "v"},
		{"https://charts.example.com/other", "https://charts.example.com/other/index.yaml", ""},
	} {
		c, err := chartRepoCredentials(tc.repoURL)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, tc.get, nil)
		c.authorize(req)
		if got, _, _ := req.BasicAuth(); got != tc.want {
			t.Errorf("%s, GET %s: user %q, want %q", tc.repoURL, tc.get, got, tc.want)
		}
	}
}
