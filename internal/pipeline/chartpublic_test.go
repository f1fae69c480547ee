//go:build publiccharts

package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/testenv"
)

// publicChart is a chart of the public chart corpus: <corpus>/charts/<dir>
// is an upstream chart's directory, unchanged (charts/README.md of the
// corpus names its repository, path, commit and license).
type publicChart struct {
	dir, version string
	// values is cluster global's values file ("" for none).
	values string
	// own are the images the chart renders with its own values (lint),
	// global those with cluster global's values (run), in full.
	own, global []string
	// files are files of the chart the catalog's Git path must hold: the
	// shape the chart stands for (a subchart, a CRD, a CronJob). A
	// subchart vendored as an archive (charts/x-1.0.0.tgz) is a directory
	// in the packed chart, as `helm package` writes it.
	files []string
}

// jenkinsImages are the images of the jenkins chart: its StatefulSet's,
// the inbound-agent its artifacthub.io/images annotation names (rendered
// only inside the JCasC ConfigMap), and bats, which only its Helm test
// hook Pod (helm.sh/hook: test-success) runs: `helm test` needs it, so
// an image of a hook is an image of the chart (upstream's annotation
// leaves it out).
var jenkinsImages = []string{"docker.io/bats/bats:1.14.0", "docker.io/jenkins/inbound-agent:3385.vf1123fb_515da_-1",
	"docker.io/jenkins/jenkins:2.568.2-jdk21", "docker.io/kiwigrid/k8s-sidecar:2.10.1"}

// publicCharts are the charts of the corpus and what each is known to
// render. Their images point at public registries: the test serves
// generated stand-ins of them through source mirrors (sourceMirrors), so
// the charts stay byte for byte upstream's.
var publicCharts = []publicChart{
	{dir: "descheduler", version: "0.35.0",
		own:    []string{"registry.k8s.io/descheduler/descheduler:v0.35.0"},
		global: []string{"registry.k8s.io/descheduler/descheduler:v0.35.0"},
		files:  []string{"templates/cronjob.yaml"}},
	{dir: "external-dns", version: "1.21.1",
		own:    []string{"registry.k8s.io/external-dns/external-dns:v0.21.0"},
		global: []string{"registry.k8s.io/external-dns/external-dns:v0.21.0"},
		files:  []string{"crds/dnsendpoints.externaldns.k8s.io.yaml"}},
	{dir: "metallb", version: "0.16.1", values: "frrk8s:\n  enabled: false\n",
		own:    []string{"quay.io/frrouting/frr:10.4.3", "quay.io/metallb/controller:v0.16.1", "quay.io/metallb/frr-k8s:v0.0.25", "quay.io/metallb/speaker:v0.16.1"},
		global: []string{"quay.io/metallb/controller:v0.16.1", "quay.io/metallb/speaker:v0.16.1"},
		files:  []string{"charts/crds/templates/crds.yaml", "charts/frr-k8s/Chart.yaml"}},
	{dir: "jenkins", version: "5.9.53",
		own:    jenkinsImages,
		global: jenkinsImages,
		files:  []string{"templates/tests/jenkins-test.yaml"}},
}

// publicChartsDir returns <corpus>/charts, or skips (fails in CI) when
// the corpus has none.
func publicChartsDir(t *testing.T) string {
	t.Helper()
	testenv.Short(t, "starts a registry and packs charts")
	corpus, _ := testenv.CorpusDir()
	d := filepath.Join(corpus, "charts")
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		testenv.Skipf(t, "the public chart corpus %s is missing: upstream charts, unchanged, one directory each (docs/testing.md, Public charts)", d)
	}
	return d
}

