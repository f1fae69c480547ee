package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/prune"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestPruneApply: on the Debian registry (TLS, htpasswd, deletes), two
// clusters list three versions; 1.0.0 and 1.1.0 are delisted on one
// (nothing to prune: the other lists them), then on both,
// then 1.1.0 is listed again on one after the plan was made. apply deletes
// exactly 1.0.0's bundle, own image (pushed by digest, as the mirror
// does) with the signature the state does not record, and its image index
// with the child no listed index holds, leaves 1.1.0's and says so; after the registry's garbage
// collection the bytes of 1.0.0's own layer are gone, the layer it shared
// with a listed image is not, and every listed image still pulls with its
// digest. A second apply finds them gone.
func TestPruneApply(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	opts := reg.Options()
	ref := func(s string) name.Reference {
		r, err := name.ParseReference(reg.Host + "/" + s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	write := func(s string, img v1.Image) string {
		if err := remote.Write(ref(s), img, opts...); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return d.String()
	}
	layer := func() v1.Layer {
		l, err := random.Layer(2048, "application/vnd.docker.image.rootfs.diff.tar.gzip")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	image := func(ls ...v1.Layer) v1.Image {
		img, err := mutate.AppendLayers(empty.Image, ls...)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	sharedLayer, ownLayer := layer(), layer()
	kept := image(sharedLayer)
	keptDigest := write("m/op/manager:v1", kept)
	own1Img := image(sharedLayer, ownLayer)
	own1d, _ := own1Img.Digest()
	own1 := write("m/op/agent@"+own1d.String(), own1Img)
	own2Img := image(layer())
	own2d, _ := own2Img.Digest()
	own2 := write("m/op/agent@"+own2d.String(), own2Img)
	// A cosign signature of 1.0.0's own image that the state does not
	// record (a state written before signatures were recorded).
	own1Sig := write("m/op/agent:sha256-"+strings.TrimPrefix(own1, "sha256:")+".sig", image(layer()))
	// Multi-platform images: 1.0.0's index holds a child that 1.2.0's
	// index holds too, and one of its own.
	sharedChild, ownChild := image(layer()), image(layer())
	index := func(imgs ...v1.Image) v1.ImageIndex {
		var adds []mutate.IndexAddendum
		for _, i := range imgs {
			adds = append(adds, mutate.IndexAddendum{Add: i})
		}
		return mutate.AppendManifests(empty.Index, adds...)
	}
	writeIndex := func(s string, idx v1.ImageIndex) string {
		if err := remote.WriteIndex(ref(s), idx, opts...); err != nil {
			t.Fatal(err)
		}
		d, _ := idx.Digest()
		return d.String()
	}
	multiOld := writeIndex("m/op/multi:old", index(sharedChild, ownChild))
	multiNew := writeIndex("m/op/multi:new", index(sharedChild, image(layer())))
	sharedChildD, _ := sharedChild.Digest()
	ownChildD, _ := ownChild.Digest()
	b := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		b[v] = write("m/op/bundle:v"+v, image(layer()))
	}
	img := func(repo, d string) model.Image {
		return model.Image{Source: "quay.io/" + repo, Destination: reg.Host + "/m/" + repo + "@" + d, Digest: d}
	}
	art := func(present ...string) []model.ArtifactRecord {
		is := map[string]bool{}
		for _, v := range present {
			is[v] = true
		}
		return []model.ArtifactRecord{{Name: "op", Present: true, Registry: reg.Host, Repository: "m/op/bundle", Versions: []model.VersionRecord{
			{Version: "1.0.0", Tag: "v1.0.0", Present: is["1.0.0"], BundleDigest: b["1.0.0"], Images: []model.Image{img("op/agent", own1), img("op/manager", keptDigest), img("op/multi", multiOld)}},
			{Version: "1.1.0", Tag: "v1.1.0", Present: is["1.1.0"], BundleDigest: b["1.1.0"], Images: []model.Image{img("op/agent", own2), img("op/manager", keptDigest)}},
			{Version: "1.2.0", Tag: "v1.2.0", Present: is["1.2.0"], BundleDigest: b["1.2.0"], Images: []model.Image{img("op/manager", keptDigest), img("op/multi", multiNew)}},
		}}}
	}
	dir := t.TempDir()
	gitCLI(t, dir, "init", "-q", "-b", "main")
	n := 0
	commit := func(states map[string][]model.ArtifactRecord) {
		files := map[string][]byte{}
		for cl, arts := range states {
			data, err := (&gitops.State{Source: gitops.Source{Commit: "abc"}, Artifacts: arts}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			files[cl] = data
		}
		n++
		commitStates(t, dir, fmt.Sprintf("2026-%02d-01T00:00:00Z", n), files)
	}
	all := []string{"1.0.0", "1.1.0", "1.2.0"}
	commit(map[string][]model.ArtifactRecord{"a": art(all...), "b": art(all...)})
	creds := []string{"--dst-registry", reg.Host, "--dst-username", reg.Username, "--dst-password", reg.Password, "--ca-file", reg.CAFile}
	planFile := filepath.Join(t.TempDir(), "prune.json")
	// Delisted on a only: b still lists them, nothing is an orphan.
	commit(map[string][]model.ArtifactRecord{"a": art("1.2.0")})
	if out, _, err := runPublishErr(t, append([]string{"prune", "--catalog-dir", dir, "--plan", planFile, "--older-than", "0s", "--lookup"}, creds...)...); err != nil || !strings.Contains(out, "**0 manifests to delete**") {
		t.Fatalf("prune --plan with 1.0.0 and 1.1.0 delisted on one cluster: %v\n%s", err, out)
	}
	commit(map[string][]model.ArtifactRecord{"b": art("1.2.0")})

	if out, _, err := runPublishErr(t, append([]string{"prune", "--catalog-dir", dir, "--plan", planFile, "--older-than", "0s", "--lookup"}, creds...)...); err != nil {
		t.Fatalf("prune --plan: %v\n%s", err, out)
	}
	var p prune.Plan
	data, _ := os.ReadFile(planFile)
	if err := json.Unmarshal(data, &p); err != nil || len(p.Entries) != 5 {
		t.Fatalf("plan: %v, %d entries, want the bundles and own images of 1.0.0 and 1.1.0, and 1.0.0's index", err, len(p.Entries))
	}
	for _, e := range p.Entries {
		switch e.Digest {
		case own1:
			if len(e.Referrers) != 1 || e.Referrers[0] != own1Sig {
				t.Errorf("1.0.0's own image: referrers %v, want its signature %s", e.Referrers, own1Sig)
			}
		case multiOld:
			if len(e.Children) != 1 || e.Children[0] != ownChildD.String() {
				t.Errorf("1.0.0's index: children %v, want only its own child %s (not %s, which 1.2.0's index holds)", e.Children, ownChildD, sharedChildD)
			}
		}
	}
	// Listed again on a between the plan and the apply.
	commit(map[string][]model.ArtifactRecord{"a": art("1.1.0", "1.2.0")})
	out, _, err := runPublishErr(t, append([]string{"prune", "--catalog-dir", dir, "--apply", planFile}, creds...)...)
	if err != nil {
		t.Fatalf("prune --apply: %v\n%s", err, out)
	}
	if !strings.Contains(out, "3 manifests deleted, 2 left (listed again since the plan), 0 already gone") || !strings.Contains(out, "garbage-collect") {
		t.Errorf("apply said:\n%s", out)
	}
	gone := []string{"m/op/bundle@" + b["1.0.0"], "m/op/agent@" + own1, "m/op/agent@" + own1Sig, "m/op/multi@" + multiOld, "m/op/multi@" + ownChildD.String()}
	there := []string{"m/op/bundle@" + b["1.1.0"], "m/op/agent@" + own2, "m/op/bundle@" + b["1.2.0"], "m/op/manager@" + keptDigest, "m/op/bundle:v1.2.0", "m/op/manager:v1", "m/op/multi@" + sharedChildD.String()}
	for _, s := range gone {
		if _, err := remote.Head(ref(s), opts...); err == nil {
			t.Errorf("%s is still there", s)
		}
	}
	reg.GarbageCollect(t)
	blob := func(l v1.Layer) string {
		d, _ := l.Digest()
		return filepath.Join(reg.Dir, "docker/registry/v2/blobs/sha256", d.Hex[:2], d.Hex, "data")
	}
	if _, err := os.Stat(blob(ownLayer)); !os.IsNotExist(err) {
		t.Errorf("the deleted image's own layer is still stored after the garbage collection: %v", err)
	}
	if _, err := os.Stat(blob(sharedLayer)); err != nil {
		t.Errorf("the layer shared with a listed image is gone: %v", err)
	}
	for _, s := range there {
		img, err := remote.Image(ref(s), opts...)
		if err != nil {
			t.Errorf("%s does not pull: %v", s, err)
			continue
		}
		ls, _ := img.Layers()
		for _, l := range ls {
			rc, err := l.Compressed()
			if err != nil {
				t.Errorf("%s: a layer does not pull: %v", s, err)
				continue
			}
			rc.Close()
		}
	}
	// Again, reading what is listed from the catalog branch's tip
	// (--catalog) rather than the checkout.
	out, _, err = runPublishErr(t, append([]string{"prune", "--catalog-dir", t.TempDir(), "--catalog", dir, "--apply", planFile}, creds...)...)
	if err != nil || !strings.Contains(out, "0 manifests deleted, 2 left (listed again since the plan), 3 already gone") {
		t.Errorf("second apply: %v\n%s", err, out)
	}
}
