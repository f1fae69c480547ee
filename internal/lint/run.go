package lint

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/blang/semver/v4"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/manifest"
)

// More severities. Off appears only in Config.Severity: the rule does not
// run. Waived marks a finding a Waiver accepts: it stays in the report (with
// Finding.Waiver) for the audit trail but fails nothing.
const (
	Off    Severity = "off"
	Waived Severity = "waived"
)

// Config is the lint part of publish.yaml.
type Config struct {
	// Severity re-grades rules: rule ID (or a prefix pattern such as
	// "bundle/validator/*"; the most specific entry wins) to error, warning
	// or off.
	Severity map[string]Severity `json:"severity,omitempty" yaml:"severity,omitempty"`
	// Waivers accept known findings.
	Waivers []Waiver `json:"waivers,omitempty" yaml:"waivers,omitempty"`
	// KubernetesVersion is the cluster version the deprecated-API check
	// targets (e.g. 1.33); "" uses each CSV's spec.minKubeVersion.
	KubernetesVersion string `json:"kubernetesVersion,omitempty" yaml:"kubernetesVersion,omitempty"`
	// File is where the configuration was read (default publish.yaml); the
	// findings about the configuration itself point at it.
	File string `json:"-" yaml:"-"`
	// Lines gives the 1-based line of configuration entries in File, keyed
	// "severity.<rule>", "waivers.<index>", "kubernetesVersion" (set by
	// internal/config); findings about an entry carry its line.
	Lines map[string]int `json:"-" yaml:"-"`
	// OLMv1Clusters are the clusters that install with OLM v1 (a
	// ClusterCatalog; set by internal/config from publish.yaml clusters):
	// when there is one, the olmv1/ rules check every bundle for what
	// operator-controller cannot install.
	OLMv1Clusters []string `json:"-" yaml:"-"`
}

// Waiver accepts the findings of one rule for one artifact (and version).
// A waiver without a reason, or naming no known rule, is itself an error
// finding (repo/waiver) and waives nothing.
type Waiver struct {
	// Rule is a rule ID or a prefix pattern ("bundle/validator/*").
	Rule string `json:"rule" yaml:"rule"`
	// Artifact limits the waiver to one artifact; "" waives the rule for
	// every artifact.
	Artifact string `json:"artifact,omitempty" yaml:"artifact,omitempty"`
	// Version limits the waiver to one version of the artifact ("1.2.3" or
	// "v1.2.3"); "" is every version.
	Version string `json:"version,omitempty" yaml:"version,omitempty"`
	// Reason says why the finding is acceptable. Mandatory.
	Reason string `json:"reason" yaml:"reason"`
}

// File is one manifest.yaml: Path (slash-separated, relative to the package
// repo) and raw Data. manifest.ReadFiles lists them.
type File = manifest.File

// ImageChecker looks images up in the source registry.
type ImageChecker interface {
	// Platforms returns the platforms (os/arch[/variant]) ref offers when it
	// is an image index; nil (and no error) when ref is a single-platform
	// image whose platform the checker does not know (it reads manifests
	// only, no config blobs). An error wrapping ErrImageNotFound says the
	// image does not exist; any other error that it could not be checked.
	Platforms(ctx context.Context, ref string) ([]string, error)
}

// ErrImageNotFound is wrapped by ImageChecker errors for missing images.
var ErrImageNotFound = errors.New("image not found")

// Input is what Run lints.
type Input struct {
	// Files are the manifest files: every manifest.yaml of the repo, so that
	// the repo rules see every version.
	Files []File
	// Bundles are the bundles read, by manifest path; a manifest without one
	// gets no bundle, platform, images (CSV) or upgrade-graph findings.
	Bundles map[string]*bundle.Bundle
	// BundleErrors are the errors of reading bundles, by manifest path
	// (bundle.Fetch's *NotFoundError, *InvalidError, registry errors): each
	// becomes a finding (bundle/not-found, bundle/one-csv, bundle/invalid,
	// bundle/fetch).
	BundleErrors map[string]error
	// Annotations override the bundles' raw metadata/annotations.yaml
	// (bundle.Bundle.Annotations), by manifest path; optional. Without
	// either (a bundle without annotations.yaml) the bundle/mediatype and
	// bundle/layout rules do not run and the package and channel rules read
	// bundle.Bundle.Loaded.
	Annotations map[string]map[string]string
	// Images checks existence and platforms of spec.relatedImages; nil skips
	// images/not-found, images/platform and images/check.
	Images ImageChecker
	// Charts are the charts read, for the cluster linted for, by manifest
	// path (the chart kind of internal/kind fills it): the chart/* rules.
	Charts map[string]*Chart
	// RefuseCharts, when set, names the cluster's target that cannot
	// publish charts (olm): each chart is a chart/target finding instead.
	RefuseCharts string
	// Prelinted are the findings of the bundle rules of bundles linted as
	// they were read (BundleRules), by manifest path: Run takes them
	// instead of linting those bundles again, which a slim bundle
	// (bundle.Slim) cannot be.
	Prelinted map[string][]Finding
	// Listing is what the cluster linted for lists once the run publishes
	// (run and plan, per cluster): dependency/missing checks the bundles'
	// dependencies against it. Nil (publish lint, over no cluster) skips
	// dependency/missing.
	Listing *Listing
}

