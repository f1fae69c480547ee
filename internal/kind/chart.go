package kind

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/Masterminds/semver/v3"
	"golang.org/x/sync/errgroup"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
)

// ValuesFile is a cluster's values file for a chart (publish.yaml
// clusters.<cluster>.values.<artifact>): its path in the package repo,
// for messages, and its content.
type ValuesFile struct {
	Path string
	Data []byte
}

// chartKind is spec.type chart: a Helm chart, from an OCI registry or a
// classic chart repository (manifest.ParseChartSource), loaded with the
// Helm SDK and rendered offline for the cluster read for, with the
// chart's values merged with the cluster's values file (Env.Values).
type chartKind struct{}

// Name is manifest.TypeChart.
func (chartKind) Name() string { return manifest.TypeChart }

// Key is the chart's source (spec.artifact, spec.chart), the cluster, its
// Kubernetes version and the values file's path and content hash: what a chart renders depends
// on the cluster's values, so the clusters of a run share a read only
// when they render with the same values.
func (chartKind) Key(env Env, v *model.Version) string {
	key := v.Ref() + "\x00" + v.Manifest.Spec.Chart + "\x00" + env.Cluster + "\x00" + env.KubeVersion
	vf, err := env.values(v)
	switch {
	case err != nil:
		key += "\x00error: " + err.Error()
	case vf != nil:
		sum := sha256.Sum256(vf.Data)
		key += "\x00" + vf.Path + "\x00" + hex.EncodeToString(sum[:])
	}
	return key
}

// values is the values file of v's artifact for env's cluster, nil when
// there is none (no Env.Values, or none configured).
func (env Env) values(v *model.Version) (*ValuesFile, error) {
	if env.Values == nil {
		return nil, nil
	}
	return env.Values(env.Cluster, v.Manifest.Artifact)
}

