package chartmuseum

import "testing"

// TestAPIURL: the API of a repository served per path is /api/<path>/charts,
// of a server's root repository /api/charts; a URL that is not http(s)
// with a host is refused.
func TestAPIURL(t *testing.T) {
	for _, tc := range []struct{ repo, p, want string }{
		{"http://captain-chartmuseum:8080/public-charts", "", "http://captain-chartmuseum:8080/api/public-charts/charts"},
		{"https://cm.example.com/org/charts/", "/web/1.2.3", "https://cm.example.com/api/org/charts/charts/web/1.2.3"},
		{"http://127.0.0.1:8080", "", "http://127.0.0.1:8080/api/charts"},
	} {
		got, err := Repo{URL: tc.repo}.apiURL(tc.p)
		if err != nil || got != tc.want {
			t.Errorf("%s %s: %q, %v; want %q", tc.repo, tc.p, got, err, tc.want)
		}
	}
	for _, bad := range []string{"ftp://cm.example.com/x", "cm.example.com/x", "http:///x"} {
		if _, err := (Repo{URL: bad}).apiURL(""); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
