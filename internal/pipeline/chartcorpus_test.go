package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/shard"

	"github.com/operator-publish/publish/internal/testenv"
)

// packChartDir packs testdata/charts/<name> (README.md there says what
// each chart is) as `helm package` does, REGISTRY replaced by registry
// and, when version is set, the chart's own version by it.
func packChartDir(t *testing.T, name, registry, version string) []byte {
	t.Helper()
	root := filepath.Join("testdata/charts", name)
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		text := strings.ReplaceAll(string(data), "REGISTRY", registry)
		if rel == "Chart.yaml" && version != "" {
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "version: ") {
					text = strings.Replace(text, line, "version: "+version, 1)
				}
			}
		}
		files[filepath.ToSlash(rel)] = text
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return chartArchive(t, name, files)
}

// pushCorpusChart packs and pushes testdata chart name at version to
// src/charts/<name>:<version> and writes its manifest with images as
// spec.relatedImages (below src/).
func (e *chartEnv) pushCorpusChart(t *testing.T, name, version string, images ...string) {
	t.Helper()
	a := packChartDir(t, name, e.reg.Host+"/src", version)
	e.archives[name+" "+version] = a
	ref := e.reg.Ref("src/charts/" + name + ":" + version)
	e.digests[name+" "+version] = testenv.PushChart(t, ref, a, nil, e.reg.Options()...)
	var related []string
	for _, img := range images {
		related = append(related, e.reg.Ref("src/"+img))
	}
	e.writeChart(t, name, version, "artifact: oci://"+ref, related...)
}

// pushBundle builds the tiny test bundle as operator art at version, its
// images below src/, and writes its manifest.
func (e *chartEnv) pushBundle(t *testing.T, art, v string) {
	t.Helper()
	for _, img := range []string{"manager", "worker"} {
		e.pushImage(t, "src/"+art+"/"+img+":v"+v)
	}
	dir := t.TempDir()
	copyTree(t, "testdata/bundles/tiny/1.0.0", dir, func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(s, "tiny", art), "REGISTRY", e.src), "1.0.0", v)
	})
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, e.src+"/"+art+"/bundle:v"+v), img, e.reg.Options()...); err != nil {
		t.Fatal(err)
	}
	e.writeManifest(t, art, v)
}

func (e *chartEnv) pushImage(t *testing.T, ref string) {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, e.reg.Ref(ref)), img, e.reg.Options()...); err != nil {
		t.Fatal(err)
	}
}

