package ocicatalog

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-publish/publish/internal/testenv"
)

// writeTree writes files (slash paths) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, s := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var catalog = map[string]string{
	"tiny/artifact_tiny.yaml":               "apiVersion: app.alauda.io/v1alpha1\nkind: Artifact\nmetadata: {name: tiny, namespace: cpaas-system}\n",
	"tiny/artifactversion_tiny.v1.0.0.yaml": "apiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata: {name: tiny.v1.0.0, namespace: cpaas-system}\nspec: {tag: v1.0.0, present: true}\n",
	"etcd/artifact_etcd.yaml":               "apiVersion: app.alauda.io/v1alpha1\nkind: Artifact\nmetadata: {name: etcd, namespace: cpaas-system}\n",
}

var meta = Meta{Source: "https://git.example.com/platform/operators.git", Revision: "0123456789abcdef0123456789abcdef01234567"}

func digest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// TestBuildShape: one layer of the OCI gzip layer type holding exactly the
// files at the root of the archive, the Flux config type, the source and
// revision annotations.
func TestBuildShape(t *testing.T) {
	img, err := Build(writeTree(t, catalog), meta)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != ConfigMediaType {
		t.Errorf("manifest %s, config %s", m.MediaType, m.Config.MediaType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType {
		t.Fatalf("layers %+v, want one %s", m.Layers, LayerMediaType)
	}
	if m.Annotations[SourceAnnotation] != meta.Source || m.Annotations[RevisionAnnotation] != meta.Revision || len(m.Annotations) != 2 {
		t.Errorf("annotations %v", m.Annotations)
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	got := map[string]string{}
	var order []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || h.Mode != 0o644 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: type %c mode %o owner %d:%d time %s", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
		order = append(order, h.Name)
	}
	if len(got) != len(catalog) {
		t.Errorf("archive holds %v", order)
	}
	for p, s := range catalog {
		if got[p] != s {
			t.Errorf("%s: %q in the archive, want %q", p, got[p], s)
		}
	}
	if strings.Join(order, " ") != "etcd/artifact_etcd.yaml tiny/artifact_tiny.yaml tiny/artifactversion_tiny.v1.0.0.yaml" {
		t.Errorf("archive order %v, want sorted", order)
	}
}

// TestBuildDeterministic: the digest depends on the files' paths and bytes
// and the meta, not on times, modes or the directory's place.
func TestBuildDeterministic(t *testing.T) {
	a := writeTree(t, catalog)
	b := writeTree(t, catalog)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	filepath.Walk(b, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			os.Chtimes(p, old, old)
			os.Chmod(p, 0o600)
		}
		return err
	})
	build := func(dir string, m Meta) string {
		img, err := Build(dir, m)
		if err != nil {
			t.Fatal(err)
		}
		return digest(t, img)
	}
	da := build(a, meta)
	if db := build(b, meta); db != da {
		t.Errorf("same files, digests %s and %s", da, db)
	}
	if again := build(a, meta); again != da {
		t.Errorf("built twice, digests %s and %s", da, again)
	}
	if dm := build(a, Meta{Source: meta.Source, Revision: "fedcba9876543210fedcba9876543210fedcba98"}); dm == da {
		t.Error("another source commit, the same digest")
	}
	os.WriteFile(filepath.Join(b, "tiny", "artifact_tiny.yaml"), []byte(catalog["tiny/artifact_tiny.yaml"]+"# changed\n"), 0o644)
	if dc := build(b, meta); dc == da {
		t.Error("another file content, the same digest")
	}
	os.Rename(filepath.Join(b, "etcd"), filepath.Join(b, "etcd2"))
	c := writeTree(t, catalog)
	os.Rename(filepath.Join(c, "etcd"), filepath.Join(c, "etcd2"))
	if build(c, meta) == da {
		t.Error("another path, the same digest")
	}
}

func TestBuildRefuses(t *testing.T) {
	dir := writeTree(t, catalog)
	link := filepath.Join(dir, "tiny", "link.yaml")
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(dir, meta); err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("symlink: %v", err)
	}
	if _, err := Build(t.TempDir(), meta); err == nil || !strings.Contains(err.Error(), "holds no file") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := Build(filepath.Join(t.TempDir(), "missing"), meta); err == nil {
		t.Error("missing directory: no error")
	}
}

