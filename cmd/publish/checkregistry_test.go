package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestCheckRegistry: `check --registry` on the Debian registry (TLS,
// htpasswd, deletes enabled) with a catalog whose state lists a bundle, a
// related image and a related image index. It passes on the healthy site;
// a related image deleted by hand and a child of the index deleted by hand
// are each named at the state file line that records them (exit 1); a
// delisted version's missing bundle is no finding; wrong credentials are
// no finding but exit 2.
func TestCheckRegistry(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	opts := reg.Options()
	push := func(repo, tag string) string { return pushRandom(t, reg.Host+"/"+repo+":"+tag, opts...) }
	bundle := push("mirror/op/bundle", "v1.0.0")
	manager := push("mirror/op/manager", "v1")
	// A cosign signature of the manager image, in its repository.
	managerSig := push("mirror/op/manager", "sha256-"+strings.TrimPrefix(manager, "sha256:")+".sig")
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	idxRef, _ := name.ParseReference(reg.Host + "/mirror/op/agent:v1")
	if err := remote.WriteIndex(idxRef, idx, opts...); err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	im, _ := idx.IndexManifest()
	st := &gitops.State{Artifacts: []model.ArtifactRecord{{
		Name: "op", Present: true, Registry: reg.Host, Repository: "mirror/op/bundle",
		Versions: []model.VersionRecord{
			{Version: "0.9.0", Tag: "v0.9.0", Present: false, BundleDigest: "sha256:" + strings.Repeat("0", 64)},
			{Version: "1.0.0", Tag: "v1.0.0", Present: true, BundleDigest: bundle, Path: "packages/op/1.0.0/manifest.yaml", Images: []model.Image{
				{Source: "quay.io/op/manager:v1", Destination: reg.Host + "/mirror/op/manager@" + manager, Digest: manager, Signatures: []string{managerSig}},
				{Source: "quay.io/op/agent:v1", Destination: reg.Host + "/mirror/op/agent@" + idxDigest.String(), Digest: idxDigest.String()},
			}},
		},
	}}}
	data, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	statePath := filepath.Join(dir, filepath.FromSlash(gitops.StatePath("global")))
	os.MkdirAll(filepath.Dir(statePath), 0o755)
	if err := os.WriteFile(statePath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	lineOf := func(s string) string {
		for i, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, s) {
				return gitops.StatePath("global") + ":" + strconv.Itoa(i+1)
			}
		}
		t.Fatalf("%s not in the state", s)
		return ""
	}
	args := []string{"check", "--catalog-dir", dir, "--registry", "--dst-registry", reg.Host,
		"--dst-username", reg.Username, "--dst-password", reg.Password, "--ca-file", reg.CAFile}

	out, _, err := runPublishErr(t, args...)
	if err != nil || !strings.Contains(out, "registry: 6 manifests checked at the destinations, 0 missing, 0 not checked") {
		t.Fatalf("healthy site: %v\n%s", err, out)
	}
	if out, _, err := runPublishErr(t, append(args, "--format", "sarif")...); err != nil || !strings.Contains(out, `"version": "2.1.0"`) || !strings.Contains(out, `"results": []`) {
		t.Errorf("--format sarif on the healthy site: %v\n%s", err, out)
	}

	del := func(ref string) {
		r, _ := name.ParseReference(ref)
		if err := remote.Delete(r, opts...); err != nil {
			t.Fatal(err)
		}
	}
	del(reg.Host + "/mirror/op/manager@" + managerSig)
	out, _, err = runPublishErr(t, args...)
	if want := lineOf(managerSig) + ": error: " + reg.Host + "/mirror/op/manager@" + managerSig + " is not at the destination (op 1.0.0, a signature of related image quay.io/op/manager:v1)"; err == nil || !strings.Contains(out, want) {
		t.Errorf("a signature deleted by hand: %v, want %q\n%s", err, want, out)
	}
	del(reg.Host + "/mirror/op/manager@" + manager)
	child := im.Manifests[1].Digest.String()
	del(reg.Host + "/mirror/op/agent@" + child)
	if out, _, err := runPublishErr(t, append(args, "--format", "sarif")...); err == nil || !strings.Contains(out, `"ruleId": "check/registry"`) || !strings.Contains(out, `"startLine": `) {
		t.Errorf("--format sarif with two manifests deleted: %v\n%s", err, out)
	}
	out, _, err = runPublishErr(t, args...)
	var ie *pipeline.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("two manifests deleted by hand: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{
		lineOf(manager) + ": error: " + reg.Host + "/mirror/op/manager@" + manager + " is not at the destination (op 1.0.0, related image quay.io/op/manager:v1)",
		reg.Host + "/mirror/op/agent@" + child + " is not at the destination (op 1.0.0, related image quay.io/op/agent:v1: a child of " + reg.Host + "/mirror/op/agent@" + idxDigest.String(),
		"publish mirror packages/op/1.0.0/manifest.yaml",
		"3 missing",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "v0.9.0") {
		t.Errorf("a delisted version is checked:\n%s", out)
	}

	bad := append(append([]string{}, args[:len(args)-4]...), "--dst-password", "wrong", "--ca-file", reg.CAFile)
	out, _, err = runPublishErr(t, bad...)
	if err == nil || errors.As(err, &ie) || exitCode(err) != 2 || !strings.Contains(out, "could not be checked") {
		t.Errorf("wrong password: %v (exit %d), want exit 2 with the images not checked\n%s", err, exitCode(err), out)
	}
}
