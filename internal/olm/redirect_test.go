package olm

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/containerd/remotes/docker"
	cdconfig "github.com/containerd/containerd/remotes/docker/config"
	"github.com/operator-publish/publish/internal/model"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
	"sigs.k8s.io/yaml"
)

const (
	dA = "@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// redirectArts are two artifacts as publish/state.yaml records them: a
// delisted version and a delisted artifact whose images no present
// version needs, an image named by tag, one on Docker Hub.
func redirectArts() []model.ArtifactRecord {
	img := func(src, dst string) model.Image { return model.Image{Source: src, Destination: dst} }
	return []model.ArtifactRecord{
		{Name: "etcd", Present: true, Versions: []model.VersionRecord{
			{Version: "0.9.4", Present: true, Images: []model.Image{
				img("quay.io/coreos/etcd-operator"+dA, "dst.local:5000/mirror/coreos/etcd-operator"+dA),
				img("docker.io/library/busybox:1.36", "dst.local:5000/mirror/library/busybox:1.36"),
			}},
			{Version: "0.9.2", Present: false, Images: []model.Image{
				img("quay.io/coreos/old-helper"+dB, "dst.local:5000/mirror/coreos/old-helper"+dB),
			}},
		}},
		{Name: "gone", Present: false, Versions: []model.VersionRecord{
			{Version: "1.0.0", Present: true, Images: []model.Image{img("ghcr.io/gone/op"+dA, "dst.local:5000/mirror/gone/op"+dA)}},
		}},
		{Name: "flux", Present: true, Versions: []model.VersionRecord{
			{Version: "2.0.0", Present: true, Images: []model.Image{
				img("ghcr.io/fluxcd/source-controller"+dA, "dst.local:5000/mirror/fluxcd/source-controller"+dA),
				img("quay.io/coreos/etcd-operator:v0.9.4", "dst.local:5000/mirror/coreos/etcd-operator:v0.9.4"),
			}},
		}},
	}
}

// TestMirrors: one entry per mirrored source repository that a present
// version needs, sorted; digest and tag use recorded; never a prefix.
func TestMirrors(t *testing.T) {
	ms, err := Mirrors(redirectArts())
	if err != nil {
		t.Fatal(err)
	}
	want := []Mirror{
		{Source: "docker.io/library/busybox", Destination: "dst.local:5000/mirror/library/busybox", ByTag: true},
		{Source: "ghcr.io/fluxcd/source-controller", Destination: "dst.local:5000/mirror/fluxcd/source-controller", ByDigest: true},
		{Source: "quay.io/coreos/etcd-operator", Destination: "dst.local:5000/mirror/coreos/etcd-operator", ByDigest: true, ByTag: true},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("mirrors:\n%+v\nwant:\n%+v", ms, want)
	}

	idms, _ := MirrorSet(RedirectIDMS, "operator-publish", ms)
	var set struct {
		Spec struct {
			ImageDigestMirrors []struct {
				Source  string   `json:"source"`
				Mirrors []string `json:"mirrors"`
			} `json:"imageDigestMirrors"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(idms, &set); err != nil {
		t.Fatal(err)
	}
	if got := set.Spec.ImageDigestMirrors; len(got) != 2 || got[0].Source != "ghcr.io/fluxcd/source-controller" || got[1].Mirrors[0] != "dst.local:5000/mirror/coreos/etcd-operator" {
		t.Errorf("ImageDigestMirrorSet:\n%s", idms)
	}
	itms, _ := MirrorSet(RedirectITMS, "operator-publish", ms)
	if !strings.Contains(string(itms), "imageTagMirrors") || strings.Count(string(itms), "source:") != 2 {
		t.Errorf("ImageTagMirrorSet:\n%s", itms)
	}
	if none, err := MirrorSet(RedirectITMS, "x", ms[1:2]); none != nil || err != nil {
		t.Errorf("no tag mirror: %s %v, want nothing", none, err)
	}
}

// TestContainerdHosts: the hosts.toml files load with containerd's own
// host configuration loader, and send a mirrored repository's pull to the
// destination path.
func TestContainerdHosts(t *testing.T) {
	ms, _ := Mirrors(redirectArts())
	files, err := ContainerdHosts(ms, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("%d hosts, want docker.io, ghcr.io, quay.io", len(files))
	}
	root := t.TempDir()
	for h, data := range files {
		os.MkdirAll(filepath.Join(root, h), 0o755)
		os.WriteFile(filepath.Join(root, h, "hosts.toml"), data, 0o644)
	}
	hosts := cdconfig.ConfigureHosts(context.Background(), cdconfig.HostOptions{HostDir: cdconfig.HostDirFromRoot(root)})
	for host, server := range map[string]string{"quay.io": "quay.io", "docker.io": "registry-1.docker.io"} {
		rh, err := hosts(host)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if len(rh) != 2 || rh[0].Host != "dst.local:5000" || rh[0].Path != "/v2/mirror" || rh[0].Scheme != "https" ||
			rh[0].Capabilities != docker.HostCapabilityPull|docker.HostCapabilityResolve || rh[1].Host != server {
			t.Errorf("%s: %+v", host, rh)
		}
	}
	// A destination path that is not a prefix of the source path cannot be
	// a containerd mirror.
	if _, err := ContainerdHosts([]Mirror{{Source: "quay.io/a/b", Destination: "dst/x/c"}}, false); err == nil {
		t.Error("want an error for a repository renamed by the mirror")
	}
}

// TestRegistriesConf: the CRI-O drop-in loads with containers/image's
// registries.conf loader and pulls a mirrored image from the destination
// first, by digest only where the versions name digests.
func TestRegistriesConf(t *testing.T) {
	ms, _ := Mirrors(redirectArts())
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "registries.conf.d"), 0o755)
	os.WriteFile(filepath.Join(dir, "registries.conf"), []byte("unqualified-search-registries = []\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "registries.conf.d", "50-operator-publish.conf"), RegistriesConf(ms, true), 0o644)
	sys := &types.SystemContext{SystemRegistriesConfPath: filepath.Join(dir, "registries.conf"), SystemRegistriesConfDirPath: filepath.Join(dir, "registries.conf.d")}
	sysregistriesv2.InvalidateCache()
	for ref, want := range map[string][]string{
		"ghcr.io/fluxcd/source-controller" + dA: {"dst.local:5000/mirror/fluxcd/source-controller" + dA, "ghcr.io/fluxcd/source-controller" + dA},
		"ghcr.io/fluxcd/source-controller:v1":   {"ghcr.io/fluxcd/source-controller:v1"}, // digest-only
		"docker.io/library/busybox:1.36":        {"dst.local:5000/mirror/library/busybox:1.36", "docker.io/library/busybox:1.36"},
		"quay.io/coreos/etcd-operator:v0.9.4":   {"dst.local:5000/mirror/coreos/etcd-operator:v0.9.4", "quay.io/coreos/etcd-operator:v0.9.4"},
	} {
		reg, err := sysregistriesv2.FindRegistry(sys, ref)
		if err != nil || reg == nil {
			t.Fatalf("%s: %v %v", ref, reg, err)
		}
		named, _ := reference.ParseNormalizedNamed(ref)
		srcs, err := reg.PullSourcesFromReference(named)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range srcs {
			got = append(got, s.Reference.String())
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s pulls from %v, want %v", ref, got, want)
		}
	}
	if reg, _ := sysregistriesv2.FindRegistry(sys, "quay.io/coreos/unrelated:v1"); reg != nil {
		t.Errorf("an unmirrored repository matched %s: the entries are broader than what was mirrored", reg.Prefix)
	}
	if reg, _ := sysregistriesv2.FindRegistry(sys, "quay.io/coreos/etcd-operator-extra:v1"); reg != nil {
		t.Errorf("quay.io/coreos/etcd-operator-extra matched %s", reg.Prefix)
	}
}

// TestResolve: a source reference resolves to its repository's mirror
// with its digest or tag, as the mirror sets name them; a repository or a
// kind of reference the redirection does not cover resolves to nothing.
func TestResolve(t *testing.T) {
	ms, err := Mirrors(redirectArts())
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{
		"quay.io/coreos/etcd-operator" + dB:        "dst.local:5000/mirror/coreos/etcd-operator" + dB,
		"quay.io/coreos/etcd-operator:v0.9.5":      "dst.local:5000/mirror/coreos/etcd-operator:v0.9.5",
		"busybox:1.36":                             "dst.local:5000/mirror/library/busybox:1.36",
		"index.docker.io/library/busybox:1.37":     "dst.local:5000/mirror/library/busybox:1.37",
		"ghcr.io/fluxcd/source-controller:v1":      "", // mirrored by digest only: no ImageTagMirrorSet entry
		"docker.io/library/busybox" + dA:           "", // by tag only
		"quay.io/coreos/old-helper" + dB:           "", // only a delisted version needed it
		"quay.io/coreos/etcd-operator-extra" + dA:  "", // never a prefix
		"ghcr.io/fluxcd/source-controller:v1" + dA: "dst.local:5000/mirror/fluxcd/source-controller" + dA,
	} {
		got, err := Resolve(ref, ms)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("Resolve(%s) = %v, want %q", ref, got, want)
		}
	}
	if _, err := Resolve("Not A Reference", ms); err == nil {
		t.Error("a bad reference resolves")
	}
}
