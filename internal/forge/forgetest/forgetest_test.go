package forgetest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/operator-publish/publish/internal/forge/forgetest"
)

// recorder is a testing.TB whose Errorf is recorded instead of failing, so
// a test can see that a fake fails the test of a bad request.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func call(t *testing.T, method, url string, header map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &a.body)
	return a
}

func ghHeaders(token string) map[string]string {
	return map[string]string{
		"Authorization": "Bearer " + token, "Accept": "application/vnd.github+json",
		"X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json",
	}
}

func TestGitHubContract(t *testing.T) {
	for _, tc := range []struct {
		name         string
		readOnly     bool
		method, path string
		header       func(h map[string]string)
		body         string
		status       int
		wantInBody   string
		wantTestFail bool // the fake must report the request as outside the contract
	}{
		{name: "create", method: "POST", path: "/repos/acme/catalog/pulls", body: `{"title":"t","head":"publish/c1","base":"main","body":"b"}`, status: 201, wantInBody: `"number":1`},
		{name: "duplicate", method: "POST", path: "/repos/acme/catalog/pulls", body: `{"title":"t","head":"publish/c1","base":"main"}`, status: 422, wantInBody: "A pull request already exists for acme:publish/c1."},
		{name: "body over 65536 characters", method: "POST", path: "/repos/acme/catalog/pulls", body: `{"title":"t","head":"publish/c2","base":"main","body":"` + strings.Repeat("é", 65537) + `"}`, status: 422, wantInBody: "maximum is 65536 characters"},
		{name: "read-only token", readOnly: true, method: "POST", path: "/repos/acme/catalog/pulls", body: `{"title":"t","head":"publish/c1","base":"main"}`, status: 403, wantInBody: "Resource not accessible"},
		{name: "bad token", method: "GET", path: "/repos/acme/catalog/pulls", header: func(h map[string]string) { h["Authorization"] = "Bearer nope" }, status: 401, wantInBody: "Bad credentials"},
		{name: "other repository", method: "GET", path: "/repos/acme/other/pulls", status: 404, wantInBody: "Not Found"},
		{name: "missing title", method: "POST", path: "/repos/acme/catalog/pulls", body: `{"head":"publish/c1","base":"main"}`, status: 422, wantTestFail: true},
		{name: "title not a string", method: "POST", path: "/repos/acme/catalog/pulls", body: `{"title":1,"head":"publish/c1","base":"main"}`, status: 422, wantTestFail: true},
		{name: "malformed JSON", method: "PATCH", path: "/repos/acme/catalog/pulls/1", body: `{"title":`, status: 400, wantTestFail: true},
		{name: "unknown field", method: "PATCH", path: "/repos/acme/catalog/pulls/1", body: `{"labels":["x"]}`, status: 422, wantTestFail: true},
		{name: "no API version", method: "GET", path: "/repos/acme/catalog/pulls", header: func(h map[string]string) { delete(h, "X-GitHub-Api-Version") }, status: 400, wantTestFail: true},
		{name: "wrong Accept", method: "GET", path: "/repos/acme/catalog/pulls", header: func(h map[string]string) { h["Accept"] = "text/html" }, status: 415, wantTestFail: true},
		{name: "unknown endpoint", method: "GET", path: "/repos/acme/catalog/branches", status: 404, wantTestFail: true},
		{name: "wrong method", method: "DELETE", path: "/repos/acme/catalog/pulls/1", status: 404, wantTestFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			var opts []forgetest.Option
			if tc.readOnly {
				opts = append(opts, forgetest.ReadOnly())
			}
			gh := forgetest.NewGitHub(rec, "acme/catalog", opts...)
			if tc.name != "create" && !tc.readOnly {
				a := call(t, "POST", gh.URL()+"/repos/acme/catalog/pulls", ghHeaders(gh.Token()), `{"title":"t","head":"publish/c1","base":"main"}`)
				if a.status != 201 {
					t.Fatalf("setup: %d %s", a.status, a.raw)
				}
			}
			h := ghHeaders(gh.Token())
			if tc.header != nil {
				tc.header(h)
			}
			a := call(t, tc.method, gh.URL()+tc.path, h, tc.body)
			if a.status != tc.status || !strings.Contains(a.raw, tc.wantInBody) {
				t.Errorf("%s %s = %d %s; want %d with %q", tc.method, tc.path, a.status, a.raw, tc.status, tc.wantInBody)
			}
			if a.status >= 400 && a.body["message"] == nil {
				t.Errorf("error answer %s has no message (GitHub's error shape)", a.raw)
			}
			if tc.readOnly && a.header.Get("X-Accepted-GitHub-Permissions") != "pull_requests=write" {
				t.Errorf("X-Accepted-GitHub-Permissions = %q", a.header.Get("X-Accepted-GitHub-Permissions"))
			}
			if errs := rec.errors(); (len(errs) > 0) != tc.wantTestFail {
				t.Errorf("fake reported %q; want a report: %v", errs, tc.wantTestFail)
			}
		})
	}
}