// TestChartsWithOperators: a package repo with two operators and two
// charts of the corpus' shapes (shop: a subchart the cluster's values
// enable and an initContainer; backup: a CronJob and a helm.sh/images
// annotation) goes through one `publish run` in one commit: the
// operators' Artifacts, the charts' sources and ChartRepos, every image
// at the destination (the subchart's because the cluster's values enable
// it, the annotated one), each chart pulled by the Helm SDK from the
// destination and loaded from the catalog's Git path. Then shop is
// upgraded and widgets (a CRD) listed while backup is delisted, and backup
// relisted.
func TestChartsWithOperators(t *testing.T) {
	e := newChartEnv(t)
	e.src = e.reg.Host + "/src"
	for _, img := range []string{"shop/web:1", "shop/init:1", "shop/cache:1", "widgets/controller:0.3", "backup/job:2", "backup/restore:2"} {
		e.pushImage(t, "src/"+img)
	}
	e.pushBundle(t, "alpha", "1.0.0")
	e.pushBundle(t, "beta", "1.0.0")
	e.pushCorpusChart(t, "shop", "1.0.0", "shop/web:1", "shop/init:1", "shop/cache:1")
	e.pushCorpusChart(t, "backup", "2.0.0", "backup/job:2", "backup/restore:2")
	os.MkdirAll(filepath.Join(e.source, "values/global"), 0o755)
	os.WriteFile(filepath.Join(e.source, "values/global/shop.yaml"), []byte("cache:\n  enabled: true\n"), 0o644)
	e.commit(t, "two operators and two charts")

	res, err := Run(context.Background(), e.options())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	repo, err := git.PlainOpen(e.catalog)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.CommitObject(plumbing.NewHash(res.Commit))
	if err != nil || head.NumParents() != 0 {
		t.Fatalf("not one commit: %v, %d parents", err, head.NumParents())
	}
	for _, p := range []string{"rendered/global/alpha/artifact_alpha.yaml", "rendered/global/beta/artifact_beta.yaml",
		"charts/global/shop/1.0.0/charts/cache/templates/statefulset.yaml", "charts/global/backup/2.0.0/Chart.yaml",
		"rendered/global/shop/chartrepo_shop.yaml", "rendered/global/backup/chartrepo_backup.yaml"} {
		if e.catalogFile(t, p) == "" {
			t.Errorf("the commit has no %s", p)
		}
	}
	st := e.state(t)
	e.helmAsUser(t, st["shop"], "shop", "1.0.0", []string{e.reg.Ref("src/shop/cache:1"), e.reg.Ref("src/shop/init:1"), e.reg.Ref("src/shop/web:1")})
	e.helmAsUser(t, st["backup"], "backup", "2.0.0", []string{e.reg.Ref("src/backup/job:2")})
	if _, err := remote.Head(mustRef(t, e.reg.Ref("mirror/src/backup/restore:2")), e.reg.Options()...); err != nil {
		t.Errorf("the image backup's helm.sh/images annotation names is not at the destination: %v", err)
	}
	if st["alpha"].Type != "" || st["alpha"].Versions[0].BundleDigest == "" {
		t.Errorf("alpha's record: %+v", st["alpha"])
	}

	// Upgrade shop, list widgets (a CRD in crds/), delist backup.
	e.pushCorpusChart(t, "shop", "1.1.0", "shop/web:1", "shop/init:1", "shop/cache:1")
	e.pushCorpusChart(t, "widgets", "0.3.0", "widgets/controller:0.3")
	os.RemoveAll(filepath.Join(e.source, "packages/backup"))
	e.commit(t, "shop 1.1.0, widgets, no backup")
	if res, err = Run(context.Background(), e.options()); err != nil {
		t.Fatalf("second run: %v", err)
	}
	for p, want := range map[string]bool{
		"charts/global/shop/1.0.0/Chart.yaml": true, "charts/global/shop/1.1.0/Chart.yaml": true,
		"charts/global/widgets/0.3.0/crds/widgets.example.com.yaml": true,
		"charts/global/backup/2.0.0/Chart.yaml":                     false, "rendered/global/backup/chartrepo_backup.yaml": false,
	} {
		if got := e.catalogFile(t, p) != ""; got != want {
			t.Errorf("after upgrade and delist: %s there: %v, want %v", p, got, want)
		}
	}

	// Relist backup.
	e.pushCorpusChart(t, "backup", "2.0.0", "backup/job:2", "backup/restore:2")
	e.commit(t, "backup again")
	if res, err = Run(context.Background(), e.options()); err != nil {
		t.Fatalf("relist: %v", err)
	}
	if strings.Join(res.Changes.Relisted, ";") != "backup 2.0.0" || e.catalogFile(t, "charts/global/backup/2.0.0/Chart.yaml") == "" {
		t.Errorf("relist: %+v", res.Changes)
	}
}

// TestChartsSplitRun: a run split in two parts and merged publishes the
// charts as one run does: the OCI chart copied by the part that owns its
// repository, the classic repository's chart pushed (once: then a HEAD)
// and its digest recorded by the merge.
func TestChartsSplitRun(t *testing.T) {
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeChart(t, "cron", "0.1.0", "artifact: "+e.repoURL+"\n  chart: cron", e.reg.Ref("src/cron/job:1"))
	e.writeValues(t)
	e.commit(t, "two charts")
	ctx := context.Background()
	var results []*report.Report
	var names []string
	for i := 1; i <= 2; i++ {
		o := e.options()
		o.Shard = shard.Shard{Index: i, Total: 2}
		res, err := Run(ctx, o)
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		r := report.New("run")
		r.AddMirror(res.Mirror, nil)
		r.AddShard(res.Shard.Part, res.Shard.Plan, res.Shard.Items)
		results = append(results, r)
		names = append(names, fmt.Sprintf("part-%d.json", i))
	}
	shards, err := CheckShardResults(results, names)
	if err != nil {
		t.Fatal(err)
	}
	o := e.options()
	o.Shards = shards
	if _, err := Run(ctx, o); err != nil {
		t.Fatalf("merge: %v", err)
	}
	st := e.state(t)
	img, err := remote.Image(mustRef(t, e.reg.Ref("mirror/stable/cron:0.1.0")), e.reg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); st["cron"].Versions[0].BundleDigest != d.String() {
		t.Errorf("the merge recorded cron's digest %q, the destination has %s", st["cron"].Versions[0].BundleDigest, d)
	}
	if st["web"].Versions[0].BundleDigest != e.digests["web 1.0.0"] {
		t.Errorf("web's digest %q, want the source's", st["web"].Versions[0].BundleDigest)
	}
	e.checkCatalog(t, "cron", "0.1.0")
}
