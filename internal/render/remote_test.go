package render

import (
	"errors"
	"github.com/operator-publish/publish/internal/checkout"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestBuildFetchesNothingRemote: an overlay (or a base it names) whose
// resources, bases or components are URLs or Git specs is refused before
// kustomize runs, with the kustomization file and the entry, and no
// request reaches the server the entry names.
func TestBuildFetchesNothingRemote(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.String())
		mu.Unlock()
		w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n"))
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct{ file, field, entry string }{
		{"kustomize/clusters/global/kustomization.yaml", "resources", srv.URL + "/cm.yaml"},
		{"kustomize/clusters/global/kustomization.yaml", "resources", srv.URL + "/org/repo//base?ref=v1"},
		{"kustomize/clusters/global/kustomization.yaml", "bases", "git@" + host + ":org/repo.git//base"},
		{"kustomize/clusters/global/kustomization.yaml", "components", "github.com/org/repo//component?ref=main"},
		{"kustomize/clusters/global/kustomization.yaml", "patchesStrategicMerge", srv.URL + "/patch.yaml"},
		{"kustomize/base/kustomization.yaml", "resources", srv.URL + "/nested.yaml"},
	} {
		t.Run(tc.field+" "+tc.entry, func(t *testing.T) {
			root := t.TempDir()
			copyDir(t, "testdata/catalog", root)
			gen, err := Generated("global", Config{}, sample())
			if err != nil {
				t.Fatal(err)
			}
			if err := checkout.Sync(root, []string{GeneratedBase("global")}, gen); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, filepath.FromSlash(tc.file))
			data, _ := os.ReadFile(p)
			if tc.file != "kustomize/clusters/global/kustomization.yaml" {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				data = nil
				ov := filepath.Join(root, "kustomize/clusters/global/kustomization.yaml")
				o, _ := os.ReadFile(ov)
				os.WriteFile(ov, []byte(strings.Replace(string(o), "resources:\n", "resources:\n- ../../base\n", 1)), 0o644)
			}
			if tc.field == "resources" && strings.Contains(string(data), "resources:\n") {
				data = []byte(strings.Replace(string(data), "resources:\n", "resources:\n- "+tc.entry+"\n", 1))
			} else {
				data = append(data, []byte("\n"+tc.field+":\n- "+tc.entry+"\n")...)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Build(mustReadDir(t, root), "global")
			var re *RemoteError
			if !errors.As(err, &re) || re.Path != tc.file || re.Entry != tc.entry || !strings.Contains(err.Error(), "vendor them into the catalog") {
				t.Errorf("Build: %v; want a *RemoteError naming %s and %q", err, tc.file, tc.entry)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) > 0 {
				t.Errorf("requests reached the server: %v", got)
				got = nil
			}
		})
	}
	for _, local := range []string{"../../../publish/generated/global", "cm.yaml", "./base", "a@b/c.yaml", "dir:with/colon.yaml"} {
		if isRemote(local) {
			t.Errorf("isRemote(%q) = true, want a local path", local)
		}
	}
}
