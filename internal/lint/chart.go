package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-publish/publish/internal/manifest"
)

// Chart is what the chart kind of package (internal/kind) gives the lint
// engine of one version of spec.type chart, for one cluster (Input.Charts):
// facts only, so that this package needs no Helm.
type Chart struct {
	// ReadErr is why the chart could not be used (missing at the source,
	// not a chart archive): chart/not-found. The other fields are then
	// zero.
	ReadErr error
	// Name and Version are Chart.yaml's name and version.
	Name, Version string
	// Helm are the messages of Helm's own chart checks (the Helm SDK's
	// lint package: Chart.yaml, values, templates, dependencies, CRDs),
	// its INFO messages left out: chart/helm.
	Helm []HelmMessage
	// Cluster is the cluster the chart was rendered for ("" for none: the
	// chart's own values), Values the values file merged for it ("" for
	// none), for messages.
	Cluster, Values string
	// RenderErr is why the chart did not render: chart/render.
	RenderErr error
	// Objects counts the objects the chart rendered (chart/empty when
	// none and RenderErr is nil).
	Objects int
	// Images are the images the rendered workloads run and the chart's
	// image annotations list, each once, sorted.
	Images []string
	// Sources say what named each of Images (by image): the rendered
	// file (for Cluster, with Values), or an image annotation of the
	// chart or of a subchart.
	Sources map[string][]ImageSource
	// KubeVersion is the Kubernetes version the chart was rendered for:
	// the cluster's (publish.yaml clusters.<cluster>.kubernetesVersion),
	// "" for the fixed default (kind.KubeVersion), when the cluster gives
	// none.
	KubeVersion string
	// KubeConstraint is Chart.yaml's kubeVersion when KubeVersion does not
	// satisfy it (chart/kube-version), "" otherwise.
	KubeConstraint string
}

// The sources of a chart's image (ImageSource.Source).
const (
	SourceRender        = "render"        // a workload of the rendered templates
	SourceAnnotation    = "annotation"    // helm.sh/images or artifacthub.io/images of Chart.yaml
	SourceRelatedImages = "relatedImages" // spec.relatedImages of the manifest
	SourceArtifact      = "artifact"      // spec.artifact: the chart itself
)

// ImageSource is one thing that named an image of a chart: the plan shows
// them (docs/plan-json.md, "namedBy").
type ImageSource struct {
	// Source is SourceRender, SourceAnnotation, SourceRelatedImages or
	// SourceArtifact.
	Source string `json:"source"`
	// File is the rendered template that runs the image (render), as Helm
	// names it: web/templates/deployment.yaml,
	// web/charts/redis/templates/redis.yaml.
	File string `json:"file,omitempty"`
	// Cluster and Values are the cluster the chart was rendered for and
	// its values file (render; "" for none: the chart's own values).
	Cluster string `json:"cluster,omitempty"`
	Values  string `json:"values,omitempty"`
	// Annotation is helm.sh/images or artifacthub.io/images and Chart the
	// chart whose Chart.yaml has it, a subchart as Helm's full path
	// (web/charts/redis) (annotation).
	Annotation string `json:"annotation,omitempty"`
	Chart      string `json:"chart,omitempty"`
}

// String is the source for a person: "render of web/templates/a.yaml for
// cluster east (values values/east/web.yaml)", "helm.sh/images of chart
// web/charts/redis", "spec.relatedImages", "spec.artifact".
func (s ImageSource) String() string {
	switch s.Source {
	case SourceRender:
		out := "render of " + s.File
		if s.Cluster != "" {
			out += " for cluster " + s.Cluster
		}
		if s.Values != "" {
			out += " (values " + s.Values + ")"
		} else {
			out += " (the chart's own values)"
		}
		return out
	case SourceAnnotation:
		return s.Annotation + " of chart " + s.Chart
	case SourceRelatedImages:
		return "spec.relatedImages"
	case SourceArtifact:
		return "spec.artifact"
	}
	return s.Source
}

// HelmMessage is one message of Helm's chart checks.
type HelmMessage struct {
	// Severity is Error or Warning, as Helm grades the message.
	Severity Severity
	// Path is the file of the chart Helm names ("Chart.yaml",
	// "templates/deployment.yaml").
	Path    string
	Message string
}

