package render

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// hostileCatalog is the catalog of cluster global in memory: its overlay
// (resources the generated base and extra), the generated base of sample()
// and files.
func hostileCatalog(t *testing.T, overlay string, files Files) Files {
	t.Helper()
	cat := Files{ClustersDir + "/global/kustomization.yaml": []byte(overlay)}
	gen, err := Generated("global", Config{}, sample())
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range gen {
		cat[p] = data
	}
	edge, err := Generated("edge", Config{}, sample())
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range edge {
		cat[p] = data
	}
	for p, data := range files {
		cat[p] = data
	}
	return cat
}

// TestBuildFetchesNothingRemoteHidden: a remote entry kustomize would
// fetch however the kustomization spells it (a key in another case or
// with a letter that folds to its own, which kustomize's JSON decoding
// accepts; configurations; a builtin plugin configuration inline, in a
// file or in a directory of transformers) is refused as well, and no
// request reaches the server.
func TestBuildFetchesNothingRemoteHidden(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.String())
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/config.yaml") {
			w.Write([]byte("namePrefix:\n- path: metadata/name\n"))
			return
		}
		w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n"))
	}))
	t.Cleanup(srv.Close)
	base := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	for _, tc := range []struct {
		name, overlay string
		files         Files
	}{
		// Keys in JSON order: the last of resources and resourceſ wins.
		{"resourceſ beside resources", base + "resources:\n- ../../../publish/generated/global\nresourceſ:\n- ../../../publish/generated/global\n- " + srv.URL + "/cm.yaml\n", nil},
		{"RESOURCES only", base + "RESOURCES:\n- ../../../publish/generated/global\n- " + srv.URL + "/cm.yaml\n", nil},
		{"Patches Path", base + "resources:\n- ../../../publish/generated/global\npatches:\n- Path: " + srv.URL + "/patch.yaml\n", nil},
		{"configurations", base + "resources:\n- ../../../publish/generated/global\nconfigurations:\n- " + srv.URL + "/config.yaml\n", nil},
		{"reſources", base + "reſources:\n- ../../../publish/generated/global\n- " + srv.URL + "/cm.yaml\n", nil},
		{"inline transformer", base + "resources:\n- ../../../publish/generated/global\ntransformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata:\n    name: p\n  path: " + srv.URL + "/patch.yaml\n", nil},
		{"transformer directory", base + "resources:\n- ../../../publish/generated/global\ntransformers:\n- ../../transformers\n", Files{
			"kustomize/transformers/kustomization.yaml": []byte("resources:\n- patch.yaml\n"),
			"kustomize/transformers/patch.yaml":         []byte("apiVersion: builtin\nkind: PatchStrategicMergeTransformer\nmetadata:\n  name: p\npaths:\n- " + srv.URL + "/patch.yaml\n"),
		}},
		{"transformer file", base + "resources:\n- ../../../publish/generated/global\ntransformers:\n- patch.yaml\n", Files{
			ClustersDir + "/global/patch.yaml": []byte("apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: " + srv.URL + "/patch.yaml\n"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(hostileCatalog(t, tc.overlay, tc.files), "global")
			mu.Lock()
			defer mu.Unlock()
			if len(got) > 0 {
				t.Errorf("requests reached the server: %v (Build: %v)", got, err)
				got = nil
			}
			var re *RemoteError
			if !errors.As(err, &re) || !strings.Contains(re.Entry, srv.URL) {
				t.Errorf("Build: %v, want a *RemoteError naming the URL", err)
			}
		})
	}
}

// TestBuildReadsOnlyTheCatalog: an overlay naming a file outside the
// catalog (an absolute path on this machine, a ".." out of the catalog),
// a file of rendered/ or another cluster's generated base (spelled so that
// CheckOverlay's pattern does not see it) fails, and renders nothing of it.
func TestBuildReadsOnlyTheCatalog(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel("/", outside)
	if err != nil {
		t.Fatal(err)
	}
	cm := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\n")
	for _, tc := range []struct{ name, entry string }{
		{"absolute", outside},
		{"dotdot", strings.Repeat("../", 12) + filepath.ToSlash(rel)},
		{"rendered", "../../../rendered/edge/_cluster/configmap_stolen.yaml"},
		{"other base", "./../../../publish/generated/edge"},
		{"other base via clusters", "../edge/../../../publish/generated/edge"},
		{"other base file", "../../../publish/generated/edge/etcd/artifact_etcd.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			overlay := "resources:\n- ../../../publish/generated/global\n- " + tc.entry + "\n"
			cat := hostileCatalog(t, overlay, Files{"rendered/edge/_cluster/configmap_stolen.yaml": cm})
			out, err := Build(cat, "global")
			if err == nil {
				var names []string
				for p := range out {
					names = append(names, p)
				}
				t.Errorf("Build of an overlay naming %s succeeded: %v", tc.entry, names)
			}
		})
	}
}