// packPublicChart packs dir as `helm package` does (the Helm SDK's
// loader.LoadDir, .helmignore applied, and chartutil.Save, the two steps
// of its action.Package) and returns the archive.
func packPublicChart(t *testing.T, dir string) []byte {
	t.Helper()
	c, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatalf("helm loads %s: %v", dir, err)
	}
	file, err := chartutil.Save(c, t.TempDir())
	if err != nil {
		t.Fatalf("helm package %s: %v", dir, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPublicCharts: real public charts (a CronJob; CRDs in crds/; a
// vendored subchart of templated CRDs and a packaged one that cluster
// global's values turn off; an artifacthub.io/images annotation and a
// Helm test hook), packed by the Helm SDK and pushed as OCI charts to a
// registry with TLS and a password, go through `publish lint` and
// `publish run` (whose image discovery follows the cluster's values:
// metallb's frr-k8s images are not rendered there). Then the Helm SDK,
// as a user would, pulls each from the destination by the reference the
// catalog records, loads it from the catalog's Git path, renders it with
// the cluster's values, and finds every image at the destination.
func TestPublicCharts(t *testing.T) {
	dir := publicChartsDir(t)
	e := newChartEnv(t)
	mirrors := map[string]registry.SourceMirror{}
	for _, c := range publicCharts {
		if _, err := os.Stat(filepath.Join(dir, c.dir, "Chart.yaml")); err != nil {
			t.Fatalf("the public chart corpus has no chart %s (%v): docs/testing.md says what it holds", c.dir, err)
		}
		a := packPublicChart(t, filepath.Join(dir, c.dir))
		ref := e.reg.Ref("src/charts/" + c.dir + ":" + c.version)
		e.archives[c.dir+" "+c.version] = a
		e.digests[c.dir+" "+c.version] = testenv.PushChart(t, ref, a, nil, e.reg.Options()...)
		related := map[string]bool{}
		for _, img := range append(append([]string{}, c.own...), c.global...) {
			if related[img] {
				continue
			}
			related[img] = true
			r, err := name.ParseReference(img)
			if err != nil {
				t.Fatal(err)
			}
			host := r.Context().RegistryStr()
			mirrors[host] = registry.SourceMirror{From: host, To: e.reg.Host + "/upstream/" + host}
			e.pushImage(t, "upstream/"+host+"/"+r.Context().RepositoryStr()+":"+r.Identifier())
		}
		list := make([]string, 0, len(related))
		for img := range related {
			list = append(list, img)
		}
		sort.Strings(list)
		e.writeChart(t, c.dir, c.version, "artifact: oci://"+ref, list...)
		if c.values != "" {
			p := filepath.Join(e.source, "values/global", c.dir+".yaml")
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(c.values), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.commit(t, "public charts")
	mo := e.mirrorOptions()
	for _, m := range mirrors {
		mo.SourceMirrors = append(mo.SourceMirrors, m)
	}
	lo := mirror.Options{CAFile: e.reg.CAFile, Src: mo.Src, SourceMirrors: mo.SourceMirrors} // lint reads the sources only
	fs, err := Lint(context.Background(), LintOptions{Source: e.source, Mirror: lo})
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	// Warnings only, of the manifests written here (manifest/display-name,
	// manifest/related-image-digest); and no chart/unused-related: every
	// image listed was found in the render (the CronJob's, the vendored
	// subchart's, the hook's) or the annotation.
	for _, f := range fs {
		if f.Severity == lint.Error || f.Rule == lint.RuleChartUnusedRelated {
			t.Errorf("lint: %s", f)
		}
	}
	o := e.options()
	o.Mirror = mo
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Commit == "" {
		t.Fatal("run committed nothing")
	}
	// Cluster global's values turn metallb's frr-k8s subchart off: its
	// two images are listed but not rendered there.
	var unused []string
	for _, f := range res.Findings {
		if f.Rule == lint.RuleChartUnusedRelated {
			unused = append(unused, f.Artifact+" "+f.Message)
		}
	}
	if len(unused) != 2 || !strings.Contains(strings.Join(unused, "\n"), "metallb spec.relatedImages lists quay.io/metallb/frr-k8s:v0.0.25") {
		t.Errorf("run's chart/unused-related findings: %q, want metallb's two frr-k8s images", unused)
	}
	st := e.state(t)
	for _, c := range publicCharts {
		e.checkCatalog(t, c.dir, c.version)
		for _, f := range c.files {
			if e.catalogFile(t, "charts/global/"+c.dir+"/"+c.version+"/"+f) == "" {
				t.Errorf("the catalog's Git path of %s has no %s", c.dir, f)
			}
		}
		if st[c.dir].Versions[0].BundleDigest != e.digests[c.dir+" "+c.version] {
			t.Errorf("%s: the catalog records %q, the source digest is %s", c.dir, st[c.dir].Versions[0].BundleDigest, e.digests[c.dir+" "+c.version])
		}
		e.helmAsUser(t, st[c.dir], c.dir, c.version, c.global)
	}
}