// Run lints in and returns the findings, with cfg's severities and waivers
// applied, sorted by path, line, column and rule. It never fails: every
// problem, including a crashing validator, is a finding. When ctx is
// cancelled (an interrupted command) Run starts no more manifests or
// bundles, waits for the validators running and returns nil: the caller
// must check ctx.Err() and never take nil for "no findings" then.
func Run(ctx context.Context, cfg Config, in Input) []Finding {
	out := cfg.check()

	files := make([]*mfile, len(in.Files))
	parallel(ctx, len(in.Files), func(i int) {
		files[i] = checkManifest(in.Files[i].Path, in.Files[i].Data)
	})
	if ctx.Err() != nil {
		return nil // cancelled: see above
	}
	var fs []Finding
	byPath := map[string]*mfile{}
	var ms []*manifest.PackageManifest
	for _, f := range files {
		fs = append(fs, f.fs...)
		if _, dup := byPath[f.path]; dup {
			continue
		}
		byPath[f.path] = f
		if f.pm != nil {
			ms = append(ms, f.pm)
		}
	}
	manifest.Sort(ms)

	// Repo-wide rules, with columns.
	for _, x := range Repo(ms) {
		if f := byPath[x.Path]; f != nil {
			p := "spec.artifact"
			if x.Rule == RuleDuplicateVersion {
				p = "spec.version"
			}
			if n := f.node(p); n != nil {
				x.Line, x.Column = n.Line, n.Column
			}
		}
		fs = append(fs, x)
	}

	// Bundle, platform and images (CSV) rules, per manifest.
	k8s := cfg.kubernetesVersion()
	var withBundle []*mfile
	for _, m := range ms {
		f := byPath[m.Path]
		if err := in.BundleErrors[m.Path]; err != nil {
			fs = append(fs, f.bundleError(err))
			continue
		}
		if pre, ok := in.Prelinted[m.Path]; ok && in.Bundles[m.Path] != nil {
			fs = append(fs, pre...)
			b := in.Bundles[m.Path]
			ann := in.Annotations[m.Path]
			if ann == nil {
				ann = b.Annotations
			}
			if b.CSV != nil { // as bundleRules does, for graphRules
				f.channels, f.defaultChannel = bundleChannels(b, ann)
			}
		} else if in.Bundles[m.Path] != nil {
			withBundle = append(withBundle, f)
		}
	}
	per := make([][]Finding, len(withBundle))
	parallel(ctx, len(withBundle), func(i int) {
		f := withBundle[i]
		b := in.Bundles[f.path]
		ann := in.Annotations[f.path]
		if ann == nil {
			ann = b.Annotations
		}
		per[i] = append(f.bundleRules(b, ann, k8s), f.olmv1Rules(b, cfg.OLMv1Clusters)...)
	})
	for _, p := range per {
		fs = append(fs, p...)
	}
	if ctx.Err() != nil {
		return nil
	}
	fs = append(fs, chartFindings(in, ms, byPath)...)
	fs = append(fs, graphRules(ms, byPath, in.Bundles)...)
	fs = append(fs, releaseRules(ms, byPath, in.Bundles)...)
	fs = append(fs, dependencyRules(in.Listing, ms, byPath, in.Bundles)...)
	if in.Images != nil {
		fs = append(fs, checkImages(ctx, in.Images, ms, byPath)...)
	}

	out = append(out, Apply(cfg, fs)...)
	return finish(out)
}

// BundleRules runs the rules of one bundle alone (bundle, validator,
// platform, images (CSV) and OLM v1 rules: what Run runs per bundle) on b,
// read for the manifest file: so that a command can lint each bundle as it
// is read and keep only its findings (Input.Prelinted). ann is the raw
// metadata/annotations.yaml (nil: b.Annotations). The findings are as Run
// makes them before cfg's severities and waivers, which Run applies; a
// file that does not parse as a PackageManifest gives none (Run reports
// the file).
func BundleRules(cfg Config, file File, b *bundle.Bundle, ann map[string]string) []Finding {
	f := checkManifest(file.Path, file.Data)
	if f.pm == nil || b == nil {
		return nil
	}
	if ann == nil {
		ann = b.Annotations
	}
	return append(f.bundleRules(b, ann, cfg.kubernetesVersion()), f.olmv1Rules(b, cfg.OLMv1Clusters)...)
}

// kubernetesVersion is cfg.KubernetesVersion when it parses as a version,
// else "" (each CSV's spec.minKubeVersion; repo/config reports the value).
func (c Config) kubernetesVersion() string {
	if c.KubernetesVersion == "" {
		return ""
	}
	if _, err := semver.ParseTolerant(c.KubernetesVersion); err != nil {
		return ""
	}
	return c.KubernetesVersion
}

