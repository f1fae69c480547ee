package kind

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// MirrorBuildPrefix starts the SemVer build metadata of a chart version
// whose values RewriteChartImages rewrote: 1.2.3 becomes
// 1.2.3+mirror.<id> (1.2.3+build.5: 1.2.3+build.5.mirror.<id>). Build
// metadata leaves the version's precedence alone, so a constraint that
// asks for 1.2.3 (HelmRequest, helm install --version) takes the
// rewritten chart; an OCI tag cannot hold '+', which Helm writes '_'
// (1.2.3_mirror.<id>), as ChartTag does.
const MirrorBuildPrefix = "mirror."

// ChartTag is the OCI tag of a chart version, as `helm push` tags it:
// the version with '+' written '_'.
func ChartTag(version string) string { return strings.ReplaceAll(version, "+", "_") }

// RewrittenChart is a chart whose values RewriteChartImages rewrote.
type RewrittenChart struct {
	// Version is the new chart version (MirrorBuildPrefix).
	Version string
	// Archive is the chart packaged by the Helm SDK (chartutil.Save).
	Archive []byte
	// Rewrites counts the values rewritten, over the chart and its
	// subcharts.
	Rewrites int
}

// RewriteChartImages rewrites the image references of a chart's values
// (values.yaml of the chart and of each subchart under charts/) to their
// destination, and packages the result as a new chart version with the
// Helm SDK. repos maps a source repository (name.Repository.Name():
// index.docker.io/library/nginx) to its destination repository
// (registry.example.com/mirror/library/nginx); a value is rewritten
// when it names one of them:
//
//   - a string that is an image reference with a tag, a digest or a
//     registry host (nginx:1.27, ghcr.io/org/app, …@sha256:…): its
//     repository is replaced, its tag or digest kept;
//   - a map with a repository key (and optionally registry, tag, digest,
//     the layout of most charts' image: blocks): registry + "/" +
//     repository names the source; the registry key gets the
//     destination's host and repository its path (without a registry
//     key, repository gets the whole destination repository).
//
// The version is the chart's with build metadata mirror.<id>, id the
// first 12 hex digits of the SHA-256 of the source archive and the
// repositories rewritten: the same chart and mapping give the same
// version and, the files keeping the source's times, the same archive.
// ref names the chart in errors (*ChartError). Nil and no error when no
// value names an image of repos (the chart's templates name them
// themselves): nothing to rewrite.
func RewriteChartImages(ref string, archive []byte, repos map[string]string) (*RewrittenChart, error) {
	c, err := loadChart(ref, archive)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	n, err := rewriteChartValues(c, repos, used)
	if err != nil {
		return nil, &ChartError{Ref: ref, Err: err}
	}
	if n == 0 {
		return nil, nil
	}
	h := sha256.New()
	h.Write(archive)
	keys := make([]string, 0, len(used))
	for k := range used {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "\n%s=%s", k, repos[k])
	}
	id := hex.EncodeToString(h.Sum(nil))[:12]
	v := c.Metadata.Version
	if strings.Contains(v, "+") {
		v += "." + MirrorBuildPrefix + id
	} else {
		v += "+" + MirrorBuildPrefix + id
	}
	c.Metadata.Version = v
	out, err := saveChart(c)
	if err != nil {
		return nil, &ChartError{Ref: ref, Err: err}
	}
	return &RewrittenChart{Version: v, Archive: out, Rewrites: n}, nil
}

// rewriteChartValues rewrites the values.yaml of c and of its subcharts
// (recursively), keeping c.Values in step; it returns how many values
// changed and records the source repositories rewritten in used.
func rewriteChartValues(c *chart.Chart, repos map[string]string, used map[string]bool) (int, error) {
	n := 0
	for _, f := range c.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(f.Data, &doc); err != nil {
			return 0, fmt.Errorf("%s/%s: %w", c.Name(), f.Name, err)
		}
		k := rewriteNode(&doc, repos, used)
		if k == 0 {
			continue
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return 0, err
		}
		enc.Close()
		f.Data = buf.Bytes()
		vals, err := parseValues(f.Data)
		if err != nil {
			return 0, err
		}
		c.Values = vals
		n += k
	}
	rewriteAnnotations(c, repos, used)
	for _, d := range c.Dependencies() {
		k, err := rewriteChartValues(d, repos, used)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// rewriteAnnotations rewrites the images the helm.sh/images and
// artifacthub.io/images annotations of c's Chart.yaml list (YAML lists of
// entries with an image field), so that the new version's metadata names
// where its images are; an annotation that is no such list is left as it
// is.
func rewriteAnnotations(c *chart.Chart, repos map[string]string, used map[string]bool) {
	if c.Metadata == nil {
		return
	}
	for _, key := range []string{"helm.sh/images", "artifacthub.io/images"} {
		text, ok := c.Metadata.Annotations[key]
		if !ok {
			continue
		}
		var doc yaml.Node
		if yaml.Unmarshal([]byte(text), &doc) != nil || rewriteNode(&doc, repos, used) == 0 {
			continue
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if enc.Encode(&doc) == nil && enc.Close() == nil {
			c.Metadata.Annotations[key] = buf.String()
		}
	}
}

// rewriteNode rewrites the image references below n (the rules of
// RewriteChartImages) and returns how many it changed.
func rewriteNode(n *yaml.Node, repos map[string]string, used map[string]bool) int {
	count := 0
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			count += rewriteNode(c, repos, used)
		}
	case yaml.MappingNode:
		count += rewriteImageMap(n, repos, used)
		for i := 1; i < len(n.Content); i += 2 {
			v := n.Content[i]
			if v.Kind == yaml.ScalarNode {
				if s, ok := rewriteImageString(v.Value, repos, used); ok {
					v.Value, v.Style = s, 0
					count++
				}
				continue
			}
			count += rewriteNode(v, repos, used)
		}
	}
	return count
}