// chartRules are the chart/* findings of the chart of f, all at the line
// of spec.artifact (the file of the chart in BundlePath): for cluster
// target "olm" (refuse) chart/target only.
func (f *mfile) chartRules(c *Chart, m *manifest.PackageManifest, refuse string) []Finding {
	var out []Finding
	add := func(rule, inChart, msg string) *Finding {
		x := f.bundleFinding(rule, inChart, msg, "")
		out = append(out, x)
		return &out[len(out)-1]
	}
	if refuse != "" {
		add(RuleChartTarget, "", fmt.Sprintf("the %s target publishes OLM bundles only: a Helm chart (spec.type chart) cannot be listed on a cluster of target %s", refuse, refuse))
		return out
	}
	if c.ReadErr != nil {
		add(RuleChartNotFound, "", c.ReadErr.Error())
		return out
	}
	for _, h := range c.Helm {
		add(RuleChartHelm, h.Path, h.Message).Severity = h.Severity
	}
	out = append(out, f.chartIdentity(c, m)...)
	on := ""
	if c.Cluster != "" {
		on = " for cluster " + c.Cluster
		if c.Values != "" {
			on += " (values " + c.Values + ")"
		}
	}
	if c.KubeConstraint != "" {
		add(RuleChartKubeVersion, "Chart.yaml", fmt.Sprintf("the chart %s %s needs kubeVersion %q (Chart.yaml), which excludes Kubernetes %s of cluster %s (publish.yaml clusters.%s.kubernetesVersion)", c.Name, c.Version, c.KubeConstraint, c.KubeVersion, c.Cluster, c.Cluster))
	}
	switch {
	case c.RenderErr != nil:
		add(RuleChartRender, "templates/", fmt.Sprintf("the chart %s %s does not render%s: %v", c.Name, c.Version, on, c.RenderErr))
		return out
	case c.Objects == 0:
		add(RuleChartEmpty, "templates/", fmt.Sprintf("the chart %s %s renders no object%s", c.Name, c.Version, on))
		return out
	}
	related := map[string]bool{}
	for _, r := range m.Spec.RelatedImages {
		related[FullImage(r)] = true
	}
	rendered := map[string]bool{}
	for _, img := range c.Images {
		rendered[FullImage(img)] = true
		if !related[FullImage(img)] {
			add(RuleChartMissingRelated, "templates/", fmt.Sprintf("the chart renders image %s%s, which spec.relatedImages does not list", img, on))
		}
	}
	for _, r := range m.Spec.RelatedImages {
		if !rendered[FullImage(r)] {
			add(RuleChartUnusedRelated, "", fmt.Sprintf("spec.relatedImages lists %s, which the chart never renders%s", r, on))
		}
	}
	return out
}

// chartIdentity is chart/metadata: Chart.yaml's name is the chart the
// manifest names (manifest.ChartSource.Name) and its version is
// spec.version (a leading v aside).
func (f *mfile) chartIdentity(c *Chart, m *manifest.PackageManifest) []Finding {
	var out []Finding
	if src, err := manifest.ParseChartSource(m.Spec.Artifact, m.Spec.Chart); err == nil && c.Name != src.Name {
		out = append(out, f.bundleFinding(RuleChartMetadata, "Chart.yaml", fmt.Sprintf("Chart.yaml's name is %q but the manifest names the chart %q", c.Name, src.Name), ""))
	}
	cv, err := semver.Parse(strings.TrimPrefix(c.Version, "v"))
	if err != nil || cv.String() != m.Version.String() {
		out = append(out, f.bundleFinding(RuleChartMetadata, "Chart.yaml", fmt.Sprintf("Chart.yaml's version is %q but spec.version says %s", c.Version, m.Version), ""))
	}
	return out
}

// chartFindings runs chartRules on every manifest with a chart in in.
func chartFindings(in Input, ms []*manifest.PackageManifest, byPath map[string]*mfile) []Finding {
	var out []Finding
	paths := make([]string, 0, len(in.Charts))
	for p := range in.Charts {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	at := map[string]*manifest.PackageManifest{}
	for _, m := range ms {
		at[m.Path] = m
	}
	for _, p := range paths {
		f, m := byPath[p], at[p]
		if f == nil || m == nil {
			continue
		}
		out = append(out, f.chartRules(in.Charts[p], m, in.RefuseCharts)...)
	}
	return out
}
