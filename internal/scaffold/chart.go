package scaffold

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// isChart reports whether a --artifact names a Helm chart: an oci://
// reference or a chart repository URL (a plain image reference is a
// bundle).
func isChart(ref string) bool {
	return strings.HasPrefix(ref, "oci://") || strings.HasPrefix(ref, "https://") || strings.HasPrefix(ref, "http://")
}

// createChart is Create for a chart: it reads the chart through the
// chart kind (internal/kind: pull, load, render with the chart's own
// values) and writes a PackageManifest of spec.type chart:
// metadata.name <chart>.v<version>, spec.version Chart.yaml's version,
// spec.info from Chart.yaml (displayName the chart's name, description),
// spec.relatedImages every image the chart renders or annotates, spec.arch
// only from Options.Platforms. Errors: *InputError for a chart that is
// missing, not a chart or does not render, a repository chart without
// Chart or Version; else a registry or file error.
func createChart(ctx context.Context, o Options, out string) (string, error) {
	src, err := manifest.ParseChartSource(o.Artifact, o.Chart)
	if err != nil {
		return "", inputErr(fmt.Errorf("--artifact %q: %w", o.Artifact, err))
	}
	version := strings.TrimPrefix(o.Version, "v")
	if src.RepoURL != "" && version == "" {
		return "", inputErr(fmt.Errorf("--artifact %s is a chart repository: give --chart and --version", o.Artifact))
	}
	ver, err := semver.Parse(version)
	if err != nil {
		ver = semver.Version{} // an OCI chart: Chart.yaml says it
	}
	if o.Mirror.SrcHosts == nil {
		host := src.Reference(ver.String())
		host, _, _ = strings.Cut(host, "/")
		o.Mirror.SrcHosts = []string{host}
	}
	mc, err := mirror.New(o.Mirror)
	if err != nil {
		return "", inputErr(err)
	}
	pm := &manifest.PackageManifest{Path: out, Lines: map[string]int{}, Version: ver}
	pm.Spec = manifest.Spec{Type: manifest.TypeChart, Artifact: o.Artifact, Chart: o.Chart}
	v := model.NewVersions([]*manifest.PackageManifest{pm})[0]
	if err := kind.Read(ctx, kind.Env{Client: mc}, []*model.Version{v}); err != nil {
		return "", fmt.Errorf("reading chart %s: %w", o.Artifact, err)
	}
	if v.ReadErr != nil {
		return "", inputErr(v.ReadErr)
	}
	c := kind.ChartOf(v)
	if c.RenderErr != nil {
		return "", inputErr(fmt.Errorf("chart %s %s does not render with its own values: %w", c.Name, c.Version, c.RenderErr))
	}
	data, notes, err := chartManifest(c, v, o)
	if err != nil {
		return "", err
	}
	if o.Note != nil {
		for _, n := range notes {
			o.Note(n)
		}
	}
	if _, err := manifest.Parse(out, data); err != nil {
		return "", inputErr(fmt.Errorf("the chart's manifest does not parse: %w", err))
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", err
	}
	return out, os.WriteFile(out, data, 0o644)
}

// chartManifest renders the PackageManifest of the chart c read for v,
// leaving out what the manifest rules refuse (leaveOutRefused).
func chartManifest(c *lint.Chart, v *model.Version, o Options) ([]byte, []string, error) {
	version := strings.TrimPrefix(c.Version, "v")
	_, desc := v.Content.Info()
	m := manifest.PackageManifest{
		APIVersion: manifest.APIVersion, Kind: manifest.Kind,
		Metadata: manifest.Metadata{Name: c.Name + ".v" + version},
		Spec: manifest.Spec{
			Type: manifest.TypeChart, Artifact: o.Artifact, Chart: o.Chart, Version: "v" + version,
			Arch: o.Platforms, Info: manifest.Info{DisplayName: c.Name, Description: desc},
			RelatedImages: c.Images,
		},
	}
	data, err := encode(&m)
	if err != nil {
		return nil, nil, err
	}
	notes := leaveOutRefused(&m, c.Name, lint.ManifestFile("manifest.yaml", data))
	if len(notes) > 0 {
		if data, err = encode(&m); err != nil {
			return nil, nil, err
		}
	}
	return data, notes, nil
}