// pushAndCheck pushes dir three times to ref: a push, the same files (no
// push), changed files (a push of a new digest); the tag ends on the
// digest Push returned.
func pushAndCheck(t *testing.T, ref string, opts ...remote.Option) {
	t.Helper()
	ctx := context.Background()
	dir := writeTree(t, catalog)
	r1, err := Push(ctx, dir, ref, meta, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Pushed || !strings.HasPrefix(r1.Digest, "sha256:") || r1.Ref != ref {
		t.Errorf("first push: %+v", r1)
	}
	r2, err := Push(ctx, dir, ref, meta, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Pushed || r2.Digest != r1.Digest {
		t.Errorf("same files again: %+v, first %+v", r2, r1)
	}
	os.WriteFile(filepath.Join(dir, "tiny", "artifactversion_tiny.v1.1.0.yaml"), []byte("kind: ArtifactVersion\n"), 0o644)
	r3, err := Push(ctx, dir, ref, meta, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if !r3.Pushed || r3.Digest == r1.Digest {
		t.Errorf("changed files: %+v, first %+v", r3, r1)
	}
	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(tag, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != r3.Digest || desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("the tag points at %s (%s), Push said %s", desc.Digest, desc.MediaType, r3.Digest)
	}
}

func TestPushInProcess(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	pushAndCheck(t, strings.TrimPrefix(srv.URL, "http://")+"/platform/operator-catalog:global")
}

// TestPushDebianRegistry: the Debian docker-registry (distribution 2.8)
// with TLS and htpasswd takes the artifact; a wrong password is refused
// with a message naming the tag.
func TestPushDebianRegistry(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	ref := reg.Ref("platform/operator-catalog:global")
	pushAndCheck(t, ref, reg.Options()...)

	bad := remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: reg.Username, Password: "wrong"}))
	_, err := Push(context.Background(), writeTree(t, catalog), ref, meta, remote.WithTransport(reg.Transport()), bad)
	if err == nil || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("wrong password: %v", err)
	}
}

func TestPushBadRef(t *testing.T) {
	for _, ref := range []string{"registry.example.com/catalog@sha256:" + strings.Repeat("0", 64), "registry.example.com/catalog", "::"} {
		if _, err := Push(context.Background(), writeTree(t, catalog), ref, meta); err == nil || !strings.Contains(err.Error(), "not a tag reference") {
			t.Errorf("%s: %v", ref, err)
		}
	}
}

// TestBuildFS: the same files from an in-memory tree give the same
// artifact as from disk.
func TestBuildFS(t *testing.T) {
	mem := fstest.MapFS{}
	for p, s := range catalog {
		mem[p] = &fstest.MapFile{Data: []byte(s), Mode: 0o600, ModTime: time.Now()}
	}
	a, err := BuildFS(mem, "memory", meta)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(writeTree(t, catalog), meta)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, a) != digest(t, b) {
		t.Errorf("in memory %s, on disk %s", digest(t, a), digest(t, b))
	}
}

// TestBuildFiles: a map of files gives the same artifact as the directory
// holding them; a path that leaves the artifact, or no file, is refused.
func TestBuildFiles(t *testing.T) {
	files := map[string][]byte{}
	for p, s := range catalog {
		files[p] = []byte(s)
	}
	a, err := BuildFiles(files, "rendered/global", meta)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(writeTree(t, catalog), meta)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, a) != digest(t, b) {
		t.Errorf("from a map %s, on disk %s", digest(t, a), digest(t, b))
	}
	for _, bad := range []string{"../x.yaml", "/x.yaml", "a//b.yaml", "."} {
		if _, err := BuildFiles(map[string][]byte{bad: []byte("x")}, "rendered/global", meta); err == nil || !strings.Contains(err.Error(), "not a relative path") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := BuildFiles(nil, "rendered/global", meta); err == nil || !strings.Contains(err.Error(), "holds no file") {
		t.Errorf("no file: %v", err)
	}
}

// TestTag: the cluster is the default tag; a digest, a missing host or a
// bad name is refused.
func TestTag(t *testing.T) {
	for ref, want := range map[string]string{
		"registry.example.com/platform/operator-catalog": "registry.example.com/platform/operator-catalog:edge",
		"registry.example.com:5000/operator-catalog:v1":  "registry.example.com:5000/operator-catalog:v1",
		"localhost/catalog":                              "localhost/catalog:edge",
		"127.0.0.1:5000/a/b":                             "127.0.0.1:5000/a/b:edge",
	} {
		tag, err := Tag(ref, "edge")
		if err != nil || tag.String() != want {
			t.Errorf("%s: %v %v, want %s", ref, tag, err, want)
		}
	}
	for _, ref := range []string{"registry.example.com/c@sha256:" + strings.Repeat("0", 64), "platform/catalog", "catalog", "registry.example.com/UPPER", ""} {
		if _, err := Tag(ref, "edge"); err == nil || !strings.Contains(err.Error(), "want REGISTRY/REPOSITORY[:TAG]") {
			t.Errorf("%q: %v", ref, err)
		}
	}
}
