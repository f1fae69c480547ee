// Package config reads publish.yaml, the optional configuration file at the
// root of a package repo (docs/design.md#publish-yaml). Everything in it can also be set
// by a flag or a PUBLISH_* environment variable, which win:
// flag > environment > publish.yaml > default.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	pathpkg "path"
	"sort"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
	yaml "go.yaml.in/yaml/v4"
)

// FileName is the configuration file looked up at the package repo root.
const FileName = "publish.yaml"

// APIVersion and Kind identify a publish.yaml.
const (
	APIVersion = "publish.operator-publish.io/v1alpha1"
	Kind       = "PublishConfig"
)

// Config is publish.yaml. Field names match the flags of `publish run`
// (camelCase here, kebab-case on the command line).
type Config struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`

	PackagesDir   string `yaml:"packagesDir,omitempty"`
	Catalog       string `yaml:"catalog,omitempty"`
	CatalogBranch string `yaml:"catalogBranch,omitempty"`
	Cluster       string `yaml:"cluster,omitempty"`
	DstRegistry   string `yaml:"dstRegistry,omitempty"`
	// SrcRegistries are the source registries (host[:port]) that may
	// receive the source credentials (--src-registry).
	SrcRegistries []string `yaml:"srcRegistries,omitempty"`
	// SourceMirrors move the reads of the source images to registries
	// holding copies of them (--source-mirror): run, plan, lint, mirror and
	// package.
	SourceMirrors    []SourceMirror `yaml:"sourceMirrors,omitempty"`
	PlainHTTP        *bool          `yaml:"plainHTTP,omitempty"`
	CAFile           string         `yaml:"caFile,omitempty"`
	Namespace        string         `yaml:"namespace,omitempty"`
	Library          string         `yaml:"library,omitempty"`
	ImagePullSecrets []string       `yaml:"imagePullSecrets,omitempty"`
	Concurrency      *int           `yaml:"concurrency,omitempty"`

	// Lint re-grades rules and waives known findings (docs/lint-rules.md).
	Lint lint.Config `yaml:"lint,omitempty"`

	// Clusters holds per-cluster settings, by cluster (overlay) name: what
	// the cluster runs (target) and, for upstream OLM, the catalog.
	Clusters map[string]Cluster `yaml:"clusters,omitempty"`

	// Forge is the forge of the catalog repo, for pull-request delivery.
	Forge Forge `yaml:"forge,omitempty"`

	// Verify is the signature policy (docs/signatures.md): which images
	// must be signed, by what key or identity. Empty: nothing is verified.
	Verify []VerifyEntry `yaml:"verify,omitempty"`

	// Sign is what publish signs besides its own outputs
	// (docs/signatures.md).
	Sign Sign `yaml:"sign,omitempty"`

	// Path is the file it was read from.
	Path string `yaml:"-"`
}

// Sign is the sign section of publish.yaml.
type Sign struct {
	// Images, when true, has publish run sign each digest it mirrored (an
	// image, an image index and each platform child) at the destination
	// with --cosign-key, beside the vendor's signatures: the site's own
	// policy then needs one key. Off by default.
	Images bool `yaml:"images,omitempty"`
}

// Cluster is the publish.yaml entry of one cluster.
type Cluster struct {
	// Target is what the cluster runs: the name of a registered target
	// (internal/target: alauda, the default, or olm); --target wins.
	Target string `yaml:"target,omitempty"`
	// Blocks are the cluster's keys that are not the fields below, as
	// written: each must name a target that reads a block of its own
	// (target.Kind.Decode; the olm target's catalog image, CatalogSource,
	// ClusterCatalog…). Parse has the target decode and check it, whatever
	// the cluster's target (--target may choose another), and keeps what
	// it returns (TargetSettings).
	Blocks map[string]yaml.Node `yaml:",inline"`
	// OCI, when set, makes `publish run` (and `publish push --catalog`)
	// push rendered/<cluster> as the OCI catalog (internal/ocicatalog) to
	// this reference, REGISTRY/REPOSITORY[:TAG] (default tag: the cluster
	// name); --oci wins.
	OCI string `yaml:"oci,omitempty"`
	// Include and Exclude are the artifacts the cluster gets, as name
	// patterns (path.Match: "cert-*", "hello-operator"): those Include
	// matches (every artifact when empty) that Exclude does not. An
	// artifact that leaves the selection is delisted on this cluster only
	// (present: false), never deleted.
	Include []string `yaml:"include,omitempty"`
	Exclude []string `yaml:"exclude,omitempty"`
	// Namespace, Library, ImagePullSecrets and DstRegistry are the
	// cluster's values of the top-level settings (the flags --namespace,
	// --library, --image-pull-secret, --dst-registry), which are the
	// default. Images are mirrored once per distinct destination; the
	// credentials of a cluster's own destination host come from the docker
	// config, else from the --dst-username/--dst-password flags.
	Namespace        string   `yaml:"namespace,omitempty"`
	Library          string   `yaml:"library,omitempty"`
	ImagePullSecrets []string `yaml:"imagePullSecrets,omitempty"`
	DstRegistry      string   `yaml:"dstRegistry,omitempty"`
	// Delivery is how the cluster's change reaches the catalog branch:
	// "push" (the default: a commit on the catalog branch) or
	// "pull-request" (a rolling branch and one pull request against the
	// catalog branch, for a reviewer to merge; docs/clusters.md);
	// --delivery wins.
	Delivery string `yaml:"delivery,omitempty"`
	// PullRequest configures the pull request of a cluster whose delivery
	// is pull-request.
	PullRequest PullRequest `yaml:"pullRequest,omitempty"`
	// After are the gates of the cluster: upstream clusters on which a
	// version must have been listed for a soak time before this cluster
	// lists it (docs/rollout.md).
	After Gates `yaml:"after,omitempty"`
	// Values are the Helm values files of the cluster's charts, by
	// artifact: a path in the package repo (relative, slash-separated,
	// no ".."), merged over the chart's own values when the chart is
	// rendered for this cluster (docs/charts.md).
	Values map[string]string `yaml:"values,omitempty"`
	// ChartGitURL is the catalog repo's URL as the cluster's Captain
	// clones it: the spec.source.url of the ChartRepo of type Git of each
	// chart the cluster lists (docs/charts.md). Default: the catalog
	// repo's URL as publish reaches it (--catalog), without user
	// information.
	ChartGitURL string `yaml:"chartGitURL,omitempty"`
	// ChartRepo, when set, is an existing ChartRepo (name, and the URL of
	// the ChartMuseum repository it serves, its spec.url) to which the
	// cluster's charts are uploaded through ChartMuseum's API instead of
	// the Git way (docs/charts.md).
	ChartRepo *render.ChartRepoRef `yaml:"chartRepo,omitempty"`
	// RewriteImages, "values", makes each chart the cluster lists a new
	// chart version whose values name the images at the destination,
	// pushed and signed beside the chart, and the one the catalog
	// carries (docs/charts.md); "" keeps the chart as it is.
	RewriteImages string `yaml:"rewriteImages,omitempty"`
	// KubernetesVersion is the Kubernetes version the cluster runs
	// (v1.30.4, 1.30): its charts are rendered for it (Helm's
	// .Capabilities.KubeVersion) and Chart.yaml's kubeVersion is checked
	// against it (docs/charts.md). Empty: charts render for one fixed
	// version and their kubeVersion is not checked.
	KubernetesVersion string `yaml:"kubernetesVersion,omitempty"`

	// own holds the settings each target's Decode returned for its block
	// of Blocks, by target name (set by Parse).
	own map[string]any
}

// PullRequest is the publish.yaml clusters.<name>.pullRequest entry.
type PullRequest struct {
	// Branch is the rolling branch (default publish/<cluster>).
	Branch string `yaml:"branch,omitempty"`
	// Labels are added to the pull request; --pr-label adds more.
	Labels []string `yaml:"labels,omitempty"`
	// AutoMerge is merge, squash or rebase: the forge merges the pull
	// request once its checks and reviews pass (when it allows that);
	// --auto-merge wins.
	AutoMerge string `yaml:"autoMerge,omitempty"`
	// Approvers name the forge users and teams that must approve the
	// pull request, optionally only when it changes artifacts matching a
	// pattern (docs/pull-requests.md, "Approvals").
	Approvers []Approvers `yaml:"approvers,omitempty"`
}

// Approvers is one entry of clusters.<name>.pullRequest.approvers.
type Approvers struct {
	// Users are forge logins.
	Users []string `yaml:"users,omitempty"`
	// Teams are "org/team" on Gitea and GitHub, a group path on GitLab.
	Teams []string `yaml:"teams,omitempty"`
	// Artifacts, when set, is a glob (path.Match) of artifact names: the
	// entry applies only to a pull request that changes a matching one.
	Artifacts string `yaml:"artifacts,omitempty"`
}

// checkApprovers says what is wrong with an approvers list ("" nothing).
func checkApprovers(as []Approvers) string {
	for i, a := range as {
		if len(a.Users)+len(a.Teams) == 0 {
			return fmt.Sprintf("entry %d names no users and no teams", i+1)
		}
		if _, err := pathpkg.Match(a.Artifacts, ""); err != nil {
			return fmt.Sprintf("entry %d: artifacts %q is not a valid pattern (path.Match: *, ?, [a-z])", i+1, a.Artifacts)
		}
		for _, n := range append(append([]string{}, a.Users...), a.Teams...) {
			if strings.TrimSpace(n) == "" || strings.ContainsAny(n, " \t@") {
				return fmt.Sprintf("entry %d: %q is not a login or team (give it without @ or spaces)", i+1, n)
			}
		}
	}
	return ""
}

// Forge is the publish.yaml forge entry: the forge of the catalog repo,
// for pull-request delivery. The token is never in the file: it comes from
// --forge-token or PUBLISH_FORGE_TOKEN.
type Forge struct {
	// Kind is github, gitlab or gitea (Forgejo too); default: detected
	// from the catalog URL. --forge wins.
	Kind string `yaml:"kind,omitempty"`
	// APIURL is the API of a self-hosted forge (GitHub Enterprise Server:
	// https://HOST/api/v3; GitLab: https://HOST/api/v4; Gitea:
	// https://HOST/api/v1); --forge-api-url wins.
	APIURL string `yaml:"apiURL,omitempty"`
	// Repo is the repository on the forge (owner/name, GitLab
	// group/subgroup/name) when the catalog URL does not say it;
	// --forge-repo wins.
	Repo string `yaml:"repo,omitempty"`
}

// ClusterNames returns the clusters publish.yaml declares (clusters:),
// sorted; none for a nil configuration.
func (c *Config) ClusterNames() []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, len(c.Clusters))
	for n := range c.Clusters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ClusterSettings returns the publish.yaml entry of cluster (zero when
// none).
func (c *Config) ClusterSettings(cluster string) Cluster {
	if c == nil {
		return Cluster{}
	}
	return c.Clusters[cluster]
}

// DefaultClusters returns the clusters publish.yaml's cluster: names (a
// comma-separated list), none when it names none.
func (c *Config) DefaultClusters() []string {
	if c == nil || c.Cluster == "" {
		return nil
	}
	var out []string
	for _, n := range strings.Split(c.Cluster, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Target returns the target publish.yaml sets for cluster ("" when none).
func (c *Config) Target(cluster string) string {
	if c == nil {
		return ""
	}
	return c.Clusters[cluster].Target
}

// ValuesFile returns the path in the package repo of the values file
// publish.yaml gives the chart artifact on cluster
// (clusters.<cluster>.values.<artifact>), "" when none (or c is nil).
func (c *Config) ValuesFile(cluster, artifact string) string {
	if c == nil {
		return ""
	}
	return c.Clusters[cluster].Values[artifact]
}

// KubernetesVersion returns the Kubernetes version publish.yaml gives
// cluster (clusters.<cluster>.kubernetesVersion, as written), "" when
// none (or c is nil).
func (c *Config) KubernetesVersion(cluster string) string {
	if c == nil {
		return ""
	}
	return c.Clusters[cluster].KubernetesVersion
}

// checkValues checks clusters.<cluster>.values: each key an artifact
// name, each value a clean relative path in the package repo that stays
// in it. The error is at the entry's line.
func checkValues(path string, data []byte, cluster string, values map[string]string) error {
	names := make([]string, 0, len(values))
	for a := range values {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		p := values[a]
		line := valuesLine(data, cluster, a)
		switch {
		case a == "" || !validName(a):
			return &Error{Path: path, Line: line, Msg: fmt.Sprintf("clusters.%s.values: %q is not an artifact name", cluster, a)}
		case p == "" || pathpkg.IsAbs(p) || pathpkg.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "\\"):
			return &Error{Path: path, Line: line, Msg: fmt.Sprintf("clusters.%s.values.%s: %q is not a path in the package repo (relative, slash-separated, clean, no ..), e.g. values/%s/%s.yaml", cluster, a, p, cluster, a)}
		}
	}
	return nil
}

// validName reports whether s can be an artifact name (a DNS-1123
// subdomain, as manifest.Parse checks metadata.name's).
func validName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return len(s) <= 253
}

// valuesLine returns the line of clusters.<cluster>.values.<artifact>, or
// of clusters.<cluster>.values when not found.
func valuesLine(data []byte, cluster, artifact string) int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	n := root.Content[0]
	line := 0
	for _, k := range []string{"clusters", cluster, "values", artifact} {
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			break
		}
	}
	return line
}

// TargetSettings returns the settings of the target named name for
// cluster, as the target's Kind.Decode read them from
// clusters.<cluster>.<name> (of a type the target's file knows); nil when
// the cluster has no such block (the target's defaults) or c is nil.
func (c *Config) TargetSettings(cluster, name string) any {
	if c == nil {
		return nil
	}
	return c.Clusters[cluster].own[name]
}

// ClusterOCI returns the OCI catalog reference publish.yaml sets for
// cluster ("" when none).
func (c *Config) ClusterOCI(cluster string) string {
	if c == nil {
		return ""
	}
	return c.Clusters[cluster].OCI
}

// Error is a problem in publish.yaml at a 1-based line.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// readCapped reads the regular file at path, up to manifest.MaxFileSize:
// reading stops at the cap, so that a pull request's huge publish.yaml
// costs no memory. Errors: the file is missing (wraps os.ErrNotExist), not
// a regular file, or over the cap (*Error).
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{Path: path, Msg: "not a regular file: publish reads publish.yaml only from a file committed as such"}
	}
	data, err := io.ReadAll(io.LimitReader(f, manifest.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > manifest.MaxFileSize {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("larger than %d bytes, the limit of publish.yaml (a configuration is a few KiB)", manifest.MaxFileSize)}
	}
	return data, nil
}

// Load reads path (at most manifest.MaxFileSize bytes). A missing file is no configuration (nil, nil) unless
// required; anything else that is wrong is an *Error with the line:
// unknown fields, wrong types, a wrong apiVersion/kind. Credentials are not
// accepted in the file: they belong in the environment or the docker
// config.
func Load(path string, required bool) (*Config, error) {
	data, err := readCapped(path)
	if errors.Is(err, os.ErrNotExist) && !required {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse reads a publish.yaml held in data (the file at a Git revision,
// say); path names it in the errors, which are Load's.
func Parse(path string, data []byte) (*Config, error) {
	c := &Config{Path: path}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return nil, typeField(unknownField(yamlError(path, err), data), data)
	}
	if c.APIVersion != APIVersion || c.Kind != Kind {
		return nil, &Error{Path: path, Line: 1, Msg: fmt.Sprintf("apiVersion/kind is %q/%q, want %s/%s", c.APIVersion, c.Kind, APIVersion, Kind)}
	}
	for _, name := range c.ClusterNames() {
		cl := c.Clusters[name]
		if _, err := target.Lookup(cl.Target); err != nil {
			return nil, &Error{Path: path, Line: clusterLine(data, name), Msg: fmt.Sprintf("clusters.%s.%v", name, err)}
		}
		if err := decodeBlocks(path, data, name, &cl); err != nil {
			return nil, err
		}
		c.Clusters[name] = cl
		for field, ps := range map[string][]string{"include": cl.Include, "exclude": cl.Exclude} {
			for _, p := range ps {
				if _, err := pathpkg.Match(p, ""); err != nil || p == "" {
					return nil, &Error{Path: path, Line: clusterKeyLine(data, name, field), Msg: fmt.Sprintf("clusters.%s.%s: %q is not a name pattern (path.Match: *, ?, [a-z])", name, field, p)}
				}
			}
		}
		if msg := checkChartRepo(cl.ChartRepo); msg != "" {
			return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "chartRepo"), Msg: fmt.Sprintf("clusters.%s.chartRepo: %s", name, msg)}
		}
		if cl.RewriteImages != "" && cl.RewriteImages != "values" {
			return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "rewriteImages"), Msg: fmt.Sprintf("clusters.%s.rewriteImages: %q is not values (the one way: the images of each chart's values rewritten as a new chart version); leave it out to keep the charts as they are", name, cl.RewriteImages)}
		}
		switch cl.Delivery {
		case "", "push", "pull-request":
		default:
			return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "delivery"), Msg: fmt.Sprintf("clusters.%s.delivery: %q is not one of push, pull-request", name, cl.Delivery)}
		}
		switch cl.PullRequest.AutoMerge {
		case "", "merge", "squash", "rebase":
		default:
			return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "pullRequest"), Msg: fmt.Sprintf("clusters.%s.pullRequest.autoMerge: %q is not one of merge, squash, rebase", name, cl.PullRequest.AutoMerge)}
		}
		if msg := checkApprovers(cl.PullRequest.Approvers); msg != "" {
			return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "pullRequest"), Msg: fmt.Sprintf("clusters.%s.pullRequest.approvers: %s", name, msg)}
		}
		if cl.Delivery == "pull-request" && cl.OCI != "" {
			return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "delivery"), Msg: fmt.Sprintf("clusters.%s: delivery: pull-request cannot be combined with oci: the cluster pulls the OCI catalog, which would change before the pull request is reviewed; use delivery: push for this cluster, or sync it from Git", name)}
		}
		if cl.Delivery == "pull-request" && cl.ChartRepo != nil {
			return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "delivery"), Msg: fmt.Sprintf("clusters.%s: delivery: pull-request cannot be combined with chartRepo: the charts would reach the ChartMuseum before the pull request is reviewed; leave chartRepo out (the charts then go the Git way, in the pull request) or use delivery: push", name)}
		}
		if err := checkValues(path, data, name, cl.Values); err != nil {
			return nil, err
		}
		if _, err := common.ParseKubeVersion(cl.KubernetesVersion); cl.KubernetesVersion != "" && err != nil {
			return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "kubernetesVersion"), Msg: fmt.Sprintf("clusters.%s.kubernetesVersion: %q is not a Kubernetes version; write it as kubectl version prints it, e.g. v1.30.4", name, cl.KubernetesVersion)}
		}
		if cl.OCI != "" {
			if _, err := ocicatalog.Tag(cl.OCI, name); err != nil {
				return nil, &Error{Path: path, Line: clusterKeyLine(data, name, "oci"), Msg: fmt.Sprintf("clusters.%s.oci: %v", name, err)}
			}
		}
	}
	if err := checkGates(path, data, c); err != nil {
		return nil, err
	}
	switch c.Forge.Kind {
	case "", "github", "gitlab", "gitea", "forgejo":
	default:
		return nil, &Error{Path: path, Line: topKeyLine(data, "forge"), Msg: fmt.Sprintf("forge.kind: %q is not one of github, gitlab, gitea", c.Forge.Kind)}
	}
	if err := checkSourceMirrors(path, data, c); err != nil {
		return nil, err
	}
	if err := loadVerify(path, data, c.Verify); err != nil {
		return nil, err
	}
	c.Lint.File = path
	c.Lint.Lines = lintLines(data)
	c.Lint.OLMv1Clusters = c.olmv1Clusters()
	return c, nil
}

// lintLines records the lines of the lint section's entries, so that lint
// findings about the configuration point at them.
func lintLines(data []byte) map[string]int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	lines := map[string]int{}
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "lint" {
			continue
		}
		lint := doc.Content[i+1]
		for j := 0; j+1 < len(lint.Content); j += 2 {
			k, v := lint.Content[j], lint.Content[j+1]
			switch k.Value {
			case "severity":
				for n := 0; n+1 < len(v.Content); n += 2 {
					lines["severity."+v.Content[n].Value] = v.Content[n].Line
				}
			case "waivers":
				for n, w := range v.Content {
					lines[fmt.Sprintf("waivers.%d", n)] = w.Line
				}
			default:
				lines[k.Value] = k.Line
			}
		}
	}
	return lines
}

// clusterLine returns the line of clusters.<name> (0 when not found).
func clusterLine(data []byte, name string) int { return clusterKeyLine(data, name, "") }

// clusterKeyLine returns the line of clusters.<name>.<key>, or of
// clusters.<name> when key is "" or not found there (0 when neither is).
func clusterKeyLine(data []byte, name, key string) int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "clusters" {
			continue
		}
		cl := doc.Content[i+1]
		for j := 0; j+1 < len(cl.Content); j += 2 {
			if cl.Content[j].Value != name {
				continue
			}
			if key != "" {
				v := cl.Content[j+1]
				for k := 0; k+1 < len(v.Content); k += 2 {
					if v.Content[k].Value == key {
						return v.Content[k].Line
					}
				}
			}
			return cl.Content[j].Line
		}
	}
	return 0
}

// yamlError turns a go.yaml.in/yaml/v4 error into an *Error at the line
// of the offending token: the first construct (type) error, or the syntax
// error where manifest.YAMLSyntax places it.
func yamlError(path string, err error) error {
	var le *yaml.LoadErrors
	if errors.As(err, &le) && len(le.Errors) > 0 {
		e := le.Errors[0]
		msg := e.Message
		if f, ok := strings.CutPrefix(msg, "field "); ok && strings.Contains(f, " not found in type ") {
			msg = "unknown field " + strings.SplitN(f, " not found", 2)[0] + " is not a publish.yaml field (see the README, Configuration)"
		}
		return &Error{Path: path, Line: e.Mark.Line, Msg: msg}
	}
	if errors.Is(err, io.EOF) {
		return &Error{Path: path, Msg: "empty file: write apiVersion: " + APIVersion + " and kind: " + Kind}
	}
	if se, ok := manifest.YAMLSyntax(err); ok {
		return &Error{Path: path, Line: se.Line, Msg: "not valid YAML: " + se.Msg}
	}
	return &Error{Path: path, Msg: err.Error()}
}

// Values returns the flag values the file sets, by flag name, as the
// command line would spell them (lists comma-joined).
func (c *Config) Values() map[string]string {
	out := map[string]string{}
	if c == nil {
		return out
	}
	set := func(flag, v string) {
		if v != "" {
			out[flag] = v
		}
	}
	set("packages-dir", c.PackagesDir)
	set("catalog", c.Catalog)
	set("catalog-branch", c.CatalogBranch)
	// cluster: is the default selection of clusters (DefaultClusters),
	// read by the commands that serve several, not a --cluster value.
	set("dst-registry", c.DstRegistry)
	set("src-registry", strings.Join(c.SrcRegistries, ","))
	set("source-mirror", c.sourceMirrorValue())
	if c.PlainHTTP != nil {
		set("plain-http", strconv.FormatBool(*c.PlainHTTP))
	}
	set("ca-file", c.CAFile)
	set("namespace", c.Namespace)
	set("library", c.Library)
	set("image-pull-secret", strings.Join(c.ImagePullSecrets, ","))
	if c.Concurrency != nil {
		set("concurrency", strconv.Itoa(*c.Concurrency))
	}
	set("forge", c.Forge.Kind)
	set("forge-api-url", c.Forge.APIURL)
	set("forge-repo", c.Forge.Repo)
	return out
}

// topKeyLine returns the line of the top-level key (0 when not found).
func topKeyLine(data []byte, key string) int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == key {
			return doc.Content[i].Line
		}
	}
	return 0
}

// checkChartRepo says what is wrong with a cluster's chartRepo ("" when
// nothing, or none is set): both name and url, the url http(s) with a
// host and no user information (credentials are never in the file).
func checkChartRepo(r *render.ChartRepoRef) string {
	if r == nil {
		return ""
	}
	if r.Name == "" || r.URL == "" {
		return "want both name and url, e.g. {name: public-charts, url: http://captain-chartmuseum:8080/public-charts}"
	}
	u, err := url.Parse(r.URL)
	switch {
	case err != nil:
		return "url: want http(s)://host[:port][/path] without credentials, query or fragment" // the URL may hold a credential: not printed
	case u.User != nil:
		return "url: the user information of the URL is a credential: write it without one (a ChartMuseum that wants a password is not supported yet)"
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("url %q: want http(s)://host[:port][/path] without credentials, query or fragment", r.URL)
	}
	return ""
}
