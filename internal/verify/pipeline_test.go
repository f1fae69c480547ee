package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
)

// publishFixture is a package repo with the tiny operator 1.0.0 (bundle,
// manager and worker images in the source registry, and the extra
// related images newPublishFixture was given), a destination registry and
// an empty bare catalog repo.
type publishFixture struct {
	src, dst        testRegistry
	source, catalog string
	manifest        string // path of the manifest, relative to source
	lines           map[string]int
	key             testKey
}

func newPublishFixture(t *testing.T, src testRegistry, extra ...string) *publishFixture {
	t.Helper()
	f := &publishFixture{src: src, source: t.TempDir(), key: newTestKey(t)}
	f.fresh(t)
	host := src.host
	for _, img := range append([]string{"manager", "worker"}, extra...) {
		pushRandom(t, host+"/tiny/"+img+":v1.0.0", src.opts)
	}
	dir := t.TempDir()
	from := filepath.Join("..", "pipeline", "testdata", "bundles", "tiny", "1.0.0")
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		return os.WriteFile(filepath.Join(dir, rel), []byte(strings.ReplaceAll(string(data), "REGISTRY", host)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host + "/tiny/bundle:v1.0.0")
	if err := remote.Write(ref, img, src.opts...); err != nil {
		t.Fatal(err)
	}
	f.manifest = "packages/tiny/1.0.0/manifest.yaml"
	body := fmt.Sprintf(`apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: tiny.v1.0.0
spec:
  type: bundle
  artifact: %[1]s/tiny/bundle:v1.0.0
  version: v1.0.0
  arch: [linux/amd64]
  info:
    displayName: Tiny
  relatedImages:
  - %[1]s/tiny/manager:v1.0.0
  - %[1]s/tiny/worker:v1.0.0
`, host)
	f.lines = map[string]int{"bundle": 7, "manager": 13, "worker": 14}
	for i, img := range extra {
		body += fmt.Sprintf("  - %s/tiny/%s:v1.0.0\n", host, img)
		f.lines[img] = 15 + i
	}
	p := filepath.Join(f.source, f.manifest)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(body), 0o644)
	os.WriteFile(filepath.Join(f.source, "vendor.pub"), []byte(f.key.pem), 0o644)
	repo, err := git.PlainInit(f.source, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	wt.AddWithOptions(&git.AddOptions{All: true})
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}
	if _, err := wt.Commit("add tiny", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	return f
}

// fresh gives f a new, empty destination registry (go-containerregistry's,
// without the referrers API) and a new, empty bare catalog repo: the
// next run publishes everything again.
func (f *publishFixture) fresh(t *testing.T) {
	t.Helper()
	dstSrv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(dstSrv.Close)
	f.dst, f.catalog = testRegistry{host: strings.TrimPrefix(dstSrv.URL, "http://")}, t.TempDir()
	if _, err := git.PlainInit(f.catalog, true); err != nil {
		t.Fatal(err)
	}
}

// sign signs image (bundle, manager, worker) of tiny with the fixture's
// key: the bundle and the worker as Sigstore bundle referrers, the manager
// as a .sig tag.
func (f *publishFixture) sign(t *testing.T, image string) {
	t.Helper()
	repo, _ := name.NewRepository(f.src.host + "/tiny/" + image)
	desc, err := remote.Get(repo.Tag("v1.0.0"), f.src.opts...)
	if err != nil {
		t.Fatal(err)
	}
	if image == "manager" {
		signSigTag(t, f.key, repo, desc.Digest, desc.Digest, f.src.opts)
		return
	}
	signBundle(t, f.key, repo, desc.Digest, types.DockerManifestSchema2, f.src.opts)
}

// policy writes publish.yaml with a verify entry of mode for the tiny
// images and compiles it; each image of off (manager, worker, ...) gets
// an off entry before it (without off, the entry of mode is at line 4).
func (f *publishFixture) policy(t *testing.T, mode string, off ...string) *Verifier {
	t.Helper()
	p := filepath.Join(f.source, config.FileName)
	body := "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nverify:\n"
	for _, img := range off {
		body += "- match: " + f.src.host + "/tiny/" + img + "\n  mode: off\n"
	}
	body += "- match: " + f.src.host + "/tiny/*\n  mode: " + mode + "\n  key: vendor.pub\n- match: typo.example.com/**\n  key: vendor.pub\n"
	os.WriteFile(p, []byte(body), 0o644)
	c, err := config.Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (f *publishFixture) options(v *Verifier) pipeline.Options {
	mo := mirror.Options{DstRegistry: f.dst.host + "/mirror", PlainHTTPHosts: []string{f.dst.host}, CAFile: f.src.caFile, Src: mirror.Credentials{Username: f.src.user, Password: f.src.password}}
	if f.src.caFile == "" {
		mo.PlainHTTPHosts = append(mo.PlainHTTPHosts, f.src.host)
	}
	return pipeline.Options{Source: f.source, Mirror: mo, Catalog: gitops.Options{URL: f.catalog}, Verify: v}
}

// mirrored lists the repositories of the destination registry.
func (f *publishFixture) mirrored(t *testing.T) []string {
	t.Helper()
	reg, _ := name.NewRegistry(f.dst.host)
	repos, err := remote.Catalog(context.Background(), reg)
	if err != nil {
		t.Fatal(err)
	}
	return repos
}

func (f *publishFixture) committed(t *testing.T) bool {
	t.Helper()
	repo, err := git.PlainOpen(f.catalog)
	if err != nil {
		t.Fatal(err)
	}
	_, err = repo.Reference("refs/heads/main", true)
	return err == nil
}

// finding returns the one finding of rule in fs, failing the test when
// there is not exactly one.
func finding(t *testing.T, fs []lint.Finding, rule string) lint.Finding {
	t.Helper()
	var out []lint.Finding
	for _, f := range fs {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d %s findings in %v", len(out), rule, fs)
	}
	return out[0]
}

// TestPipelineVerify: run, plan, lint and package verify every bundle and
// related image before anything is mirrored, on go-containerregistry's
// registry (referrers API) and Debian's docker-registry (the tag schema).
// An unsigned related image under enforce is a verify/unsigned error at
// its spec.relatedImages line: nothing is mirrored, nothing committed,
// no archive written. Under warn it is a warning and the run publishes.
func TestPipelineVerify(t *testing.T) {
	for _, reg := range []struct {
		name string
		new  func(*testing.T) testRegistry
	}{{"in-process", inProcessRegistry}, {"docker-registry", debianRegistry}} {
		t.Run(reg.name, func(t *testing.T) {
			f := newPublishFixture(t, reg.new(t))
			f.sign(t, "bundle")
			f.sign(t, "manager") // the worker stays unsigned
			ctx := context.Background()
			v := f.policy(t, "enforce")

			// run: a lint error, nothing mirrored or committed.
			res, err := pipeline.Run(ctx, f.options(v))
			var le *pipeline.LintError
			if !errors.As(err, &le) {
				t.Fatalf("run: %v, want a lint error", err)
			}
			fd := finding(t, le.Findings, pipeline.RuleVerifyUnsigned)
			if fd.Severity != lint.Error || fd.Path != f.manifest || fd.Line != f.lines["worker"] || !strings.Contains(fd.Message, "tiny/worker:v1.0.0") || !strings.Contains(fd.Message, "expected signed with key vendor.pub (publish.yaml:4, mode enforce); found no signature") {
				t.Errorf("finding: %+v", fd)
			}
			if !strings.Contains(err.Error(), "nothing mirrored, nothing committed") {
				t.Errorf("run error: %v", err)
			}
			if r := res.Verified[f.src.host+"/tiny/bundle:v1.0.0"]; r.Status != model.VerifyVerified || r.Signature != "bundle" {
				t.Errorf("bundle: %+v", r)
			}
			if r := res.Verified[f.src.host+"/tiny/manager:v1.0.0"]; r.Status != model.VerifyVerified || r.Signature != "sig-tag" {
				t.Errorf("manager: %+v", r)
			}
			if repos := f.mirrored(t); len(repos) != 0 {
				t.Errorf("mirrored on an enforce failure: %v", repos)
			}
			if f.committed(t) {
				t.Error("committed on an enforce failure")
			}

			// plan: the status of each image, the same finding.
			p, err := pipeline.PlanRun(ctx, pipeline.PlanOptions{Options: f.options(v)})
			if err != nil {
				t.Fatal(err)
			}
			finding(t, p.Findings, pipeline.RuleVerifyUnsigned)
			status := map[string]string{}
			for _, a := range p.Artifacts {
				for _, pv := range a.Versions {
					for _, i := range pv.Images {
						if i.Verification != nil {
							status[i.Source] = i.Verification.Status
						}
					}
				}
			}
			if status[f.src.host+"/tiny/worker:v1.0.0"] != model.VerifyUnsigned || status[f.src.host+"/tiny/bundle:v1.0.0"] != model.VerifyVerified || len(status) != 3 {
				t.Errorf("plan statuses: %v", status)
			}
			if md := p.Markdown(); !strings.Contains(md, "### Signatures: 3 images") || !strings.Contains(md, "| unsigned | enforce publish.yaml:4 |") {
				t.Errorf("plan Markdown:\n%s", md)
			}

			// lint: the same finding, and the entry that matches nothing.
			fs, err := pipeline.Lint(ctx, pipeline.LintOptions{Source: f.source, Mirror: f.options(v).Mirror, Verify: v})
			if err != nil {
				t.Fatal(err)
			}
			if fd := finding(t, fs, pipeline.RuleVerifyUnsigned); fd.Line != f.lines["worker"] {
				t.Errorf("lint: %+v", fd)
			}
			if fd := finding(t, fs, pipeline.RuleVerifyPattern); fd.Path != config.FileName || fd.Line != 7 || fd.Severity != lint.Warning {
				t.Errorf("lint pattern: %+v", fd)
			}

			// package: refused before anything is written.
			out := filepath.Join(t.TempDir(), "x.tgz")
			if _, err := pipeline.Package(ctx, pipeline.PackageOptions{Source: f.source, Mirror: f.options(v).Mirror, Output: out, Verify: v}); !errors.As(err, &le) {
				t.Fatalf("package: %v, want a lint error", err)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("archive written on an enforce failure: %v", err)
			}

			// warn: a warning, and the run publishes.
			res, err = pipeline.Run(ctx, f.options(f.policy(t, "warn")))
			if err != nil {
				t.Fatalf("run under warn: %v", err)
			}
			if fd := finding(t, res.Findings, pipeline.RuleVerifyUnsigned); fd.Severity != lint.Warning {
				t.Errorf("warn: %+v", fd)
			}
			if len(f.mirrored(t)) == 0 || !f.committed(t) {
				t.Error("warn: nothing published")
			}
		})
	}
}

// TestPipelineVerifyRules: a wrong key, a tampered image (the signature of
// the old digest copied to the new one) and a missing signature of the
// worker image are each rejected by lint with their rule ID at the
// worker's spec.relatedImages line: an error under enforce, a warning
// under warn.
func TestPipelineVerifyRules(t *testing.T) {
	for _, reg := range []struct {
		name string
		new  func(*testing.T) testRegistry
	}{{"in-process", inProcessRegistry}, {"docker-registry", debianRegistry}} {
		for _, tc := range []struct {
			name, rule, found string
			worker            func(t *testing.T, f *publishFixture, repo name.Repository)
		}{
			{"unsigned", pipeline.RuleVerifyUnsigned, "no signature", func(*testing.T, *publishFixture, name.Repository) {}},
			{"wrong key", pipeline.RuleVerifyUntrusted, "does not verify", func(t *testing.T, f *publishFixture, repo name.Repository) {
				d := pushRandom(t, repo.Tag("v1.0.0").String(), f.src.opts)
				signSigTag(t, newTestKey(t), repo, d, d, f.src.opts)
			}},
			{"tampered", pipeline.RuleVerifyUntrusted, "failed to verify", func(t *testing.T, f *publishFixture, repo name.Repository) {
				old, _ := remote.Get(repo.Tag("v1.0.0"), f.src.opts...)
				d := pushRandom(t, repo.Tag("v1.0.0").String(), f.src.opts)
				signBundleOf(t, f.key, repo, d, old.Digest, f.src.opts)
			}},
		} {
			t.Run(reg.name+"/"+tc.name, func(t *testing.T) {
				f := newPublishFixture(t, reg.new(t))
				f.sign(t, "bundle")
				f.sign(t, "manager")
				repo, _ := name.NewRepository(f.src.host + "/tiny/worker")
				tc.worker(t, f, repo)
				for mode, sev := range map[string]lint.Severity{"enforce": lint.Error, "warn": lint.Warning} {
					v := f.policy(t, mode)
					fs, err := pipeline.Lint(context.Background(), pipeline.LintOptions{Source: f.source, Mirror: f.options(v).Mirror, Verify: v})
					if err != nil {
						t.Fatal(err)
					}
					fd := finding(t, fs, tc.rule)
					if fd.Severity != sev || fd.Path != f.manifest || fd.Line != f.lines["worker"] || !strings.Contains(fd.Message, tc.found) {
						t.Errorf("%s: %+v", mode, fd)
					}
					t.Logf("%s", fd)
				}
			})
		}
	}
}
