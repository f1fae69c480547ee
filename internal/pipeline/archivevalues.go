package pipeline

// The clusters' chart values in the offline archive (docs/charts.md,
// "Archives and signatures"): package renders each chart once per
// cluster with that cluster's values file and Kubernetes version, as run
// does, carries every image a cluster renders, and carries the values
// files themselves below packages/.clusters/ (archive.ChartClustersDir),
// so that push --catalog renders each chart for its cluster as run
// would.

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// chartClusterSettings is the file <cluster>.yaml of
// archive.ChartClustersDir: what a cluster renders its charts for besides
// its values files.
type chartClusterSettings struct {
	KubernetesVersion string `yaml:"kubernetesVersion,omitempty"`
}

// chartOptions is the Options that reads a chart for cluster as run
// does (kindEnv): o's package repo, values files and Kubernetes versions.
func (o PackageOptions) chartOptions(cluster string) Options {
	return Options{Source: o.Source, Cluster: cluster, ChartValues: o.ChartValues, KubeVersion: o.KubeVersion}
}

// readPerCluster is package's Read step: every version read as over no
// cluster (readWith: a chart with its own values), then each chart read
// again for every cluster of o.Clusters that selects it and gives it a
// values file or a Kubernetes version, from the archive already pulled
// (kind.ReadChartArchive), its images added to the version's, so that
// the archive carries (and the verify policy checks) every image a
// cluster renders. Errors: readWith's; an *InputError naming the
// manifest and the cluster for a chart that does not render with a
// cluster's values (or whose values file cannot be read).
func (o PackageOptions) readPerCluster(mc *mirror.Client) func(context.Context, []*model.Version) error {
	read := readWith(mc, o.Log, time.Now)
	return func(ctx context.Context, vs []*model.Version) error {
		if err := read(ctx, vs); err != nil {
			return err
		}
		for _, cl := range o.Clusters {
			cluster := cl.Name
			env := o.chartOptions(cluster).kindEnv(mc)
			for _, v := range vs {
				data := kind.ChartArchive(v)
				if data == nil || !cl.selects(v.Manifest.Artifact) || (o.valuesFile(cluster, v.Manifest.Artifact) == "" && env.KubeVersion == "") {
					continue // not a chart, not the cluster's, or rendered as over no cluster
				}
				cv := &model.Version{Manifest: v.Manifest}
				if err := kind.ReadChartArchive(env, cv, data); err != nil {
					return inputErr(fmt.Errorf("%s: %w", v.Where(), err))
				}
				if c := kind.ChartOf(cv); c != nil && c.RenderErr != nil {
					return inputErr(fmt.Errorf("%s: the chart %s does not render for cluster %s (publish.yaml clusters.%s): %v; publish lint and publish plan show it", v.Where(), v.Ref(), cluster, cluster, c.RenderErr))
				}
				v.Images = unionInOrder(v.Images, cv.Images)
			}
		}
		return nil
	}
}

// valuesFile is o.ChartValues(cluster, artifact), "" without ChartValues.
func (o PackageOptions) valuesFile(cluster, artifact string) string {
	if o.ChartValues == nil {
		return ""
	}
	return o.ChartValues(cluster, artifact)
}

// unionInOrder is a then the entries of b that a lacks, in order.
func unionInOrder(a, b []string) []string {
	seen := map[string]bool{}
	out := append([]string(nil), a...)
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// packageFiles are the files of the archive below packages/: every
// PackageManifest of ms (archiveFiles; manifests counts them), then the
// clusters' chart files of selected (chartClusterFiles). Errors: theirs.
func (o PackageOptions) packageFiles(ms []*manifest.PackageManifest, selected []*model.Version) (files []archive.File, manifests int, err error) {
	if files, err = archiveFiles(o.Source, o.PackagesDir, ms); err != nil {
		return nil, 0, err
	}
	clusters, err := o.chartClusterFiles(selected)
	return append(files, clusters...), len(files), err
}

// chartClusterFiles are the archive files below
// archive.ChartClustersDir for o.Clusters: <cluster>.yaml (its Kubernetes
// version) and, for each chart artifact among selected that the cluster
// selects, the cluster's values file of it, as <cluster>/<artifact>.yaml, byte for byte. Values
// files are read from the package repo through os.Root, as run reads
// them. Errors: *InputError naming a values file that cannot be read.
func (o PackageOptions) chartClusterFiles(selected []*model.Version) ([]archive.File, error) {
	charts := map[string]bool{}
	for _, v := range selected {
		if kind.ChartArchive(v) != nil {
			charts[v.Manifest.Artifact] = true
		}
	}
	if len(charts) == 0 {
		return nil, nil
	}
	var out []archive.File
	for _, cl := range o.Clusters {
		cluster := cl.Name
		st := chartClusterSettings{}
		if o.KubeVersion != nil {
			st.KubernetesVersion = o.KubeVersion(cluster)
		}
		data, err := yaml.Marshal(st)
		if err != nil {
			return nil, err
		}
		out = append(out, archive.File{Path: archive.ChartClustersDir + cluster + ".yaml", Data: data})
		env := o.chartOptions(cluster).kindEnv(nil)
		for _, art := range sortedKeys(charts) {
			if env.Values == nil || !cl.selects(art) {
				continue
			}
			vf, err := env.Values(cluster, art)
			if err != nil {
				return nil, inputErr(err)
			}
			if vf != nil {
				out = append(out, archive.File{Path: archive.ChartClustersDir + cluster + "/" + art + ".yaml", Data: vf.Data})
			}
		}
	}
	return out, nil
}

// carriedChartClusters makes o read each chart as the connected side's
// cluster does, from what the archive carries below
// archive.ChartClustersDir (files, written below dir/packages by
// publishArchive): its values files (o.ChartValues, paths below dir) and
// Kubernetes versions (o.KubeVersion; a cluster the archive gives none
// keeps o's own, publish.yaml's of this side). An archive that carries
// none (one packaged before, or a repo without charts): the charts' own
// values. Errors: a cluster file that does not parse (*InputError).
func carriedChartClusters(o *Options, files []archive.File) error {
	values := map[string]bool{}
	kube := map[string]string{}
	for _, f := range files {
		if cluster, ok := strings.CutSuffix(f.Path, ".yaml"); ok && !strings.Contains(cluster, "/") {
			var st chartClusterSettings
			if err := yaml.Unmarshal(f.Data, &st); err != nil {
				return inputErr(fmt.Errorf("the archive's %s%s%s: %w", archive.PackagesDir, archive.ChartClustersDir, f.Path, err))
			}
			kube[cluster] = st.KubernetesVersion
			continue
		}
		values[f.Path] = true
	}
	o.ChartValues = nil
	if len(values) > 0 {
		o.ChartValues = func(cluster, artifact string) string {
			p := cluster + "/" + artifact + ".yaml"
			if !values[p] {
				return ""
			}
			return path.Join("packages", archive.ChartClustersDir, p)
		}
	}
	own := o.KubeVersion
	o.KubeVersion = func(cluster string) string {
		if kv := kube[cluster]; kv != "" {
			return kv
		}
		if own != nil {
			return own(cluster)
		}
		return ""
	}
	return nil
}

// writeArchiveFiles writes files below dir/sub (slash-separated paths).
func writeArchiveFiles(dir, sub string, files []archive.File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(sub), filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
