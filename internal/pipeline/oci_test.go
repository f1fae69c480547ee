package pipeline

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/ocicatalog"
)

// catalogHead is the commit of the main branch of the bare catalog repo.
func catalogHead(t *testing.T, dir string) plumbing.Hash {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash()
}

// renderedFiles is rendered/<cluster> at the tip of the catalog's main
// branch, by path below it.
func renderedFiles(t *testing.T, dir, cluster string) map[string]string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	files, err := c.Files()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	files.ForEach(func(f *object.File) error {
		if rel, ok := strings.CutPrefix(f.Name, "rendered/"+cluster+"/"); ok {
			s, err := f.Contents()
			if err != nil {
				t.Fatal(err)
			}
			out[rel] = s
		}
		return nil
	})
	return out
}

// artifactFiles pulls the OCI catalog at ref and returns the files of its
// layer and the manifest annotations.
func artifactFiles(t *testing.T, ref string) (map[string]string, map[string]string, string) {
	t.Helper()
	img, err := remote.Image(mustRef(t, ref))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != ocicatalog.ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ocicatalog.LayerMediaType {
		t.Fatalf("%s: manifest %+v is not the OCI catalog's shape", ref, m)
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out[h.Name] = string(data)
	}
	d, _ := img.Digest()
	return out, m.Annotations, d.String()
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestRunOCI: `publish run` with an OCI reference pushes rendered/global
// to the destination registry as the OCI catalog (tag: the cluster name),
// annotated with the package repo commit, and records tag and digest in
// publish/state.yaml; a rerun, and a run after a package repo commit that
// changes no manifest, push nothing and commit nothing; a tag that lost
// its artifact gets it back with no commit; an upgrade (the incremental
// way: only tiny rendered) pushes a new digest holding the whole
// rendered/global and records it; a push that fails commits nothing.
func TestRunOCI(t *testing.T) {
	f := newFixture(t)
	ociRepo := f.dst + "/platform/operator-catalog"
	tag := ociRepo + ":global"
	log := &syncBuffer{}
	opts := func() Options {
		return Options{
			Source:  f.source,
			Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
			Catalog: catalogOpts(f.catalog),
			Log:     slog.New(slog.NewTextHandler(log, nil)),
			OCI:     ociRepo,
		}
	}
	run := func(name string) *Result {
		t.Helper()
		log = &syncBuffer{}
		res, err := Run(context.Background(), opts())
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log.String())
		}
		if res.OCI == nil || res.OCI.Ref != tag {
			t.Fatalf("%s: OCI result %+v, want a push to %s", name, res.OCI, tag)
		}
		return res
	}
	// check compares the artifact at the tag with the catalog tip and its
	// state.
	check := func(name, revision string) string {
		t.Helper()
		files, anns, digest := artifactFiles(t, tag)
		if want := renderedFiles(t, f.catalog, "global"); len(want) == 0 || !sameFiles(files, want) {
			t.Errorf("%s: the artifact holds %d files, rendered/global %d, or they differ", name, len(files), len(want))
		}
		if anns[ocicatalog.RevisionAnnotation] != revision {
			t.Errorf("%s: revision annotation %q, want %s", name, anns[ocicatalog.RevisionAnnotation], revision)
		}
		st, err := gitops.ParseState(gitops.StatePath("global"), []byte(f.catalogFile(t, gitops.StatePath("global"))))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.OCI["global"]; got.Ref != tag || got.Digest != digest {
			t.Errorf("%s: state records %+v, the tag points at %s", name, got, digest)
		}
		return digest
	}
	head := func() string {
		h, err := f.repo.Head()
		if err != nil {
			t.Fatal(err)
		}
		return h.Hash().String()
	}

	res := run("first run")
	if !res.OCI.Pushed || res.Commit == "" {
		t.Fatalf("first run: pushed %v, commit %q", res.OCI.Pushed, res.Commit)
	}
	first := check("first run", head())
	published := head()

	res = run("rerun")
	if res.OCI.Pushed || res.Commit != "" || res.OCI.Digest != first {
		t.Fatalf("rerun: pushed %v, commit %q, digest %s (was %s)", res.OCI.Pushed, res.Commit, res.OCI.Digest, first)
	}

	// A commit that touches no manifest: the catalog and the state keep
	// the published source commit, and so does the artifact.
	f.commit(t, "nothing for the catalog")
	res = run("unrelated commit")
	if res.OCI.Pushed || res.Commit != "" || res.OCI.Digest != first {
		t.Fatalf("unrelated commit: pushed %v, commit %q, digest %s (was %s)", res.OCI.Pushed, res.Commit, res.OCI.Digest, first)
	}

	// The tag lost its artifact: the run pushes it again, commits nothing.
	if err := remote.Delete(mustRef(t, tag)); err != nil {
		t.Fatal(err)
	}
	res = run("tag gone")
	if !res.OCI.Pushed || res.Commit != "" || res.OCI.Digest != first {
		t.Fatalf("tag gone: pushed %v, commit %q, digest %s (was %s)", res.OCI.Pushed, res.Commit, res.OCI.Digest, first)
	}
	check("tag gone", published)

	f.addVersion(t, "1.2.0")
	res = run("upgrade")
	if !strings.Contains(log.String(), "of the 1 artifacts the change touches") {
		t.Errorf("upgrade: not the incremental way:\n%s", log.String())
	}
	if !res.OCI.Pushed || res.Commit == "" || res.OCI.Digest == first {
		t.Fatalf("upgrade: pushed %v, commit %q, digest %s (was %s)", res.OCI.Pushed, res.Commit, res.OCI.Digest, first)
	}
	upgraded := check("upgrade", head())
	files, _, _ := artifactFiles(t, tag)
	for _, p := range []string{"tiny/artifact_tiny.yaml", "tiny/artifactversion_tiny.v1.0.0.yaml", "tiny/artifactversion_tiny.v1.2.0.yaml"} {
		if files[p] == "" {
			t.Errorf("upgrade: the artifact lacks %s (has %d files)", p, len(files))
		}
	}

	// A registry that refuses the push: nothing is committed.
	refusing := httptest.NewServer(refuseManifests(registry.New(registry.Logger(nopLogger()))))
	t.Cleanup(refusing.Close)
	f.addVersion(t, "1.3.0")
	before := catalogHead(t, f.catalog)
	o := opts()
	o.OCI = strings.TrimPrefix(refusing.URL, "http://") + "/platform/operator-catalog"
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "nothing committed") {
		t.Fatalf("refused push: %v", err)
	}
	if catalogHead(t, f.catalog) != before {
		t.Error("a failed OCI push committed the catalog")
	}
	if _, _, d := artifactFiles(t, tag); d != upgraded {
		t.Errorf("the tag moved to %s", d)
	}

	// A bad reference stops the run before anything is mirrored.
	o = opts()
	o.OCI = ociRepo + "@sha256:" + strings.Repeat("0", 64)
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--oci") || !errors.As(err, new(*InputError)) {
		t.Fatalf("bad reference: %v", err)
	}
}

