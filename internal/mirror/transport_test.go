package mirror_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestCredentialHelper mirrors from a registry that wants the source
// credentials (flags) to one whose credentials come from a docker
// credential helper named in config.json (go-containerregistry's default
// keychain), both Debian docker-registry with htpasswd.
func TestCredentialHelper(t *testing.T) {
	srcReg := testenv.StartRegistry(t, testenv.RegistryOptions{Auth: true})
	dstReg := testenv.StartRegistry(t, testenv.RegistryOptions{Auth: true})
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustParse(t, srcReg.Ref("team/app:v1")), img, srcReg.Options()...); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	helper := filepath.Join(dir, "docker-credential-publishtest")
	secret, _ := json.Marshal(map[string]string{"ServerURL": dstReg.Host, "Username": dstReg.Username, "Secret": dstReg.Password})
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread host\n[ \"$host\" = %q ] || { echo 'credentials not found in native keychain'; exit 1; }\necho '%s'\n", dstReg.Host, secret)
	if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"credHelpers": map[string]string{dstReg.Host: "publishtest"}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	src := Credentials{Username: srcReg.Username, Password: srcReg.Password}
	c, err := New(Options{DstRegistry: dstReg.Host + "/project", Src: src, SrcHosts: []string{srcReg.Host}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mirror(context.Background(), []string{srcReg.Ref("team/app:v1")}, nil); err != nil {
		t.Fatalf("with the credential helper: %v", err)
	}
	verifyCopy(t, srcReg.Host, srcReg.Options(), dstReg.Host, "project/", dstReg.Options(), "team/app:v1")

	// Without the helper the destination refuses: 401, naming the flags.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	c, err = New(Options{DstRegistry: dstReg.Host + "/other", Src: src, SrcHosts: []string{srcReg.Host}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Mirror(context.Background(), []string{srcReg.Ref("team/app:v1")}, nil)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--dst-username") {
		t.Errorf("err = %v, want a 401 naming --dst-username", err)
	}
}

// TestInsecure: a TLS registry with a certificate nobody trusts fails
// without --ca-file (and is not retried); --insecure skips verification
// but keeps HTTPS.
func TestInsecure(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustParse(t, reg.Ref("a/b:v1")), img, reg.Options()...); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{DstRegistry: reg.Host + "/m", Retry: RetryPolicy{Attempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Mirror(context.Background(), []string{reg.Ref("a/b:v1")}, nil)
	var ie *ImageError
	if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "--ca-file") {
		t.Fatalf("err = %v, want a TLS error naming --ca-file", err)
	}
	c, err = New(Options{DstRegistry: reg.Host + "/m", Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mirror(context.Background(), []string{reg.Ref("a/b:v1")}, nil); err != nil {
		t.Fatalf("--insecure: %v", err)
	}
	verifyCopy(t, reg.Host, reg.Options(), reg.Host, "m/", reg.Options(), "a/b:v1")
	// --ca-file works as well and is the better choice.
	c, err = New(Options{DstRegistry: reg.Host + "/n", CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mirror(context.Background(), []string{reg.Ref("a/b:v1")}, nil); err != nil {
		t.Fatalf("--ca-file: %v", err)
	}
}

// TestIPv6NestedPrefix mirrors to and from IPv6 literal hosts ([::1]:PORT,
// proxies in front of Debian docker-registry), nested repository paths, and
// a destination prefix of two components (a Harbor project and a folder).
func TestIPv6NestedPrefix(t *testing.T) {
	srcReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dstReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	src := testenv.StartFaultProxy(t, srcReg.URL(), srcReg.Transport(), testenv.FaultOptions{Listen: "[::1]:0"})
	dst := testenv.StartFaultProxy(t, dstReg.URL(), dstReg.Transport(), testenv.FaultOptions{Listen: "[::1]:0"})
	if !strings.HasPrefix(src.Host, "[::1]:") {
		t.Fatalf("proxy host %q", src.Host)
	}
	set := pushImageSet(t, srcReg.Host, srcReg.Options(), 6, 4<<10)
	var refs []string
	for _, r := range set.refs {
		refs = append(refs, src.Host+"/"+r)
	}
	c, err := New(Options{DstRegistry: dst.Host + "/project/ops-mirror"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Mirror(context.Background(), refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Images {
		if want := dst.Host + "/project/ops-mirror/" + set.refs[i]; r.Destination != want {
			t.Errorf("destination %s, want %s", r.Destination, want)
		}
	}
	for _, r := range set.refs {
		verifyCopy(t, srcReg.Host, srcReg.Options(), dstReg.Host, "project/ops-mirror/", dstReg.Options(), r)
	}
}
