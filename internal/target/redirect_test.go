package target

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
)

// TestOLMImageRedirection: imageRedirection renders the mirror sets into
// rendered/<cluster>/ and the node files into node-config/<cluster>/, from
// the images the present versions need; after a delisting the entries of
// its images go, and with no redirection asked for nothing is written.
func TestOLMImageRedirection(t *testing.T) {
	d := "@sha256:" + strings.Repeat("c", 64)
	arts := []model.ArtifactRecord{{Name: "etcd", Present: true, Versions: []model.VersionRecord{
		{Version: "1.0.0", Present: true, Images: []model.Image{{Source: "quay.io/coreos/etcd" + d, Destination: "dst.local/mirror/coreos/etcd" + d}}},
		{Version: "1.1.0", Present: true, Images: []model.Image{{Source: "ghcr.io/acme/helper:v1", Destination: "dst.local/mirror/acme/helper:v1"}}},
	}}}
	tg, _ := New(OLM, Settings{Cluster: "edge", Own: OLMOptions{Redirect: olm.RedirectKinds}})
	if err := tg.Check(); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	state := &gitops.State{Rendered: map[string]string{"edge": "olm dst.local/olm/catalog@sha256:" + strings.Repeat("1", 64)}}
	list := func() []string {
		var out []string
		filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				rel, _ := filepath.Rel(root, p)
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		sort.Strings(out)
		return out
	}
	if err := renderFromStateDir(tg, root, arts, state); err != nil {
		t.Fatal(err)
	}
	want := "node-config/edge/containerd/certs.d/ghcr.io/hosts.toml,node-config/edge/containerd/certs.d/quay.io/hosts.toml,node-config/edge/crio/registries.conf.d/50-operator-publish.conf," +
		"rendered/edge/catalogsource.yaml,rendered/edge/imagedigestmirrorset.yaml,rendered/edge/imagetagmirrorset.yaml"
	if got := strings.Join(list(), ","); got != want {
		t.Fatalf("files:\n%s\nwant:\n%s", got, want)
	}
	idms, _ := os.ReadFile(filepath.Join(root, "rendered/edge/imagedigestmirrorset.yaml"))
	if !strings.Contains(string(idms), "source: quay.io/coreos/etcd\n") || strings.Contains(string(idms), "helper") {
		t.Errorf("ImageDigestMirrorSet:\n%s", idms)
	}

	arts[0].Versions[1].Present = false // delist 1.1.0: its tag-named helper goes
	if err := renderFromStateDir(tg, root, arts, state); err != nil {
		t.Fatal(err)
	}
	want = "node-config/edge/containerd/certs.d/quay.io/hosts.toml,node-config/edge/crio/registries.conf.d/50-operator-publish.conf," +
		"rendered/edge/catalogsource.yaml,rendered/edge/imagedigestmirrorset.yaml"
	if got := strings.Join(list(), ","); got != want {
		t.Fatalf("after delisting 1.1.0:\n%s\nwant:\n%s", got, want)
	}

	plain, _ := New(OLM, Settings{Cluster: "edge"})
	if err := renderFromStateDir(plain, root, arts, state); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(list(), ","); got != "rendered/edge/catalogsource.yaml" {
		t.Errorf("without imageRedirection: %s", got)
	}

	bad, _ := New(OLM, Settings{Cluster: "edge", Own: OLMOptions{Redirect: []string{"docker"}}})
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "imageRedirection") {
		t.Errorf("bad kind: %v", err)
	}
}