// refuseManifests answers 403 to every manifest upload.
func refuseManifests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
			http.Error(w, `{"errors":[{"code":"DENIED","message":"no"}]}`, http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestRunKeepsTheRecordedOCICatalog: a run without an OCI reference after
// runs with one keeps pushing to the reference the state records, saying
// so; --no-oci stops it, says so, and the record leaves the state.
func TestRunKeepsTheRecordedOCICatalog(t *testing.T) {
	f := newFixture(t)
	tag := f.dst + "/platform/operator-catalog:global"
	run := func(name string, edit func(*Options)) (*Result, string) {
		t.Helper()
		res, log, err := f.runOpts(t, edit)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log)
		}
		return res, log
	}
	run("with --oci", func(o *Options) { o.OCI = f.dst + "/platform/operator-catalog" })
	f.addVersion(t, "1.2.0")
	res, log := run("without --oci", nil)
	if res.OCI == nil || res.OCI.Ref != tag || !strings.Contains(log, "as the state records") {
		t.Fatalf("without --oci: OCI %+v, want a push to %s said in the log\n%s", res.OCI, tag, log)
	}
	if _, _, digest := artifactFiles(t, tag); !strings.Contains(f.catalogFile(t, gitops.StatePath("global")), digest) {
		t.Errorf("without --oci: the state does not record the new artifact %s", digest)
	}
	f.addVersion(t, "1.3.0")
	res, log = run("--no-oci", func(o *Options) { o.NoOCI = true })
	if res.OCI != nil || !strings.Contains(log, "no longer pushed (--no-oci)") {
		t.Fatalf("--no-oci: OCI %+v\n%s", res.OCI, log)
	}
	if strings.Contains(f.catalogFile(t, gitops.StatePath("global")), "oci:") {
		t.Errorf("--no-oci: the state still records the OCI catalog")
	}
}
