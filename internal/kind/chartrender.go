package kind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmlint "helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/scratch"
)

// KubeVersion is the Kubernetes version charts are rendered and linted
// for (the .Capabilities.KubeVersion the templates see, and what a
// chart's kubeVersion constraint is checked against): one fixed version,
// so that a render does not depend on the machine or the Helm build.
const KubeVersion = "v1.33.0"

// chartNamespace is the release namespace of the offline render.
const chartNamespace = "default"

// kubeVersion parses kv, a cluster's Kubernetes version
// (clusters.<cluster>.kubernetesVersion), as Helm does; "" or a version
// that does not parse (publish.yaml's check refuses it) is KubeVersion.
func kubeVersion(kv string) *common.KubeVersion {
	if kv != "" {
		if v, err := common.ParseKubeVersion(kv); err == nil {
			return v
		}
	}
	v, _ := common.ParseKubeVersion(KubeVersion)
	return v
}

// capabilities are the render's: Helm's default API versions with the
// Kubernetes version kv (kubeVersion).
func capabilities(kv string) *common.Capabilities {
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion(kv)
	return caps
}

// rendered is what renderChart found.
type rendered struct {
	objects int      // objects rendered, CRDs of crds/ included
	images  []string // sorted, each once
	// sources are what named each image (by image, as in images): the
	// rendered file, the annotation of a chart or subchart.
	sources map[string][]lint.ImageSource
}

// renderChart renders the chart archive offline with the Helm SDK's
// template engine, as `helm template` would for a release named release
// in chartNamespace: the chart's values merged with vals (the cluster's
// values file), subcharts enabled by their conditions and tags, no
// cluster (no lookup). It counts the objects and collects the images:
// those of every workload (Pod, Deployment, StatefulSet, DaemonSet,
// ReplicaSet, Job, CronJob: containers, initContainers,
// ephemeralContainers), and those the helm.sh/images and
// artifacthub.io/images annotations of Chart.yaml list, of the chart and
// of every subchart enabled, each written in full (lint.FullImage:
// docker.io/library/nginx:1.27 for nginx:1.27), each with what named it.
// kv is the Kubernetes version the templates see (kubeVersion). The error
// says why it does not render.
func renderChart(archive []byte, release string, vals map[string]any, kv string) (*rendered, error) {
	c, err := loadChart("", archive) // a chart of its own: dependencies are processed in place
	if err != nil {
		return nil, err
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	top, err := commonutil.ToRenderValues(c, vals, common.ReleaseOptions{Name: release, Namespace: chartNamespace, IsInstall: true, Revision: 1}, capabilities(kv))
	if err != nil {
		return nil, err
	}
	files, err := engine.Engine{}.RenderWithContext(context.Background(), c, top)
	if err != nil {
		return nil, err
	}
	r := &rendered{objects: len(c.CRDObjects()), sources: map[string][]lint.ImageSource{}}
	add := func(img string, src lint.ImageSource) {
		img = lint.FullImage(strings.TrimSpace(img))
		if img == "" || slices.Contains(r.sources[img], src) {
			return
		}
		if r.sources[img] == nil {
			r.images = append(r.images, img)
		}
		r.sources[img] = append(r.sources[img], src)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml") && !strings.HasSuffix(n, ".json") {
			continue // NOTES.txt, helpers
		}
		k, err := objectImages(files[n], func(img string) { add(img, lint.ImageSource{Source: lint.SourceRender, File: n}) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		r.objects += k
	}
	annotatedImages(c, add)
	sort.Strings(r.images)
	return r, nil
}

// podSpecPath is where each workload kind holds its pod spec.
var podSpecPath = map[string][]string{
	"Pod":         {"spec"},
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
}

// objectImages reads the YAML documents of one rendered file, gives add
// the image of every container of its workloads and returns the number
// of objects (non-empty documents). The error is a document that is not
// YAML.
func objectImages(text string, add func(string)) (int, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	n := 0
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if len(obj) == 0 {
			continue
		}
		n++
		kind, _ := obj["kind"].(string)
		path, ok := podSpecPath[kind]
		if !ok {
			continue
		}
		spec := dig(obj, path...)
		for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
			cs, _ := spec[list].([]any)
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					if img, ok := m["image"].(string); ok {
						add(img)
					}
				}
			}
		}
	}
}

// dig returns the mapping at path below m (nil when there is none).
func dig(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

// Image annotations of Chart.yaml: helm.sh/images (Helm's HIP-0015,
// https://helm.sh/community/hips/hip-0015) and artifacthub.io/images
// (https://artifacthub.io/docs/topics/annotations/helm). Both are a YAML
// list of entries with an image field; HIP-0015's optional dependency
// field names the subchart an image belongs to (other fields ignored).
var imageAnnotations = []string{"helm.sh/images", "artifacthub.io/images"}

// annotatedImages gives add the images the image annotations of c and of
// its dependencies (those ProcessDependencies kept: enabled by their
// conditions and tags) list, each with the annotation and the chart
// (chart.ChartFullPath: web, web/charts/redis) that named it; an entry
// naming a dependency (HIP-0015's dependency field) counts only when that
// dependency is enabled. An annotation that is not such a list is
// skipped.
func annotatedImages(c *chart.Chart, add func(string, lint.ImageSource)) {
	enabled := map[string]bool{}
	for _, d := range c.Dependencies() {
		enabled[d.Name()] = true
	}
	if c.Metadata != nil {
		for _, a := range imageAnnotations {
			var entries []struct {
				Image      string `yaml:"image"`
				Dependency string `yaml:"dependency"`
			}
			if s := c.Metadata.Annotations[a]; s != "" && yaml.Unmarshal([]byte(s), &entries) == nil {
				for _, e := range entries {
					if e.Dependency == "" || enabled[e.Dependency] {
						add(e.Image, lint.ImageSource{Source: lint.SourceAnnotation, Annotation: a, Chart: c.ChartFullPath()})
					}
				}
			}
		}
	}
	for _, d := range c.Dependencies() {
		annotatedImages(d, add)
	}
}

// helmLint runs Helm's own chart checks (the Helm SDK's lint.RunAll, as
// `helm lint` does: Chart.yaml, values and schema, templates rendered
// with vals, dependencies, CRDs) on the chart archive, expanded in a
// temporary directory (internal/scratch: what a killed run left is
// removed by the next), for the Kubernetes version kv (kubeVersion). INFO
// messages are left out; ERROR is lint.Error, the rest lint.Warning. A
// chart that cannot be expanded is one error message.
func helmLint(archive []byte, name string, vals map[string]any, kv string) []lint.HelmMessage {
	dir, err := scratch.MkdirTemp("", "chart")
	if err != nil {
		return []lint.HelmMessage{{Severity: lint.Error, Message: "cannot run Helm's checks: " + err.Error()}}
	}
	defer os.RemoveAll(dir)
	if err := chartutil.Expand(dir, bytes.NewReader(archive)); err != nil {
		return []lint.HelmMessage{{Severity: lint.Error, Message: "cannot expand the chart: " + err.Error()}}
	}
	res := helmlint.RunAll(filepath.Join(dir, name), vals, chartNamespace, helmlint.WithKubeVersion(kubeVersion(kv)))
	var out []lint.HelmMessage
	for _, m := range res.Messages {
		if m.Severity < support.WarningSev {
			continue
		}
		sev := lint.Warning
		if m.Severity == support.ErrorSev {
			sev = lint.Error
		}
		msg := ""
		if m.Err != nil {
			msg = m.Err.Error()
		}
		out = append(out, lint.HelmMessage{Severity: sev, Path: m.Path, Message: msg})
	}
	return out
}