// TestCheckOverlayOtherNames: an overlay named kustomization.yml or
// Kustomization that names another cluster's base is refused as
// kustomization.yaml is.
func TestCheckOverlayOtherNames(t *testing.T) {
	for _, name := range []string{"kustomization.yml", "Kustomization"} {
		cat := Files{ClustersDir + "/global/" + name: []byte("resources:\n- ../../../publish/generated/edge\n")}
		if err := CheckOverlay(cat, "global"); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s naming edge's base: %v", name, err)
		}
	}
}

// TestKeyOddNames: the key of a catalog in memory equals the walk of its
// checkout for names with bytes below "/", dots, dashes and non-ASCII
// names, as directory and as file.
func TestKeyOddNames(t *testing.T) {
	root := t.TempDir()
	files := Files{}
	for _, n := range []string{"a", "a!", "a b", "a\tb", "a+b", "a-b", "a.b", "a,b", "a\x01b", "a\x7fb", "é", "e\u0301", "Z", "_", "~"} {
		files["x/"+n+"/f"] = []byte(n)
		files["y/"+n] = []byte(n)
		files["z/"+n+"/"+n] = []byte(n)
	}
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Namespace: "ns"}
	want := walkKey(t, root, "global", cfg)
	if got := Key(files, "global", cfg); got != want {
		t.Errorf("Key in memory = %s, the walk gives %s", got, want)
	}
	if got := Key(mustReadDir(t, root), "global", cfg); got != want {
		t.Errorf("Key of ReadDir = %s, the walk gives %s", got, want)
	}
}

// TestKeyNestedGit: a Git directory nested in a catalog checkout (a
// vendored clone, a submodule's .git file) is no file of the catalog: a
// tip's Git objects cannot hold one, and the checkout read into memory
// leaves it out, so that the key of the checkout is the tip's.
func TestKeyNestedGit(t *testing.T) {
	root := t.TempDir()
	files := Files{
		"kustomize/clusters/global/kustomization.yaml": []byte("resources:\n- ../../vendor/x\n"),
		"kustomize/vendor/x/kustomization.yaml":        []byte("resources: []\n"),
	}
	onDisk := Files{
		"kustomize/vendor/x/.git/config": []byte("[core]\n"),
		"kustomize/vendor/x/.git/HEAD":   []byte("ref: refs/heads/main\n"),
		"kustomize/vendor/y/.git":        []byte("gitdir: ../../.git/modules/y\n"),
		".git/config":                    []byte("[core]\n"),
	}
	for _, fs := range []Files{files, onDisk} {
		for p, data := range fs {
			full := filepath.Join(root, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := mustReadDir(t, root)
	if ch := read.Changes(files); len(ch) != 0 {
		t.Errorf("ReadDir of a checkout with nested .git: %v differ from the catalog's files", ch)
	}
	if Key(read, "global", Config{}) != Key(files, "global", Config{}) {
		t.Error("the key of the checkout differs from the key of its files")
	}
}

// TestBuildGroupNamesNoDirectory: an overlay that makes an object's
// artifact (the label or selector that groups its rendered file) "." or
// ".." cannot move its file out of rendered/<cluster>/<artifact>/: the
// build fails naming the object.
func TestBuildGroupNamesNoDirectory(t *testing.T) {
	for _, group := range []string{"..", "."} {
		overlay := "resources:\n- ../../../publish/generated/global\npatches:\n- target: {kind: Artifact, name: etcd}\n  patch: |-\n    - op: replace\n      path: /spec/artifactVersionSelector/matchLabels/cpaas.io~1artifact-version\n      value: \"" + group + "\"\n"
		out, err := Build(hostileCatalog(t, overlay, nil), "global")
		if err == nil {
			var outside []string
			for p := range out {
				if !strings.HasPrefix(p, "rendered/global/") || strings.Count(p, "/") != 3 {
					outside = append(outside, p)
				}
			}
			t.Errorf("artifact %q: Build succeeded, files outside rendered/global/<artifact>/: %v", group, outside)
		}
	}
}

// TestReadDirOddEntries: a dangling link, a link to a directory outside
// and a named pipe elsewhere in a checkout are no files of the catalog:
// ReadDir leaves them out without following or opening them.
func TestReadDirOddEntries(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("# catalog\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/target", filepath.Join(root, "dangling.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := mustReadDir(t, root)
	if len(got) != 1 || got["README.md"] == nil {
		t.Errorf("ReadDir = %v, want README.md alone", got)
	}
}
