package main

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/testenv"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

func inProcessRegistry(t *testing.T) string {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func runPublish(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	root.SetArgs(args)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	t.Logf("publish %s:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), err
}

// TestMirrorCommandImages: `publish mirror --image` copies, reports, skips
// on a rerun, and names a failed image with an infrastructure error (exit 2).
func TestMirrorCommandImages(t *testing.T) {
	src, dst := inProcessRegistry(t), inProcessRegistry(t)
	for _, r := range []string{"team/a:v1", "team/b:v1"} {
		img, err := random.Image(512, 2)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.ParseReference(src + "/" + r)
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"mirror", "--dst-registry", dst + "/mirror", "--image", src + "/team/a:v1", "--image", src + "/team/b:v1"}
	out, err := runPublish(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "copied ") != 2 {
		t.Errorf("want two copied lines:\n%s", out)
	}
	out, err = runPublish(t, args...)
	if err != nil || strings.Count(out, "present ") != 2 {
		t.Errorf("rerun: %v\n%s", err, out)
	}
	missing := src + "/team/missing:v1"
	reportFile := filepath.Join(t.TempDir(), "report.json")
	out, err = runPublish(t, append(args, "--image", missing, "--retries", "1", "--report", reportFile)...)
	var ue *usageError
	var ie *pipeline.InputError
	if err == nil || errors.As(err, &ue) || errors.As(err, &ie) {
		t.Fatalf("err = %v, want an infrastructure error (exit 2)", err)
	}
	if !strings.Contains(out, "failed   "+missing) || !strings.Contains(err.Error(), missing) {
		t.Errorf("the report does not name %s:\n%s", missing, out)
	}
	// The report names the two images as present and the missing one as
	// failed, with the error, in the documented format.
	data, rerr := os.ReadFile(reportFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if rep.APIVersion != report.APIVersion || rep.Kind != report.Kind || rep.Command != "mirror" ||
		rep.Summary != (report.Summary{Images: 3, Present: 2, Failed: 1}) || len(rep.Images) != 3 {
		t.Fatalf("report:\n%s", data)
	}
	if f := rep.Images[2]; f.Source != missing || f.State != report.Failed || !strings.Contains(f.Error, "not found") {
		t.Errorf("failed image in the report: %+v", f)
	}
	for _, i := range rep.Images[:2] {
		if i.State != report.Present || !strings.HasPrefix(i.Digest, "sha256:") || !strings.HasPrefix(i.Destination, dst+"/mirror/") {
			t.Errorf("image in the report: %+v", i)
		}
	}
	if _, err := runPublish(t, append(args, "--report", filepath.Join(t.TempDir(), "no", "r.json"))...); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--report") {
		t.Errorf("--report in a missing directory: %v, want a usage error naming --report", err)
	}
	if _, err := runPublish(t, "mirror", "--image", src+"/team/a:v1"); !errors.As(err, &ue) {
		t.Errorf("no --dst-registry: %v, want a usage error", err)
	}
}

// TestMirrorCommandPackages mirrors one package of the shared corpus, given
// as a path: its related images first, then its bundle under the version's
// tag; the other packages are not touched.
func TestMirrorCommandPackages(t *testing.T) {
	corpus, ok := testenv.CorpusDir()
	if !ok {
		testenv.RequireShared(t)
	}
	testenv.Short(t, "corpus test")
	src, dst := inProcessRegistry(t), inProcessRegistry(t)
	repo := t.TempDir()
	c, err := testenv.BuildCorpus(context.Background(), corpus, src, filepath.Join(repo, "packages"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg testenv.CorpusPackage
	for _, p := range c.Packages {
		if len(p.RelatedImages) > 0 {
			pkg = p
			break
		}
	}
	rel, err := filepath.Rel(repo, filepath.Dir(pkg.ManifestPath))
	if err != nil {
		t.Fatal(err)
	}
	out, err := runPublish(t, "mirror", "--source", repo, "--dst-registry", dst+"/m", rel)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "copied "); n != len(pkg.RelatedImages)+1 {
		t.Errorf("%d images copied, want %d related + the bundle:\n%s", n, len(pkg.RelatedImages), out)
	}
	bundle, _ := name.ParseReference(pkg.BundleRef)
	d, err := remote.Head(mustRef(t, dst+"/m/"+bundle.Context().RepositoryStr()+":v"+pkg.Version))
	if err != nil || d.Digest.String() != pkg.BundleDigest {
		t.Errorf("bundle at the destination: %v %v, want %s", d, err, pkg.BundleDigest)
	}
	if _, err := os.Stat(filepath.Join(repo, "packages")); err != nil {
		t.Fatal(err)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMirrorCommandShards: two parts of `publish mirror --shard I/2
// --shard-result FILE` copy disjoint repositories that cover the plan, each
// writing a sealed result with the same plan digest; the part may come from
// GitLab's CI_NODE_INDEX/CI_NODE_TOTAL; a bad --shard and a declared split
// without an index are usage errors before anything is copied.
func TestMirrorCommandShards(t *testing.T) {
	for _, k := range []string{"CI_NODE_INDEX", "CI_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL"} {
		t.Setenv(k, "")
	}
	src, dst := inProcessRegistry(t), inProcessRegistry(t)
	args := []string{"mirror", "--dst-registry", dst + "/mirror"}
	for _, r := range []string{"team/a:v1", "team/b:v1", "team/c:v1"} {
		pushRandom(t, src+"/"+r)
		args = append(args, "--image", src+"/"+r)
	}
	dir := t.TempDir()
	var results []*report.Report
	for i, part := range []string{"1/2", "2/2"} {
		f := filepath.Join(dir, "shard-"+part[:1]+".json")
		a := append(append([]string{}, args...), "--shard-result", f)
		if i == 0 {
			a = append(a, "--shard", part)
		} else {
			t.Setenv("CI_NODE_INDEX", "2")
			t.Setenv("CI_NODE_TOTAL", "2")
		}
		if _, err := runPublish(t, a...); err != nil {
			t.Fatalf("part %s: %v", part, err)
		}
		r, err := report.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if r.Shard == nil || r.Shard.Part != part {
			t.Fatalf("part %s: shard block %+v", part, r.Shard)
		}
		results = append(results, r)
	}
	if results[0].Shard.Plan != results[1].Shard.Plan {
		t.Errorf("the parts' plans differ: %s, %s", results[0].Shard.Plan, results[1].Shard.Plan)
	}
	copied := map[string]int{}
	for _, r := range results {
		for _, im := range r.Images {
			if im.State == report.Copied && im.Bytes > 0 {
				copied[im.Source]++
			}
		}
	}
	if len(copied) != 3 {
		t.Errorf("copied across the parts: %v, want each of the three images once", copied)
	}
	// merge-shards --key refuses a result without a valid signature
	// before it reads anything else; one edited after it was written is
	// refused by its sha256.
	privPEM, pubPEM, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("pw")))
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(dir, "cosign.pub")
	os.WriteFile(pubFile, pubPEM, 0o644)
	k, err := (&signFlags{key: string(privPEM), pass: "pw"}).load()
	if err != nil {
		t.Fatal(err)
	}
	signed := filepath.Join(dir, "shard-1.json")
	if _, err := signFile(k, signed); err != nil {
		t.Fatal(err)
	}
	unsigned := filepath.Join(dir, "shard-2.json")
	var ie *pipeline.InputError
	if _, err := runPublish(t, "merge-shards", "--key", pubFile, "--catalog", dir, "--dst-registry", dst+"/mirror", signed, unsigned); !errors.As(err, &ie) || !strings.Contains(err.Error(), unsigned) || !strings.Contains(err.Error(), "no signature") {
		t.Errorf("an unsigned result with --key: %v, want an input error naming it", err)
	}
	data, _ := os.ReadFile(unsigned)
	os.WriteFile(unsigned, []byte(strings.Replace(string(data), `"copied"`, `"present"`, 1)), 0o644)
	if _, err := runPublish(t, "merge-shards", "--catalog", dir, "--dst-registry", dst+"/mirror", signed, unsigned); !errors.As(err, &ie) || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("an edited result: %v, want an input error about its sha256", err)
	}
	t.Setenv("CI_NODE_INDEX", "")
	var ue *usageError
	if _, err := runPublish(t, append(args, "--shard", "0/2")...); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--shard") {
		t.Errorf("--shard 0/2: %v, want a usage error naming --shard", err)
	}
	if _, err := runPublish(t, args...); !errors.As(err, &ue) || !strings.Contains(err.Error(), "CI_NODE_INDEX") {
		t.Errorf("CI_NODE_TOTAL=2 without an index: %v, want a usage error naming CI_NODE_INDEX", err)
	}
}

// TestPlanMatrixFlags: a --matrix below 1 or an unknown --matrix-format is
// a usage error naming the flag, before anything is read.
func TestPlanMatrixFlags(t *testing.T) {
	var ue *usageError
	for args, want := range map[string]string{"--matrix 0": "--matrix 0", "--matrix 3 --matrix-format jenkins": "--matrix-format"} {
		_, err := runPublish(t, append([]string{"plan", "--catalog", t.TempDir(), "--dst-registry", "reg.example.com/m"}, strings.Fields(args)...)...)
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a usage error naming %s", args, err, want)
		}
	}
}
