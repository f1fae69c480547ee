package pipeline

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/ocicatalog"
)

// TestPackageOCICatalog is the round trip of the OCI catalog: `publish
// package --catalog` (the connected side's catalog repo) carries the OCI
// catalog of the cluster, rendered from the catalog's state through its
// overlay; `publish verify` accepts the archive; `publish push --oci` on a
// site with only a registry pushes it with the images, to the tag of the
// cluster, holding exactly the rendered/global the connected side
// committed and annotated with the source commit its state records; again,
// it is present and nothing is pushed; without --oci it stays in the
// archive, said so. An OCI catalog whose Artifacts still name the
// connected side's registry (the overlay does not patch them to the
// site's) is refused before anything is pushed, naming both registries;
// patched in the overlay, as docs/airgap.md says, it is pushed.
func TestPackageOCICatalog(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	// The site: a registry, no Git server.
	srv := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	t.Cleanup(srv.Close)
	site := strings.TrimPrefix(srv.URL, "http://")
	ociRef := site + "/platform/operator-catalog"
	pkg := func() (string, *PackageResult) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "ops.tgz")
		pr, err := Package(t.Context(), PackageOptions{
			Source: f.source, Output: out, Mirror: mirror.Options{PlainHTTP: true},
			Catalog: catalogOpts(f.catalog), Cluster: "global",
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, pr
	}
	out, _ := pkg()
	pushErr := func(oci string) (*PushResult, error) {
		return Push(t.Context(), PushOptions{
			Archive: out, Mirror: mirror.Options{DstRegistry: site + "/mirror", PlainHTTP: true}, TempDir: t.TempDir(),
			OCI: func(string) string { return oci },
		})
	}
	_, err := pushErr(ociRef)
	var ie *InputError
	if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "connected side's registry "+f.dst) || !strings.Contains(err.Error(), "puts the bundles in "+site) || !strings.Contains(err.Error(), "kustomize/clusters/global") {
		t.Fatalf("push --oci of a catalog naming the connected registry %s to %s: %v", f.dst, site, err)
	}
	if _, err := remote.Head(mustRef(t, site+"/mirror/tiny/bundle:v1.1.0")); err == nil {
		t.Error("the refused push pushed the bundle")
	}
	if _, err := pushErr(""); err != nil {
		t.Errorf("without --oci the OCI catalog is not pushed, nor checked: %v", err)
	}

	// The site's overlay patches the registry, as docs/airgap.md says.
	dir, repo, _ := f.cloneCatalog(t)
	kp := filepath.Join(dir, "kustomize/clusters/global/kustomization.yaml")
	overlay, _ := os.ReadFile(kp)
	os.WriteFile(kp, append(overlay, "patches:\n- target: {kind: Artifact}\n  patch: |-\n    - op: replace\n      path: /spec/registry\n      value: "+site+"\n"...), 0o644)
	commitPushAll(t, repo, "the site's registry")
	f.run(t)
	out, pr := pkg()
	if !strings.HasPrefix(pr.Catalog, "sha256:") {
		t.Fatalf("package: OCI catalog %q", pr.Catalog)
	}
	vr, err := archive.Verify(out, archive.Limits{}, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	var catalogs []string
	for _, im := range vr.Contents.Images {
		if im.Catalog != "" {
			catalogs = append(catalogs, im.Catalog+" "+im.Desc.Digest.String())
		}
	}
	if !slices.Equal(catalogs, []string{"global " + pr.Catalog}) {
		t.Fatalf("the archive's OCI catalogs: %v", catalogs)
	}

	push := func(oci string) *PushResult {
		t.Helper()
		res, err := Push(t.Context(), PushOptions{
			Archive: out, Mirror: mirror.Options{DstRegistry: site + "/mirror", PlainHTTP: true}, TempDir: t.TempDir(),
			OCI: func(cluster string) string {
				if cluster != "global" {
					t.Errorf("OCI asked for cluster %s", cluster)
				}
				return oci
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	pushed := func(res *PushResult) *archive.PushedImage {
		for i, im := range res.Push.Images {
			if im.Catalog != "" {
				return &res.Push.Images[i]
			}
		}
		return nil
	}

	res := push("")
	if pushed(res) != nil || !slices.Equal(res.Push.CatalogsLeft, []string{"global"}) {
		t.Fatalf("without --oci: pushed %+v, left %v", pushed(res), res.Push.CatalogsLeft)
	}
	if _, err := remote.Head(mustRef(t, ociRef+":global")); err == nil {
		t.Fatal("without --oci the OCI catalog reached the registry")
	}

	res = push(ociRef)
	im := pushed(res)
	if im == nil || im.Skipped || im.Destination != ociRef+":global" || im.Digest != pr.Catalog || len(res.Push.CatalogsLeft) != 0 {
		t.Fatalf("push --oci: %+v, left %v", im, res.Push.CatalogsLeft)
	}
	if len(res.Push.Images) != 7 {
		t.Errorf("push --oci: %d entries pushed, want the 6 images and the OCI catalog", len(res.Push.Images))
	}
	files, anns, digest := artifactFiles(t, ociRef+":global")
	if digest != pr.Catalog {
		t.Errorf("the tag points at %s, the archive has %s", digest, pr.Catalog)
	}
	if want := renderedFiles(t, f.catalog, "global"); len(want) == 0 || !sameFiles(files, want) {
		t.Errorf("the OCI catalog holds %d files, the connected side's rendered/global %d, or they differ", len(files), len(want))
	}
	st, err := gitops.ParseState(gitops.StatePath("global"), []byte(f.catalogFile(t, gitops.StatePath("global"))))
	if err != nil {
		t.Fatal(err)
	}
	if anns[ocicatalog.RevisionAnnotation] != st.Source.Commit || st.Source.Commit == "" {
		t.Errorf("revision annotation %q, the state's source commit %s", anns[ocicatalog.RevisionAnnotation], st.Source.Commit)
	}
	// The images went where publish run maps them.
	if _, err := remote.Head(mustRef(t, site+"/mirror/tiny/bundle:v1.1.0")); err != nil {
		t.Errorf("bundle not pushed: %v", err)
	}

	if im := pushed(push(ociRef)); im == nil || !im.Skipped {
		t.Errorf("again: %+v, want present", im)
	}

	// A catalog repo with nothing published is refused before any
	// registry is read.
	if _, err := Package(t.Context(), PackageOptions{
		Source: f.source, Output: filepath.Join(t.TempDir(), "x.tgz"), Mirror: mirror.Options{PlainHTTP: true},
		Catalog: catalogOpts(f.source), Cluster: "global",
	}); err == nil {
		t.Error("package --catalog of a repo that is not a catalog: no error")
	}
}