// mapValue is the scalar value of key in mapping m, nil when absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.ScalarNode {
			return m.Content[i+1]
		}
	}
	return nil
}

// rewriteImageMap rewrites a {registry, repository, tag} map m names a
// source repository of (1 when it did, else 0).
func rewriteImageMap(m *yaml.Node, repos map[string]string, used map[string]bool) int {
	repoNode := mapValue(m, "repository")
	if repoNode == nil || repoNode.Value == "" {
		return 0
	}
	regNode := mapValue(m, "registry")
	src := repoNode.Value
	if regNode != nil && regNode.Value != "" {
		src = regNode.Value + "/" + src
	}
	r, err := name.NewRepository(src)
	if err != nil {
		return 0
	}
	dst, ok := repos[r.Name()]
	if !ok {
		return 0
	}
	used[r.Name()] = true
	if regNode != nil && regNode.Value != "" {
		host, path, _ := strings.Cut(dst, "/")
		regNode.Value, regNode.Style = host, 0
		repoNode.Value = path
	} else {
		repoNode.Value = dst
	}
	repoNode.Style = 0
	return 1
}

// rewriteImageString is s with its repository replaced when s is an
// image reference (with a tag, a digest or a registry host) of a source
// repository of repos.
func rewriteImageString(s string, repos map[string]string, used map[string]bool) (string, bool) {
	if strings.ContainsAny(s, " \t\n{}") || !looksLikeImage(s) {
		return "", false
	}
	r, err := name.ParseReference(s)
	if err != nil {
		return "", false
	}
	dst, ok := repos[r.Context().Name()]
	if !ok {
		return "", false
	}
	used[r.Context().Name()] = true
	switch id := r.(type) {
	case name.Digest:
		return dst + "@" + id.DigestStr(), true
	case name.Tag:
		if strings.HasSuffix(s, ":"+id.TagStr()) {
			return dst + ":" + id.TagStr(), true
		}
	}
	return dst, true
}

// looksLikeImage: s names an image, not a word: it has a tag or digest,
// or its first path component is a registry host (a '.' or ':' in it,
// or localhost).
func looksLikeImage(s string) bool {
	if strings.Contains(s, "@") {
		return true
	}
	first, rest, hasPath := strings.Cut(s, "/")
	if hasPath && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return true
	}
	last := s
	if hasPath {
		last = rest[strings.LastIndex(rest, "/")+1:]
	}
	return strings.Contains(last, ":")
}

// fixedTime is the time of a chart file that has none, so that the same
// chart packages to the same bytes (chartutil.Save writes time.Now() for
// a zero time).
var fixedTime = time.Unix(0, 0).UTC()

// saveChart packages c with the Helm SDK (chartutil.Save, what `helm
// package` writes) and returns the archive.
func saveChart(c *chart.Chart) ([]byte, error) {
	fixTimes(c)
	dir, err := os.MkdirTemp("", "publish-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, err := chartutil.Save(c, dir)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// fixTimes gives every file of c and its subcharts without a time
// fixedTime.
func fixTimes(c *chart.Chart) {
	if c.ModTime.IsZero() {
		c.ModTime = fixedTime
	}
	if c.SchemaModTime.IsZero() {
		c.SchemaModTime = fixedTime
	}
	for _, fs := range [][]*common.File{c.Raw, c.Templates, c.Files} {
		for _, f := range fs {
			if f.ModTime.IsZero() {
				f.ModTime = fixedTime
			}
		}
	}
	for _, d := range c.Dependencies() {
		fixTimes(d)
	}
}