// Apply applies cfg's severities and waivers to fs (findings made outside
// Run, e.g. by the pipeline, get the same treatment) and returns them
// sorted. Rules set to off are dropped; waived findings get severity Waived
// and the waiver's reason. Findings of repo/waiver and repo/config are never
// re-graded or waived.
func Apply(cfg Config, fs []Finding) []Finding {
	valid := cfg.validWaivers()
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		if f.Rule == RuleWaiver || f.Rule == RuleConfig {
			out = append(out, f)
			continue
		}
		if s, ok := cfg.severityOf(f.Rule); ok {
			if s == Off {
				continue
			}
			f.Severity = s
		}
		for _, w := range valid {
			if ok, _ := matchRule(w.Rule, f.Rule); !ok {
				continue
			}
			if w.Artifact != "" && w.Artifact != f.Artifact {
				continue
			}
			if w.Version != "" && strings.TrimPrefix(w.Version, "v") != strings.TrimPrefix(f.Version, "v") {
				continue
			}
			f.OriginalSeverity, f.Severity, f.Waiver = f.Severity, Waived, w.Reason
			break
		}
		out = append(out, f)
	}
	return finish(out)
}

// severityOf returns the configured severity of rule, the most specific
// entry winning.
func (c Config) severityOf(rule string) (Severity, bool) {
	best, rank := Severity(""), -1
	for p, s := range c.Severity {
		if ok, r := matchRule(p, rule); ok && (r > rank || r == rank && p < string(best)) {
			best, rank = Severity(strings.ToLower(string(s))), r
		}
	}
	if rank < 0 {
		return "", false
	}
	switch best {
	case Error, Warning, Off:
		return best, true
	}
	return "", false
}

func (c Config) file() string {
	if c.File != "" {
		return c.File
	}
	return "publish.yaml"
}

func (c Config) validWaivers() []Waiver {
	var out []Waiver
	for _, w := range c.Waivers {
		if strings.TrimSpace(w.Reason) != "" && knownPattern(w.Rule) {
			out = append(out, w)
		}
	}
	return out
}

// check returns the findings about the configuration itself.
func (c Config) check() []Finding {
	var out []Finding
	key := ""
	add := func(rule, msg string) {
		out = append(out, Finding{Rule: rule, Severity: Error, Path: c.file(), Line: c.Lines[key], Message: msg, Hint: catalogByID[rule].Hint})
	}
	keys := make([]string, 0, len(c.Severity))
	for k := range c.Severity {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key = "severity." + k
		if !knownPattern(k) {
			add(RuleConfig, fmt.Sprintf("lint severity for %q: no such rule (see docs/lint-rules.md)", k))
		}
		switch Severity(strings.ToLower(string(c.Severity[k]))) {
		case Error, Warning, Off:
		default:
			add(RuleConfig, fmt.Sprintf("lint severity %q for %s: use error, warning or off", c.Severity[k], k))
		}
	}
	if c.KubernetesVersion != "" {
		key = "kubernetesVersion"
		if _, err := semver.ParseTolerant(c.KubernetesVersion); err != nil {
			add(RuleConfig, fmt.Sprintf("kubernetesVersion %q is not a version (e.g. 1.33): %v", c.KubernetesVersion, err))
		}
	}
	for i, w := range c.Waivers {
		key = fmt.Sprintf("waivers.%d", i)
		what := fmt.Sprintf("waiver %d (rule %q", i+1, w.Rule)
		if w.Artifact != "" {
			what += fmt.Sprintf(", artifact %s", w.Artifact)
		}
		if w.Version != "" {
			what += fmt.Sprintf(", version %s", w.Version)
		}
		what += ")"
		switch {
		case strings.TrimSpace(w.Rule) == "":
			add(RuleWaiver, what+" names no rule: it waives nothing")
		case !knownPattern(w.Rule):
			add(RuleWaiver, what+" names no known rule (see docs/lint-rules.md): it waives nothing")
		case w.Rule == RuleWaiver || w.Rule == RuleConfig:
			add(RuleWaiver, what+": findings about the configuration cannot be waived")
		}
		if strings.TrimSpace(w.Reason) == "" {
			add(RuleWaiver, what+" has no reason: it waives nothing until it says why the findings are acceptable")
		}
	}
	return out
}

// finish removes duplicate findings and sorts them.
func finish(fs []Finding) []Finding {
	Sort(fs)
	out := fs[:0]
	for i, f := range fs {
		if i > 0 && f == fs[i-1] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// Sort orders findings by path, line, column, rule, then the rest.
func Sort(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		switch {
		case a.Path != b.Path:
			return a.Path < b.Path
		case a.Line != b.Line:
			return a.Line < b.Line
		case a.Column != b.Column:
			return a.Column < b.Column
		case a.Rule != b.Rule:
			return a.Rule < b.Rule
		case a.BundlePath != b.BundlePath:
			return a.BundlePath < b.BundlePath
		case a.Message != b.Message:
			return a.Message < b.Message
		}
		return a.Severity < b.Severity
	})
}

// parallel runs f(0..n-1) on at most GOMAXPROCS goroutines; once ctx is
// done it starts no more (the calls running finish).
func parallel(ctx context.Context, n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n && ctx.Err() == nil; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
