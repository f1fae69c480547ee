package manifest

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/operator-publish/publish/internal/registry"
)

// ChartSource is where the chart of a manifest of spec.type chart is, as
// spec.artifact and spec.chart say (docs/charts.md):
//
//   - an OCI reference, "oci://host/repo/name:version" or
//     "host/repo/name:version" (a digest instead of or after the tag is
//     kept): OCI is the reference without "oci://", Name its last path
//     component; spec.chart, when set, must be that name;
//   - a classic chart repository, "https://charts.example.com[/path]"
//     (an index.yaml below it, Helm's chart repository format): RepoURL is
//     the URL without a trailing "/", Name is spec.chart (required).
type ChartSource struct {
	OCI     string
	RepoURL string
	Name    string
}

// chartName is what a chart's name may be: Helm's chart name convention
// (lowercase letters, digits, dashes; dots and underscores are tolerated
// as Helm tolerates them).
var chartName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// ParseChartSource reads spec.artifact and spec.chart of a chart manifest.
// The error says which of the two is wrong, in manifest terms: the field
// name first ("spec.artifact ..." or "spec.chart ..."), so that the caller
// can place it at that field's line.
func ParseChartSource(artifact, chart string) (ChartSource, error) {
	if strings.HasPrefix(artifact, "https://") || strings.HasPrefix(artifact, "http://") {
		u, err := url.Parse(artifact)
		if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return ChartSource{}, fmt.Errorf("spec.artifact %q is not a chart repository URL (e.g. https://charts.example.com): want a scheme, a host, an optional path, no credentials, query or fragment", artifact)
		}
		if chart == "" {
			return ChartSource{}, fmt.Errorf("spec.chart field cannot be empty: a chart from a chart repository (%s) is named by spec.chart", artifact)
		}
		if !chartName.MatchString(chart) {
			return ChartSource{}, fmt.Errorf("spec.chart %q is not a chart name (letters, digits, '-', '.', '_')", chart)
		}
		return ChartSource{RepoURL: strings.TrimSuffix(artifact, "/"), Name: chart}, nil
	}
	ref := strings.TrimPrefix(artifact, "oci://")
	r, err := registry.ParseStrict(ref)
	if err != nil {
		return ChartSource{}, fmt.Errorf("spec.artifact %q is neither an OCI chart reference with a tag or digest (e.g. oci://registry.example.com/charts/web:1.2.3) nor a chart repository URL (https://...): %v", artifact, err)
	}
	repo := r.Context().RepositoryStr()
	name := repo[strings.LastIndex(repo, "/")+1:]
	if chart != "" && chart != name {
		return ChartSource{}, fmt.Errorf("spec.chart %q is not the chart %s names (%q): leave spec.chart out for an OCI chart, or correct it", chart, artifact, name)
	}
	return ChartSource{OCI: ref, Name: name}, nil
}

// FieldOf returns the manifest field a ParseChartSource error is about:
// "spec.chart" or "spec.artifact" (a missing spec.chart is placed at
// spec.artifact, the line that needs it).
func FieldOf(err error) string {
	if err != nil && strings.HasPrefix(err.Error(), "spec.chart") && !strings.Contains(err.Error(), "cannot be empty") {
		return "spec.chart"
	}
	return "spec.artifact"
}

// Reference is the chart as an OCI reference: OCI for an OCI chart; for a
// chart of a classic repository, the repository's host and path, the
// chart's name and version as tag (charts.example.com/stable/web:1.2.3),
// the reference under which it would be an OCI chart (what the
// destination mapping and the records name). Version is the manifest's
// version (without v).
func (s ChartSource) Reference(version string) string {
	if s.OCI != "" {
		return s.OCI
	}
	u, err := url.Parse(s.RepoURL)
	if err != nil {
		return s.RepoURL
	}
	return u.Host + strings.TrimSuffix(u.Path, "/") + "/" + s.Name + ":" + strings.ReplaceAll(version, "+", "_")
}
