package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/testenv"
	"sigs.k8s.io/yaml"
)

// TestRunOLMCorpus is the upstream OLM story with real parts: the corpus
// in a package repo, source and destination Debian registries with TLS and
// htpasswd, the catalog repo behind a Git smart-HTTP server. `publish run`
// for an olm cluster mirrors everything, pushes the catalog image to the
// destination and commits a CatalogSource; `opm render` of that image
// lists every package and bundle, each bundle image at the destination by
// digest; a rerun commits nothing.
func TestRunOLMCorpus(t *testing.T) {
	opm := os.Getenv("OPM")
	if opm == "" {
		opm = "opm"
	}
	testenv.Short(t, "integration test")
	opm, err := exec.LookPath(opm)
	if err != nil {
		testenv.Skip(t, "integration test needs opm: run hack/opm/build.sh and set OPM to the path it prints")
	}
	shared := testenv.RequireShared(t)
	src := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	dst := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	gs := testenv.StartGitServer(t)
	catalogURL := gs.NewBareRepo(t, "catalog")
	ctx := context.Background()

	source := t.TempDir()
	corpus, err := testenv.BuildCorpus(ctx, filepath.Join(shared, "corpus"), src.Host, filepath.Join(source, "packages"), src.Options()...)
	if err != nil {
		t.Fatalf("building the corpus: %v", err)
	}
	// OLM keeps one bundle per CSV name: the corpus has two directories
	// whose CSVs are both slurm-operator.v0.4.0; the second is left out.
	seen := map[string]bool{}
	bundles := 0
	for _, p := range corpus.Packages {
		csv := csvName(t, p.Dir)
		if seen[csv] {
			if err := os.RemoveAll(filepath.Dir(p.ManifestPath)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		seen[csv] = true
		bundles++
	}
	var waivers strings.Builder
	for _, rule := range []string{"bundle/validator/crd", "bundle/validator/service-account", "bundle/validator/related-images",
		"bundle/default-channel", "bundle/validator/csv-examples", "manifest/icon", "repo/skip-range", "bundle/validator/owned-crds", "bundle/csv-version"} {
		fmt.Fprintf(&waivers, "  - rule: %s\n    reason: upstream community bundle, republished as it is\n", rule)
	}
	cfgPath := filepath.Join(source, config.FileName)
	if err := os.WriteFile(cfgPath, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nlint:\n  waivers:\n"+waivers.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainInit(source, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("corpus", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com"}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath, true)
	if err != nil {
		t.Fatal(err)
	}

	// Stand-ins for OLM's images at the source.
	for _, ref := range []string{"operator-framework/opm:v1.60.0", "operator-framework/olm:v0.38.0"} {
		img, _ := random.Image(256, 1)
		r, _ := name.ParseReference(src.Host + "/" + ref)
		if err := remote.Write(r, img, src.Options()...); err != nil {
			t.Fatal(err)
		}
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	a, _ := os.ReadFile(src.CAFile)
	b, _ := os.ReadFile(dst.CAFile)
	if err := os.WriteFile(ca, append(a, b...), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Source:  source,
		Cluster: "edge",
		Target:  TargetOLM,
		Lint:    cfg.Lint,
		Mirror: mirror.Options{
			DstRegistry: dst.Host + "/mirror", CAFile: ca, Concurrency: 4,
			Src: mirror.Credentials{Username: src.Username, Password: src.Password},
			Dst: mirror.Credentials{Username: dst.Username, Password: dst.Password},
		},
		Catalog: gitops.Options{URL: catalogURL, Branch: "main", Username: gs.Username, Password: gs.Password},
		OLM: OLMOptions{
			BaseImage: src.Host + "/operator-framework/opm:v1.60.0",
			Images:    []string{src.Host + "/operator-framework/olm:v0.38.0"},
		},
	}
	res, err := Run(ctx, opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Commit == "" {
		t.Fatal("first run committed nothing")
	}

	// The CatalogSource in the catalog repo.
	clone := t.TempDir()
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: catalogURL, ReferenceName: "refs/heads/main",
		Auth: &githttp.BasicAuth{Username: gs.Username, Password: gs.Password}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(clone, "rendered", "edge", CatalogSourceFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := olm.ValidateCatalogSource(data); err != nil {
		t.Fatal(err)
	}
	var cs struct {
		Spec struct {
			Image string `json:"image"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &cs); err != nil {
		t.Fatal(err)
	}

	// opm reads the catalog image from the destination.
	home := t.TempDir()
	policy := filepath.Join(home, ".config", "containers", "policy.json")
	os.MkdirAll(filepath.Dir(policy), 0o700)
	os.WriteFile(policy, []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o600)
	auth := base64.StdEncoding.EncodeToString([]byte(dst.Username + ":" + dst.Password))
	os.WriteFile(filepath.Join(home, "config.json"), []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, dst.Host, auth)), 0o600)
	cmd := exec.Command(opm, "render", cs.Spec.Image, "-o", "json")
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+home, "SSL_CERT_FILE="+ca, "XDG_RUNTIME_DIR="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("opm render %s: %v\n%s", cs.Spec.Image, err, stderr.String())
	}
	rendered, err := declcfg.LoadReader(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]bool{}
	for _, p := range corpus.Packages {
		pkgs[p.Package] = true
	}
	if len(rendered.Packages) != len(pkgs) || len(rendered.Bundles) != bundles {
		t.Errorf("opm render of the catalog image: %d packages and %d bundles, want %d and %d", len(rendered.Packages), len(rendered.Bundles), len(pkgs), bundles)
	}
	for _, bd := range rendered.Bundles {
		if !strings.HasPrefix(bd.Image, dst.Host+"/mirror/bundles/"+bd.Package+"@sha256:") {
			t.Errorf("bundle %s: image %s is not the destination's by digest", bd.Name, bd.Image)
			continue
		}
		r, _ := name.ParseReference(bd.Image)
		if _, err := remote.Head(r, dst.Options()...); err != nil {
			t.Errorf("bundle %s: %v", bd.Name, err)
		}
	}
	t.Logf("catalog image %s: %d packages, %d bundles", cs.Spec.Image, len(rendered.Packages), len(rendered.Bundles))

	// Nothing changed: the same catalog image digest, no commit.
	res, err = Run(ctx, opts)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if res.Commit != "" {
		t.Errorf("second run committed %s", res.Commit)
	}
}

// csvName is metadata.name of the CSV in a corpus bundle directory.
func csvName(t *testing.T, dir string) string {
	t.Helper()
	var found string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" || !strings.HasSuffix(p, ".clusterserviceversion.yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var obj struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(data, &obj) == nil {
			found = obj.Metadata.Name
		}
		return nil
	})
	if found == "" {
		t.Fatalf("%s: no CSV", dir)
	}
	return found
}