func TestGitLabContract(t *testing.T) {
	const pulls = "/projects/platform%2Fcatalog/merge_requests"
	for _, tc := range []struct {
		name         string
		readOnly     bool
		method, path string
		token        string
		body         string
		status       int
		wantInBody   string
		wantTestFail bool
	}{
		{name: "create", method: "POST", path: pulls, body: `{"title":"t","source_branch":"publish/c1","target_branch":"main","labels":"a,b"}`, status: 201, wantInBody: `"labels":["a","b"]`},
		{name: "duplicate", method: "POST", path: pulls, body: `{"title":"t","source_branch":"publish/c1","target_branch":"main"}`, status: 409, wantInBody: "Another open merge request already exists for this source branch: !1"},
		{name: "list by branch", method: "GET", path: pulls + "?state=opened&source_branch=publish%2Fc1", status: 200, wantInBody: `"iid":1`},
		{name: "project by ID", method: "GET", path: "/projects/42/merge_requests/1", status: 200, wantInBody: `"iid":1`},
		{name: "add_labels", method: "PUT", path: pulls + "/1", body: `{"add_labels":"x"}`, status: 200, wantInBody: `"labels":["x"]`},
		{name: "note", method: "POST", path: pulls + "/1/notes", body: `{"body":"hi"}`, status: 201, wantInBody: `"noteable_type":"MergeRequest"`},
		{name: "read-only token", readOnly: true, method: "POST", path: pulls, body: `{"title":"t","source_branch":"publish/c1","target_branch":"main"}`, status: 403, wantInBody: "403 Forbidden"},
		{name: "bad token", method: "GET", path: pulls, token: "nope", status: 401, wantInBody: "401 Unauthorized"},
		{name: "other project", method: "GET", path: "/projects/platform%2Fother/merge_requests", status: 404, wantInBody: "Project Not Found"},
		{name: "missing source_branch", method: "POST", path: pulls, body: `{"title":"t","target_branch":"main"}`, status: 400, wantTestFail: true},
		{name: "empty update", method: "PUT", path: pulls + "/1", body: `{}`, status: 400, wantTestFail: true},
		{name: "bad state_event", method: "PUT", path: pulls + "/1", body: `{"state_event":"merge"}`, status: 400, wantTestFail: true},
		{name: "unknown endpoint", method: "GET", path: "/projects/platform%2Fcatalog/repository/branches", status: 404, wantTestFail: true},
		{name: "note without body", method: "POST", path: pulls + "/1/notes", body: `{"body":""}`, status: 400, wantTestFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			var opts []forgetest.Option
			if tc.readOnly {
				opts = append(opts, forgetest.ReadOnly())
			}
			gl := forgetest.NewGitLab(rec, "platform/catalog", opts...)
			h := map[string]string{"PRIVATE-TOKEN": gl.Token(), "Content-Type": "application/json"}
			if tc.name != "create" && !tc.readOnly {
				a := call(t, "POST", gl.URL()+pulls, h, `{"title":"t","source_branch":"publish/c1","target_branch":"main"}`)
				if a.status != 201 {
					t.Fatalf("setup: %d %s", a.status, a.raw)
				}
			}
			if tc.token != "" {
				h["PRIVATE-TOKEN"] = tc.token
			}
			a := call(t, tc.method, gl.URL()+tc.path, h, tc.body)
			if a.status != tc.status || !strings.Contains(a.raw, tc.wantInBody) {
				t.Errorf("%s %s = %d %s; want %d with %q", tc.method, tc.path, a.status, a.raw, tc.status, tc.wantInBody)
			}
			if errs := rec.errors(); (len(errs) > 0) != tc.wantTestFail {
				t.Errorf("fake reported %q; want a report: %v", errs, tc.wantTestFail)
			}
		})
	}
}