// Read pulls the charts of vs (at most 4 at once), loads each with the
// Helm SDK, runs Helm's chart checks and renders it for env's cluster,
// recording the result as the version's content (chartContent: the
// images rendered and annotated). A chart that is missing at the source
// or is not a chart archive is recorded as the version's ReadErr
// (*ChartError, chart/not-found); a template that does not render is no
// read error but a fact of the content (chart/render). Registry and
// repository failures are returned, joined and sorted, each
// "<manifest>:<line>: <what to do>".
func (chartKind) Read(ctx context.Context, env Env, vs []*model.Version) error {
	var mu sync.Mutex
	var failed []error
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, v := range vs {
		g.Go(func() error {
			err := readChart(gctx, env, v)
			var ce *ChartError
			switch {
			case err == nil:
			case errors.As(err, &ce):
				v.SetReadErr(err)
			default:
				mu.Lock()
				failed = append(failed, &readError{v: v, err: err})
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	sort.Slice(failed, func(i, j int) bool { return failed[i].Error() < failed[j].Error() })
	return errors.Join(failed...)
}

// readChart reads the chart of v for env (Read): pull, load, values,
// Helm's checks, render. Errors: *ChartError for the chart's own
// problems, anything else for the registry or repository.
func readChart(ctx context.Context, env Env, v *model.Version) error {
	src, err := manifest.ParseChartSource(v.Manifest.Spec.Artifact, v.Manifest.Spec.Chart)
	if err != nil {
		return &ChartError{Ref: v.Manifest.Spec.Artifact, Err: err}
	}
	archive, err := pullChart(ctx, env, src, v.Manifest.Version.String())
	if err != nil {
		return err
	}
	return ReadChartArchive(env, v, archive)
}

// ReadChartArchive records archive (a chart .tgz, as pulled) as the
// content of v read for env's cluster, as Read does after the pull: load,
// values, Helm's checks, render (`publish push --catalog` reads the
// chart it pushed this way). Errors: *ChartError for an archive that is
// no chart; a template that does not render is a fact of the content.
func ReadChartArchive(env Env, v *model.Version, archive []byte) error {
	c, err := loadChart(v.Manifest.Spec.Artifact, archive)
	if err != nil {
		return err
	}
	content := &chartContent{facts: lint.Chart{Name: c.Name(), Version: c.Metadata.Version, Cluster: env.Cluster}, description: c.Metadata.Description, archive: archive}
	vf, err := env.values(v)
	if err != nil {
		content.facts.RenderErr = err
		v.SetContent(content)
		return nil
	}
	var data []byte
	if vf != nil {
		content.facts.Values, data = vf.Path, vf.Data
	}
	vals, err := parseValues(data)
	if err != nil {
		content.facts.RenderErr = fmt.Errorf("values file %s: %w", vf.Path, err)
		v.SetContent(content)
		return nil
	}
	content.facts.Helm = helmLint(archive, c.Name(), vals, env.KubeVersion)
	content.facts.KubeVersion, content.facts.KubeConstraint = kubeConstraint(c.Metadata.KubeVersion, env.KubeVersion)
	r, err := renderChart(archive, v.Manifest.Artifact, vals, env.KubeVersion)
	if err != nil {
		content.facts.RenderErr = err
	} else {
		content.facts.Objects, content.facts.Images, content.facts.Sources = r.objects, r.images, r.sources
		for _, srcs := range r.sources {
			for i := range srcs {
				if srcs[i].Source == lint.SourceRender {
					srcs[i].Cluster, srcs[i].Values = env.Cluster, content.facts.Values
				}
			}
		}
	}
	v.SetContent(content)
	return nil
}

// kubeConstraint checks Chart.yaml's kubeVersion constraint against the
// cluster's Kubernetes version kv (Env.KubeVersion), as Helm checks it
// before an install (chartutil.IsCompatibleRange): it returns kv as Helm
// writes it (v1.30.4, its full version) and the constraint when kv does not satisfy it.
// Nothing is checked without kv (the fixed KubeVersion is no cluster's)
// or for a constraint that does not parse (Helm's own checks report it).
func kubeConstraint(constraint, kv string) (version, excluded string) {
	if kv == "" {
		return "", ""
	}
	parsed := kubeVersion(kv)
	version = parsed.Version
	if constraint == "" {
		return version, ""
	}
	if _, err := semver.NewConstraint(constraint); err != nil {
		return version, ""
	}
	if !chartutil.IsCompatibleRange(constraint, parsed.String()) {
		return version, constraint
	}
	return version, ""
}

// ChartError is why a chart cannot be used: missing at the source, not a
// chart archive the Helm SDK loads, a source that does not parse. A
// version's ReadErr (chart/not-found), an input error.
type ChartError struct {
	Ref string
	Err error
}

// Error is "chart <reference>: <why>".
func (e *ChartError) Error() string { return fmt.Sprintf("chart %s: %v", e.Ref, e.Err) }

// Unwrap returns e.Err.
func (e *ChartError) Unwrap() error { return e.Err }

// Lint gives the lint engine the chart of v as read for env's cluster
// (lint.Input.Charts: Chart.yaml's name and version, Helm's checks, the
// render and its images), or the error reading it (chart/not-found).
func (chartKind) Lint(in *lint.Input, _ Env, v *model.Version) {
	var c *lint.Chart
	switch {
	case v.ReadErr != nil:
		c = &lint.Chart{ReadErr: v.ReadErr}
	case ChartOf(v) != nil:
		c = ChartOf(v)
	default:
		return
	}
	if in.Charts == nil {
		in.Charts = map[string]*lint.Chart{}
	}
	in.Charts[v.Manifest.Path] = c
}

// chartContent is the model.Content of a version of kind chart, as read
// for one cluster.
type chartContent struct {
	facts       lint.Chart
	description string
	// archive is the chart archive (.tgz) as the source gave it: the
	// layer of an OCI chart, the file of a repository's index.
	archive []byte
}

// ChartArchive returns the chart archive (.tgz) read for v, byte for
// byte as the source gave it (an OCI chart's content layer, the archive a
// repository's index.yaml names), nil when v was not read or is of
// another kind. Callers must not change it.
func ChartArchive(v *model.Version) []byte {
	if c, ok := v.Content.(*chartContent); ok {
		return c.archive
	}
	return nil
}

// ChartOf returns what was read of the chart of v for the cluster it was
// read for (a copy: Chart.yaml's name and version, Helm's checks, the
// render and its images), nil when v was not read or is of another kind.
func ChartOf(v *model.Version) *lint.Chart {
	if c, ok := v.Content.(*chartContent); ok {
		f := c.facts
		return &f
	}
	return nil
}

// Images are the images the chart renders for the cluster (the
// containers, init and ephemeral containers of its workloads) and lists
// in its helm.sh/images and artifacthub.io/images annotations, subcharts
// included, sorted; none when it did not render.
func (c *chartContent) Images() []string { return c.facts.Images }

// ImagesFrom is "the chart's rendered templates and image annotations".
func (*chartContent) ImagesFrom() string {
	return "the chart's rendered templates and image annotations"
}

// Info is Chart.yaml's name and description.
func (c *chartContent) Info() (string, string) { return c.facts.Name, c.description }
