package kind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/registry"
)

// The media types of a Helm chart's archive layer in an OCI registry
// (Helm's "Use OCI-based registries", https://helm.sh/docs/topics/registries/):
// the current one and the one of Helm's first OCI support.
const (
	chartLayerMediaType       = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	legacyChartLayerMediaType = "application/tar+gzip"
)

// repoIndex is what publish reads of a chart repository's index.yaml
// (Helm's chart repository format, https://helm.sh/docs/topics/chart_repository/):
// each chart's versions and the URLs of their archives.
type repoIndex struct {
	Entries map[string][]struct {
		Version string   `json:"version"`
		URLs    []string `json:"urls"`
	} `json:"entries"`
}

// maxChartSize caps a chart archive and a repository index read (bytes):
// a chart is a few hundred KiB; past the cap it is refused, not read.
const maxChartSize = 64 << 20

// pullChart returns the chart archive (.tgz) src names at version:
//
//   - an OCI chart through the command's registry client (its source
//     side: credentials, CA, plain-HTTP hosts, retries, as for bundles):
//     the manifest's layer of Helm's chart media type
//     (application/vnd.cncf.helm.chart.content.v1.tar+gzip, or the
//     legacy application/tar+gzip);
//   - a chart of a classic repository: its index.yaml (Helm's repository
//     index format), the entry of the chart's version (v or not), then
//     the archive its first URL names, over the client's transport.
//
// Errors: *ChartError when the chart or version is not there or the
// artifact is no chart; the registry's or server's failure otherwise.
func pullChart(ctx context.Context, env Env, src manifest.ChartSource, version string) ([]byte, error) {
	if env.Client == nil {
		return nil, errors.New("no registry client to read charts with")
	}
	if src.OCI != "" {
		return pullOCIChart(ctx, env, src.OCI)
	}
	return pullRepoChart(ctx, env, src, version)
}

// pullOCIChart is pullChart for an OCI reference.
func pullOCIChart(ctx context.Context, env Env, ref string) ([]byte, error) {
	mc := env.Client
	// A source mirror's copy when one is configured (--source-mirror), as
	// the bundles are read.
	r, err := mc.ReadReference(ref)
	if err != nil {
		return nil, &ChartError{Ref: ref, Err: err}
	}
	host := r.Context().RegistryStr()
	img, err := remote.Image(r, append(mc.SrcOptions(), remote.WithContext(ctx))...)
	if err != nil {
		if registry.IsNotFound(err) {
			return nil, &ChartError{Ref: ref, Err: errors.New("not found at the source registry")}
		}
		return nil, mc.Describe("reading chart "+ref, host, err)
	}
	data, err := ChartLayer(ref, img)
	var ce *ChartError
	if err != nil && !errors.As(err, &ce) {
		return nil, mc.Describe("reading chart "+ref, host, err)
	}
	return data, err
}

// ChartLayer returns the chart archive (.tgz) of img, the OCI chart ref
// names: its layer of Helm's chart media type (or the legacy one), byte
// for byte. Errors: *ChartError for an artifact without such a layer,
// the registry's failure reading the layer otherwise.
func ChartLayer(ref string, img v1.Image) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, &ChartError{Ref: ref, Err: err}
	}
	for _, l := range layers {
		mt, err := l.MediaType()
		if err != nil || (string(mt) != chartLayerMediaType && string(mt) != legacyChartLayerMediaType) {
			continue
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return readCapped(rc)
	}
	return nil, &ChartError{Ref: ref, Err: fmt.Errorf("not a Helm chart: no layer of media type %s", chartLayerMediaType)}
}

// pullRepoChart is pullChart for a classic chart repository.
func pullRepoChart(ctx context.Context, env Env, src manifest.ChartSource, version string) ([]byte, error) {
	hc := &http.Client{Transport: env.Client.Registry().Transport()}
	creds, err := chartRepoCredentials(src.RepoURL)
	if err != nil {
		return nil, err
	}
	idxURL := src.RepoURL + "/index.yaml"
	data, err := httpGet(ctx, hc, idxURL, creds)
	if err != nil {
		return nil, err
	}
	var idx repoIndex
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return nil, &ChartError{Ref: idxURL, Err: fmt.Errorf("not a chart repository index: %w", err)}
	}
	var urls []string
	for _, e := range idx.Entries[src.Name] {
		if strings.TrimPrefix(e.Version, "v") == version {
			urls = e.URLs
			break
		}
	}
	if len(urls) == 0 {
		return nil, &ChartError{Ref: src.RepoURL, Err: fmt.Errorf("chart %s version %s is not in the repository's index.yaml", src.Name, version)}
	}
	base, err := url.Parse(src.RepoURL + "/")
	if err != nil {
		return nil, &ChartError{Ref: src.RepoURL, Err: err}
	}
	u, err := base.Parse(urls[0]) // relative to the repository, or absolute
	if err != nil {
		return nil, &ChartError{Ref: src.RepoURL, Err: fmt.Errorf("archive URL %q: %w", urls[0], err)}
	}
	return httpGet(ctx, hc, u.String(), creds)
}

// httpGet reads url with hc, up to maxChartSize, with the repository's
// credentials (nil: none). A 404 is a *ChartError; another failing status
// or a transport error is returned as such (a 401 or 403 says where Helm's
// repository config gives credentials).
func httpGet(ctx context.Context, hc *http.Client, url string, creds *repoCredentials) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &ChartError{Ref: url, Err: err}
	}
	creds.authorize(req)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, &ChartError{Ref: url, Err: errors.New("not found (404)")}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("GET %s: %s: give the chart repository's credentials in Helm's repository config (helm repo add NAME REPOSITORY-URL --username USER --password-stdin; %s names the file)", url, resp.Status, HelmRepositoryConfigEnv)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return readCapped(resp.Body)
}

// readCapped reads r to its end, refusing more than maxChartSize bytes.
func readCapped(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxChartSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxChartSize {
		return nil, fmt.Errorf("larger than %d bytes", maxChartSize)
	}
	return data, nil
}

// loadChart loads a chart archive with the Helm SDK (loader.LoadArchive:
// Chart.yaml, values, templates, subcharts under charts/). The error is a
// *ChartError naming ref.
func loadChart(ref string, archive []byte) (*chart.Chart, error) {
	c, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, &ChartError{Ref: ref, Err: fmt.Errorf("not a chart the Helm SDK loads: %w", err)}
	}
	return c, nil
}

// parseValues reads a values file (YAML; empty: no values).
func parseValues(data []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil
	}
	return loader.LoadValues(bytes.NewReader(data))
}
