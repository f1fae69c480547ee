package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	blangsemver "github.com/blang/semver/v4"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/olm/olmtest"
	"github.com/operator-publish/publish/internal/target"
	"github.com/operator-publish/publish/internal/testenv"
	"sigs.k8s.io/yaml"
)

// TestRunOLMCorpus is the upstream OLM story with real parts: the corpus
// in a package repo, source and destination Debian registries with TLS and
// htpasswd, the catalog repo behind a Git smart-HTTP server. `publish run`
// for an olm cluster with catalogKinds [CatalogSource, ClusterCatalog] and
// every redirection kind mirrors everything, pushes the catalog image to
// the destination and commits a CatalogSource and a ClusterCatalog naming
// it by digest, and the mirror sets and node files of the mirrored
// repositories; `opm render` of that image lists every package and
// bundle, each bundle image at the destination by digest; `opm serve` of
// it answers operator-registry's gRPC client with every bundle, and every
// bundle's image and related images resolve at the destination through
// the rendered redirection (olm.Resolve; checkResolvable); a rerun
// commits nothing. Then one version is delisted (one that alone needs a
// repository and shares another with a listed version; see
// docs/testing.md) and a third run drops its bundle from the served
// catalog, moves the ClusterCatalog's digest, and drops the redirection
// entries of the repository only it needed while keeping the shared one.
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
	published := map[string]bool{} // the packages left in the package repo
	bundles := 0
	for _, p := range corpus.Packages {
		csv := csvName(t, p.Dir)
		// opm v1.73.0 refuses a catalog holding a skipRange that is no
		// semver range (repo/skip-range, which a waiver no longer helps):
		// such a bundle is left out too.
		if sr := csvSkipRange(t, p.Dir); seen[csv] || (sr != "" && !validRange(sr)) {
			if err := os.RemoveAll(filepath.Dir(p.ManifestPath)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		seen[csv] = true
		bundles++
		published[p.Package] = true
	}
	var waivers strings.Builder
	for _, rule := range []string{"bundle/validator/crd", "bundle/validator/service-account", "bundle/validator/related-images", "dependency/missing",
		"bundle/default-channel", "bundle/validator/csv-examples", "manifest/icon", "bundle/validator/owned-crds", "bundle/csv-version"} {
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

	// OLM's images at the source: opm's holds the real opm (the catalog
	// image then gets the serve cache, which that opm serves), olm's is a
	// stand-in.
	olmtest.PushOPMBase(t, opm, src.Host+"/operator-framework/opm:v1.73.0", src.Options()...)
	{
		img, _ := random.Image(256, 1)
		r, _ := name.ParseReference(src.Host + "/operator-framework/olm:v0.38.0")
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
		Target:  target.OLM,
		Lint:    cfg.Lint,
		Mirror: mirror.Options{
			DstRegistry: dst.Host + "/mirror", CAFile: ca, Concurrency: 4,
			Src: mirror.Credentials{Username: src.Username, Password: src.Password},
			Dst: mirror.Credentials{Username: dst.Username, Password: dst.Password},
		},
		Catalog: gitops.Options{URL: catalogURL, Branch: "main", Username: gs.Username, Password: gs.Password},
		TargetSettings: target.OLMOptions{
			BaseImage:    src.Host + "/operator-framework/opm:v1.73.0",
			Images:       []string{src.Host + "/operator-framework/olm:v0.38.0"},
			CatalogKinds: []string{target.KindCatalogSource, target.KindClusterCatalog},
			Redirect:     olm.RedirectKinds,
			Extensions:   []olm.ExtensionOptions{{Package: installPkg, Namespace: "keycloak", ServiceAccount: "keycloak-installer"}},
			// The delisting below removes at once (TestRunOLMDeprecation
			// covers the deprecation period).
			DeprecationPeriod: "0",
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
	clone := cloneCatalog(t, catalogURL, gs)
	data, err := os.ReadFile(filepath.Join(clone, "rendered", "edge", target.CatalogSourceFile))
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
	pkgs := published
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

	// The ClusterCatalog names the same image; the redirection is what the
	// state's mappings give; opm serve's bundles resolve through it.
	first := checkClusterCatalog(t, clone, cs.Spec.Image)
	state := readState(t, clone)
	ms := checkRedirection(t, clone, state)
	extFile := filepath.Join(clone, "rendered", "edge", target.ClusterExtensionFile(installPkg))
	ext := checkInstaller(t, extFile, corpus)
	served := checkResolvable(t, ctx, cs.Spec.Image, ms, dst)
	if len(served) != bundles {
		t.Errorf("opm serve lists %d bundles, want %d", len(served), bundles)
	}

	// Nothing changed: the same catalog image digest, no commit.
	res, err = Run(ctx, opts)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if res.Commit != "" {
		t.Errorf("second run committed %s", res.Commit)
	}

	// Delist one version: its bundle leaves the catalog, the
	// ClusterCatalog's digest moves, its own repositories leave the
	// redirection and the ones another listed version needs stay.
	victims, only, common := pickDelist(t, state)
	t.Logf("delisting %v: repositories only they need %v, shared with a listed version %v", victims, only, common)
	delisted := map[string]bool{} // package/CSV name
	for _, p := range corpus.Packages {
		for _, v := range victims {
			if p.Package == v.art && p.Version == v.version {
				delisted[p.Package+"/"+csvName(t, p.Dir)] = true
				if err := os.RemoveAll(filepath.Dir(p.ManifestPath)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if len(delisted) != len(victims) {
		t.Fatalf("corpus manifests of %v: %v", victims, delisted)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit(fmt.Sprintf("delist %v", victims), &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com"}}); err != nil {
		t.Fatal(err)
	}
	res, err = Run(ctx, opts)
	if err != nil {
		t.Fatalf("delist run: %v", err)
	}
	if len(res.Changes.Delisted) != len(victims) || res.Commit == "" {
		t.Fatalf("delist run: commit %q, changes %+v", res.Commit, res.Changes)
	}
	clone = cloneCatalog(t, catalogURL, gs)
	data, err = os.ReadFile(filepath.Join(clone, "rendered", "edge", target.CatalogSourceFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &cs); err != nil {
		t.Fatal(err)
	}
	if second := checkClusterCatalog(t, clone, cs.Spec.Image); second == first {
		t.Errorf("the ClusterCatalog still names %s after the delisting", first)
	}
	state = readState(t, clone)
	ms = checkRedirection(t, clone, state)
	covered := map[string]bool{}
	for _, m := range ms {
		covered[m.Source] = true
	}
	for _, r := range only {
		if covered[r] {
			t.Errorf("%s is still redirected, though only the delisted %v needed it", r, victims)
		}
	}
	for _, r := range common {
		if !covered[r] {
			t.Errorf("%s left the redirection with the delisted %v, though a listed version still needs it", r, victims)
		}
	}
	// The installer rules of the unchanged package come from the last
	// catalog image's notes now, and are the same.
	if again, _ := os.ReadFile(filepath.Join(clone, "rendered", "edge", target.ClusterExtensionFile(installPkg))); !bytes.Equal(again, ext) {
		t.Errorf("the ClusterExtension of the unchanged %s changed with the delisting of %v:\n%s\nwas:\n%s", installPkg, victims, again, ext)
	}
	served = checkResolvable(t, ctx, cs.Spec.Image, ms, dst)
	for id := range delisted {
		if served[id] {
			t.Errorf("opm serve still lists the delisted bundle %s", id)
		}
	}
	if len(served) != bundles-len(victims) {
		t.Errorf("after the delisting opm serve lists %d bundles, want %d", len(served), bundles-len(victims))
	}
}

// installPkg is the corpus package the test renders a ClusterExtension
// with a service account for: its bundle ships CRDs, ClusterRoles,
// Services and a Secret, whose installer RBAC is derived.
const installPkg = "edp-keycloak-operator"

// checkInstaller checks that the committed ClusterExtension file of
// installPkg is olm.ClusterExtension with the union of olm.Installer over
// the package's corpus bundles (read from disk), and returns it.
func checkInstaller(t *testing.T, file string, corpus *testenv.Corpus) []byte {
	t.Helper()
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rs []olm.InstallerRules
	for _, p := range corpus.Packages {
		if p.Package != installPkg {
			continue
		}
		b, err := bundle.Load(p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		r, err := olm.Installer(b)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		t.Fatalf("no corpus bundle of %s", installPkg)
	}
	want, err := olm.ClusterExtension(olm.ExtensionOptions{Package: installPkg, Namespace: "keycloak", ServiceAccount: "keycloak-installer", Catalog: olm.DefaultSourceName, Rules: olm.Merge(rs...)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the installer RBAC derived from the bundles:\n%s\nwant:\n%s", file, got, want)
	}
	return got
}

// cloneCatalog clones the main branch of the catalog repo at url.
func cloneCatalog(t *testing.T, url string, gs *testenv.GitServer) string {
	t.Helper()
	clone := t.TempDir()
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: url, ReferenceName: "refs/heads/main",
		Auth: &githttp.BasicAuth{Username: gs.Username, Password: gs.Password}}); err != nil {
		t.Fatal(err)
	}
	return clone
}

func readState(t *testing.T, clone string) *gitops.State {
	t.Helper()
	st, err := gitops.ReadState(mustReadDir(t, clone), "edge")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// checkClusterCatalog checks rendered/edge's ClusterCatalog against the
// CRD's shape the target promises (by digest, no polling) and that it
// names image, the CatalogSource's; it returns the image.
func checkClusterCatalog(t *testing.T, clone, image string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(clone, "rendered", "edge", target.ClusterCatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	var cc struct {
		Kind string `json:"kind"`
		Spec struct {
			Source struct {
				Type  string `json:"type"`
				Image struct {
					Ref                 string `json:"ref"`
					PollIntervalMinutes int    `json:"pollIntervalMinutes"`
				} `json:"image"`
			} `json:"source"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	if cc.Kind != "ClusterCatalog" || cc.Spec.Source.Type != "Image" || cc.Spec.Source.Image.Ref != image || cc.Spec.Source.Image.PollIntervalMinutes != 0 {
		t.Errorf("ClusterCatalog does not name %s by digest:\n%s", image, data)
	}
	return cc.Spec.Source.Image.Ref
}

// checkRedirection checks that the committed ImageDigestMirrorSet,
// ImageTagMirrorSet, containerd hosts.toml and CRI-O drop-in are exactly
// what the mappings of publish/state.yaml give (olm.Mirrors), and returns
// those mirrors: what the checks of the redirection resolve through.
func checkRedirection(t *testing.T, clone string, state *gitops.State) []olm.Mirror {
	t.Helper()
	ms, err := olm.Mirrors(state.Artifacts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no mirrored repository in publish/state.yaml")
	}
	want := map[string][]byte{}
	for kind, file := range map[string]string{olm.RedirectIDMS: target.IDMSFile, olm.RedirectITMS: target.ITMSFile} {
		if data, _ := olm.MirrorSet(kind, olm.DefaultSourceName, ms); data != nil {
			want["rendered/edge/"+file] = data
		}
	}
	hosts, err := olm.ContainerdHosts(ms, false)
	if err != nil {
		t.Fatal(err)
	}
	for h, data := range hosts {
		want[target.NodeConfigDir+"/edge/containerd/certs.d/"+h+"/hosts.toml"] = data
	}
	want[target.NodeConfigDir+"/edge/"+target.RegistriesConfFile] = olm.RegistriesConf(ms, false)
	for p, data := range want {
		got, err := os.ReadFile(filepath.Join(clone, filepath.FromSlash(p)))
		if err != nil {
			t.Errorf("redirection file %s: %v", p, err)
		} else if !bytes.Equal(got, data) {
			t.Errorf("%s is not what publish/state.yaml's mappings give:\n%s\nwant:\n%s", p, got, data)
		}
	}
	return ms
}

// checkResolvable serves the catalog image with its base image's own `opm
// serve` (olmtest.ExtractOPM; its cache enforced) and lists its
// bundles through operator-registry's gRPC client (ListBundles, then
// GetBundle for each CSV), as OLM's catalog operator does; every bundle's
// image and related images (spec.relatedImages of the CSV served, source
// references as the CSV keeps them) must be at
// dst through the redirection of ms: a reference at dst's host already is
// looked up as it is (the bundle image, which the catalog names at the
// destination), any other must be covered by olm.Resolve and each
// reference it resolves to must have a manifest at dst (HEAD, by digest or
// by tag as the CSV names it). It returns the served bundles as
// package/CSV name.
func checkResolvable(t *testing.T, ctx context.Context, image string, ms []olm.Mirror, dst *testenv.Registry) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	// The base image's own opm, as the catalog pod runs it.
	c, _ := olmtest.Serve(t, ctx, olmtest.ExtractOPM(t, image, dst.Options()...), olmtest.ExtractLayer(t, image, dst.Options()...))
	served := map[string]bool{}
	heads := map[string]error{}
	head := func(ref string) error {
		if err, ok := heads[ref]; ok {
			return err
		}
		r, err := name.ParseReference(ref)
		if err == nil {
			_, err = remote.Head(r, append(dst.Options(), remote.WithContext(ctx))...)
		}
		heads[ref] = err
		return err
	}
	images, empty := 0, 0
	for _, b := range olmtest.Bundles(t, ctx, c) {
		id := b.PackageName + "/" + b.CsvName
		if served[id] {
			continue // the same bundle in another channel
		}
		served[id] = true
		var csv struct {
			Spec struct {
				RelatedImages []struct {
					Name  string `json:"name"`
					Image string `json:"image"`
				} `json:"relatedImages"`
			} `json:"spec"`
		}
		// ListBundles leaves the CSV out when the bundle has an image (as
		// the SQLite server did); GetBundle serves it.
		full, err := c.GetBundle(ctx, b.PackageName, b.ChannelName, b.CsvName)
		if err != nil {
			t.Fatalf("GetBundle %s: %v", id, err)
		}
		if err := json.Unmarshal([]byte(full.CsvJson), &csv); err != nil {
			t.Fatalf("bundle %s: CSV served: %v", id, err)
		}
		refs := []string{b.BundlePath}
		for _, ri := range csv.Spec.RelatedImages {
			if ri.Image == "" {
				empty++ // upstream CSVs with an empty relatedImages entry: nothing to pull
				continue
			}
			refs = append(refs, ri.Image)
		}
		for _, ref := range refs {
			images++
			if strings.HasPrefix(ref, dst.Host+"/") {
				if err := head(ref); err != nil {
					t.Errorf("bundle %s: image %s is not at the destination: %v", id, ref, err)
				}
				continue
			}
			cands, err := olm.Resolve(ref, ms)
			if err != nil {
				t.Errorf("bundle %s: %v", id, err)
				continue
			}
			if len(cands) == 0 {
				t.Errorf("bundle %s: related image %s is not covered by the redirection", id, ref)
			}
			for _, cand := range cands {
				if err := head(cand); err != nil {
					t.Errorf("bundle %s: related image %s resolves to %s, missing at the destination: %v", id, ref, cand, err)
				}
			}
		}
	}
	t.Logf("opm serve of %s: %d bundles, %d images (%d distinct) resolvable at the destination; %d empty relatedImages entries", image, len(served), images, len(heads), empty)
	return served
}

// delistPick is a version of publish/state.yaml.
type delistPick struct{ art, version string }

// pickDelist picks the versions to delist from state, in state order: the
// first present version that alone needs some source repository, and the
// first other present version of an artifact with another present
// version that shares a repository with a version left listed (no corpus
// version does both). It returns them with the repositories only they
// need and those a listed version still needs (sorted, non-empty).
func pickDelist(t *testing.T, state *gitops.State) (victims []delistPick, only, common []string) {
	t.Helper()
	repos := func(v model.VersionRecord) map[string]bool {
		out := map[string]bool{}
		for _, img := range v.Images {
			r, err := name.ParseReference(img.Source)
			if err != nil {
				t.Fatal(err)
			}
			out[r.Context().RegistryStr()+"/"+r.Context().RepositoryStr()] = true
		}
		return out
	}
	users := map[string]int{}
	type ver struct {
		pick    delistPick
		repos   map[string]bool
		sibling bool // its artifact has another present version
	}
	var vs []ver
	for _, a := range state.Artifacts {
		present := 0
		for _, v := range a.Versions {
			if a.Present && v.Present {
				present++
			}
		}
		for _, v := range a.Versions {
			if a.Present && v.Present {
				rs := repos(v)
				for r := range rs {
					users[r]++
				}
				vs = append(vs, ver{delistPick{a.Name, v.Version}, rs, present > 1})
			}
		}
	}
	first := -1
	for i, v := range vs {
		for r := range v.repos {
			if users[r] == 1 && first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		t.Fatal("no corpus version alone needs a repository")
	}
	for i, v := range vs {
		if i == first || !v.sibling {
			continue
		}
		for r := range v.repos {
			n := users[r] - 1
			if vs[first].repos[r] {
				n--
			}
			if n > 0 {
				victims = []delistPick{vs[first].pick, v.pick}
				for r := range union(vs[first].repos, v.repos) {
					k := 0
					if vs[first].repos[r] {
						k++
					}
					if v.repos[r] {
						k++
					}
					if users[r] == k {
						only = append(only, r)
					} else {
						common = append(common, r)
					}
				}
				sort.Strings(only)
				sort.Strings(common)
				return victims, only, common
			}
		}
	}
	t.Fatal("no second corpus version shares a repository with a version left listed")
	return nil, nil, nil
}

func union(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// csvName is metadata.name of the CSV in a corpus bundle directory.
// csvSkipRange returns the olm.skipRange annotation of the CSV in dir.
func csvSkipRange(t *testing.T, dir string) string {
	t.Helper()
	var found string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".clusterserviceversion.yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var obj struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(data, &obj) == nil {
			found = obj.Metadata.Annotations["olm.skipRange"]
		}
		return nil
	})
	return found
}

// validRange reports whether s is a range blang/semver (OLM's and opm's)
// parses.
func validRange(s string) bool { _, err := blangsemver.ParseRange(s); return err == nil }

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
