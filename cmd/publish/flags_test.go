package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/target"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// visibleFlags lists the flags of a command that --help shows (local and
// global), sorted.
func visibleFlags(cmd *cobra.Command) []string {
	var out []string
	add := func(f *pflag.Flag) {
		if !f.Hidden && !slices.Contains(out, f.Name) {
			out = append(out, f.Name)
		}
	}
	cmd.LocalFlags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	sort.Strings(out)
	return out
}

func subcommand(t *testing.T, root *cobra.Command, name string) *cobra.Command {
	t.Helper()
	for _, c := range root.Commands() {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}

// The vocabulary: one name per concept on every
// command that has the concept.
var (
	sourceGroup  = []string{"source", "packages-dir", "config"}
	srcGroup     = []string{"src-username", "src-password", "src-registry"}
	dstGroup     = []string{"dst-registry", "dst-username", "dst-password"}
	tlsGroup     = []string{"insecure", "ca-file", "plain-http", "plain-http-registry"}
	retryGroup   = []string{"retries", "request-timeout"}
	copyGroup    = []string{"concurrency", "signatures", "allow-nondistributable"}
	catalogGroup = []string{"catalog", "catalog-branch", "catalog-path", "catalog-username", "catalog-password", "catalog-ssh-key", "catalog-ssh-key-password", "catalog-known-hosts", "insecure-ignore-host-key", "create-branch", "init-catalog"}
	commitGroup  = []string{"commit-author-name", "commit-author-email", "commit-committer-name", "commit-committer-email", "signing-key", "signing-key-password", "commit-message-template"}
	renderGroup  = []string{"cluster", "target", "namespace", "library", "image-pull-secret"}
	ociGroup     = []string{"no-oci", "oci"}
	signGroup    = []string{"cosign-key", "cosign-key-password", "cosign-sig-tag"}
	// deliveryGroup: how run delivers each cluster's change.
	deliveryGroup = []string{"delivery", "pr-label", "auto-merge", "plan-dir", "forge", "forge-api-url", "forge-repo", "forge-token"}
	// chartRepoGroup: the credentials of a cluster's ChartMuseum.
	chartRepoGroup = []string{"chart-repo-username", "chart-repo-password", "chart-repo-token"}
	// clustersGroup: the commands that serve several clusters in one run.
	clustersGroup = []string{"clusters"}
	lintGroup     = []string{"format", "offline", "no-image-check", "lint-cache"}
	logGroup      = []string{"log-format", "quiet", "verbose"}

	// aliases: hidden spellings that every command with the canonical
	// flag accepts.
	aliases = map[string][]string{
		"dst-registry": {"dst-repo", "dest-repo"},
		"dst-username": {"username"},
		"dst-password": {"password"},
		"plain-http":   {"plain"},
	}
)

func join(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	sort.Strings(out)
	return out
}

// TestCommandFlags lists the flags of every command: each offers exactly
// its groups (so plan has no commit, signing or copy flag, lint no render
// flag), every registry command names things the same way, and the
// violet spellings are accepted where their flag is.
func TestCommandFlags(t *testing.T) {
	want := map[string][]string{
		"run": join(sourceGroup, srcGroup, dstGroup, tlsGroup, retryGroup, copyGroup, catalogGroup, commitGroup, renderGroup, clustersGroup, ociGroup, signGroup, deliveryGroup, chartRepoGroup, logGroup,
			[]string{"allow-dirty", "allow-empty", "base", "no-fetch", "report", "shard", "shard-result", "source-mirror", "lint-cache"}),
		"merge-shards": join(sourceGroup, srcGroup, dstGroup, tlsGroup, retryGroup, copyGroup, catalogGroup, commitGroup, renderGroup, clustersGroup, ociGroup, signGroup, deliveryGroup, chartRepoGroup, logGroup,
			[]string{"allow-dirty", "allow-empty", "base", "no-fetch", "report", "key", "shard-results", "lint-cache"}),
		"plan": join(sourceGroup, srcGroup, dstGroup, tlsGroup, retryGroup, catalogGroup, renderGroup, clustersGroup, logGroup,
			[]string{"base", "target-branch", "no-fetch", "plan-json", "matrix", "matrix-format", "lint-cache", "source-mirror"}),
		"lint":   join(sourceGroup, srcGroup, tlsGroup, retryGroup, lintGroup, logGroup, []string{"source-mirror"}),
		"check":  join([]string{"config", "cluster"}, logGroup, dstGroup, tlsGroup, retryGroup, []string{"catalog-dir", "base", "target-branch", "no-fetch", "registry", "format"}),
		"render": join(sourceGroup, renderGroup, clustersGroup, logGroup, []string{"dst-registry", "plain-http", "catalog-dir"}),
		"mirror": join(sourceGroup, srcGroup, dstGroup, tlsGroup, retryGroup, copyGroup, logGroup,
			[]string{"base", "no-fetch", "image", "report", "shard", "shard-result", "source-mirror"}),
		"package": join(sourceGroup, srcGroup, tlsGroup, retryGroup, catalogGroup[:len(catalogGroup)-2], renderGroup, logGroup,
			[]string{"output", "changed", "base", "no-fetch", "platforms", "level", "cache", "verify-cache", "signatures", "source-mirror", "max-size", "strict-size", "base-archive"}, signGroup),
		"push": join([]string{"config"}, dstGroup, tlsGroup, catalogGroup, commitGroup, renderGroup, ociGroup, signGroup, chartRepoGroup, logGroup,
			[]string{"no-auth", "jobs", "skip-push", "skip-crs", "key", "only", "valid-until"}),
		"create": join([]string{"config"}, srcGroup, tlsGroup, retryGroup, logGroup, []string{"artifact", "chart", "version", "platforms", "force"}),
		"verify": join(logGroup, []string{"key", "valid-until"}),
		"adopt":  join(logGroup, []string{"namespace", "kubeconfig", "context", "kube-timeout", "dry-run", "refresh-after", "refresh-catalog-operator"}),
		"status": join(logGroup, tlsGroup, catalogGroup[:len(catalogGroup)-2], []string{"catalog-dir", "cluster", "rendered", "kubeconfig", "context", "kube-timeout", "output", "summary", "wait", "refresh-after", "refresh-catalog-operator", "record"}),
		"import": join([]string{"config", "dst-username", "dst-password"}, tlsGroup, retryGroup, catalogGroup, commitGroup, renderGroup, logGroup,
			[]string{"kubeconfig", "context", "kube-timeout", "manifests-dir", "dry-run", "output"}),
		"prune":   join(logGroup, dstGroup, tlsGroup, retryGroup, catalogGroup[:len(catalogGroup)-2], []string{"catalog-dir", "plan", "apply", "older-than", "lookup", "pull-request", "pr-branch", "forge", "forge-api-url", "forge-repo", "forge-token"}),
		"version": join(logGroup),
		"list":    join(logGroup, tlsGroup, catalogGroup[:len(catalogGroup)-2], []string{"cluster", "output"}),
	}
	root := newRootCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		w, ok := want[c.Name()]
		if !ok {
			t.Errorf("command %s is not in the table: add it", c.Name())
			continue
		}
		if got := visibleFlags(c); !slices.Equal(got, w) {
			t.Errorf("%s flags:\n got %v\nwant %v\nextra %v, missing %v", c.Name(), got, w, minus(got, w), minus(w, got))
		}
		fs := c.Flags()
		for canonical, names := range aliases {
			for _, a := range names {
				f := fs.Lookup(a)
				switch {
				case fs.Lookup(canonical) == nil && f != nil:
					t.Errorf("%s: --%s without --%s", c.Name(), a, canonical)
				case fs.Lookup(canonical) != nil && (f == nil || !f.Hidden || aliasOf(f) != canonical):
					t.Errorf("%s: --%s is not a hidden alias of --%s", c.Name(), a, canonical)
				}
			}
		}
		// Every password flag (aliases too) is a secret: masked in CI.
		fs.VisitAll(func(f *pflag.Flag) {
			if strings.HasSuffix(f.Name, "password") && !isSecret(f) {
				t.Errorf("%s: --%s is not marked secret", c.Name(), f.Name)
			}
		})
	}
}

func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestCAFileRegisteredOnce: --ca-file (and each group's flags) are
// registered in one place in the code.
func TestCAFileRegisteredOnce(t *testing.T) {
	re := regexp.MustCompile(`Var[P]?\([^,]+, "([a-z0-9-]+)"`)
	files, _ := filepath.Glob("*.go")
	count := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "adopt.go" || f == "status.go" {
			// adopt and status talk to a cluster: adopt's --namespace is
			// where it looks; status's --cluster only names rendered/<cluster>
			// (none of renderFlags' other flags apply).
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			count[m[1]] = append(count[m[1]], f)
		}
	}
	for _, name := range join(srcGroup, dstGroup, tlsGroup, retryGroup, copyGroup, catalogGroup, commitGroup, renderGroup, signGroup, []string{"config", "source", "packages-dir"}) {
		if n := len(count[name]); n != 1 {
			t.Errorf("--%s is registered %d times (%v), want once, in its flag group", name, n, count[name])
		}
	}
}

// TestAliases: a violet spelling sets its flag, beats the canonical
// variable as any command-line flag does, and its password is masked; an
// old PUBLISH_* variable still works, with a deprecation notice.
func TestAliases(t *testing.T) {
	t.Setenv("PUBLISH_DST_REGISTRY", "env.example.com")
	rec := &recordingEnv{}
	inv := newInvocation(rec)
	p := &pushCmd{}
	cmd := p.command(inv)
	fs := cmd.Flags()
	if err := fs.Parse([]string{"--dst-repo", "flag.example.com/ops", "--username", "u", "--password", "s3cret-flag", "--plain"}); err != nil {
		t.Fatal(err)
	}
	notices, err := inv.applyEnv(fs)
	if err != nil {
		t.Fatal(err)
	}
	if p.dst.registry != "flag.example.com/ops" || p.dst.creds.Username != "u" || p.dst.creds.Password != "s3cret-flag" || !p.tls.plainHTTP {
		t.Errorf("aliases not applied: %+v %+v", p.dst, p.tls)
	}
	for _, n := range notices {
		if n.level > -4 { // above debug
			t.Errorf("a violet spelling on the command line gets a notice: %v", n)
		}
	}
	if !slices.Contains(rec.masked, "s3cret-flag") {
		t.Errorf("--password not masked: %v", rec.masked)
	}
	if got := spelled(fs, "dst-registry"); got != "--dst-repo" {
		t.Errorf("spelled %s, want --dst-repo", got)
	}

	// push's old variables.
	t.Setenv("PUBLISH_DST_REGISTRY", "")
	t.Setenv("PUBLISH_DST_REPO", "old.example.com")
	t.Setenv("PUBLISH_PASSWORD", "s3cret-env")
	inv = newInvocation(rec)
	p = &pushCmd{}
	fs = p.command(inv).Flags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	notices, err = inv.applyEnv(fs)
	if err != nil {
		t.Fatal(err)
	}
	if p.dst.registry != "old.example.com" || p.dst.creds.Password != "s3cret-env" {
		t.Errorf("old variables not applied: %+v", p.dst)
	}
	var warned []string
	for _, n := range notices {
		if n.level >= 4 {
			warned = append(warned, n.msg)
		}
		if strings.Contains(n.msg, "s3cret") {
			t.Errorf("a notice prints the secret: %s", n.msg)
		}
	}
	if !slices.Contains(warned, "PUBLISH_DST_REPO is deprecated: use PUBLISH_DST_REGISTRY") || !slices.Contains(warned, "PUBLISH_PASSWORD is deprecated: use PUBLISH_DST_PASSWORD") {
		t.Errorf("deprecation notices: %v", warned)
	}
	if !slices.Contains(rec.masked, "s3cret-env") {
		t.Errorf("PUBLISH_PASSWORD not masked: %v", rec.masked)
	}
}

// TestPushCatalogWiredAsRun: push --catalog takes cluster, target, the
// lint rules and the olm settings from the same flags and publish.yaml as
// run.
func TestPushCatalogWiredAsRun(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "packages"), 0o755)
	cfg := filepath.Join(dir, "publish.yaml")
	os.WriteFile(cfg, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
namespace: from-file
clusters:
  edge:
    target: olm
    oci: registry.example.com/platform/operator-catalog
    olm:
      catalogSource: {pollInterval: 1h}
lint:
  severity:
    manifest/bom: "off"
`), 0o644)
	common := []string{"--config", cfg, "--cluster", "edge", "--dst-registry", "r.example.com", "--catalog", "https://git.example.com/c.git", "--commit-author-name", "Bot"}

	invRun := newInvocation(nil)
	var pr publishFlags
	runCmd := &cobra.Command{Use: "run"}
	pr.register(runCmd, true)
	if err := runCmd.Flags().Parse(append([]string{"--source", dir}, common...)); err != nil {
		t.Fatal(err)
	}
	if _, err := invRun.applyEnv(runCmd.Flags()); err != nil {
		t.Fatal(err)
	}
	ro := &pipeline.Options{}
	if err := pr.options(invRun, ro, false); err != nil {
		t.Fatal(err)
	}

	invPush := newInvocation(nil)
	p := &pushCmd{}
	fs := p.command(invPush).Flags()
	if err := fs.Parse(common); err != nil {
		t.Fatal(err)
	}
	if _, err := invPush.applyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if err := p.options(invPush, "x.tgz"); err != nil {
		t.Fatal(err)
	}
	po := p.o.Options
	olmOf := func(o *pipeline.Options) target.OLMOptions { s, _ := o.TargetSettings.(target.OLMOptions); return s }
	if po.Target != "olm" || po.Target != ro.Target || po.Cluster != ro.Cluster || olmOf(&po).Source.PollInterval != "1h" || olmOf(ro).Source.PollInterval != "1h" ||
		po.Render.Namespace != "from-file" || po.Render.Namespace != ro.Render.Namespace {
		t.Errorf("push: target %q cluster %q olm %+v render %+v; run: %q %q %+v %+v", po.Target, po.Cluster, po.TargetSettings, po.Render, ro.Target, ro.Cluster, ro.TargetSettings, ro.Render)
	}
	if po.OCI != "registry.example.com/platform/operator-catalog" || po.OCI != ro.OCI {
		t.Errorf("push oci %q, run %q", po.OCI, ro.OCI)
	}
	if len(po.Lint.Severity) == 0 || po.Lint.Severity["manifest/bom"] != ro.Lint.Severity["manifest/bom"] {
		t.Errorf("push lint rules %+v, run %+v", po.Lint, ro.Lint)
	}
	if po.Catalog.URL != ro.Catalog.URL || po.Catalog.AuthorName != "Bot" || po.Catalog.AuthorName != ro.Catalog.AuthorName {
		t.Errorf("push catalog %+v, run %+v", po.Catalog, ro.Catalog)
	}
	if p.o.Mirror.DstRegistry != "r.example.com" {
		t.Errorf("push destination %q", p.o.Mirror.DstRegistry)
	}
}

// TestNoStateBetweenInvocations: what one invocation read (publish.yaml,
// masked secrets) is not seen by the next.
func TestNoStateBetweenInvocations(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "packages"), 0o755)
	os.WriteFile(filepath.Join(dir, "publish.yaml"), []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nclusters:\n  global:\n    target: olm\n"), 0o644)
	resolve := func(source string) string {
		inv := newInvocation(nil)
		var src sourceFlags
		var r renderFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		src.register(fs)
		r.register(fs)
		fs.Parse([]string{"--source", source})
		if _, err := inv.applyEnv(fs); err != nil {
			t.Fatal(err)
		}
		rs, err := r.resolve(inv.config)
		if err != nil {
			t.Fatal(err)
		}
		return rs.Target
	}
	if got := resolve(dir); got != "olm" {
		t.Fatalf("target %q, want olm", got)
	}
	if got := resolve(t.TempDir()); got != "alauda" {
		t.Errorf("second invocation: target %q, want alauda (the first one's publish.yaml leaked)", got)
	}
}

// TestPackagesDirIsUsageError: a wrong --source or --packages-dir is a
// usage error (exit 2) naming the flag, on every command that reads the
// package repo, before anything else is read.
func TestPackagesDirIsUsageError(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "packages"), 0o755)
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"lint", "--source", dir, "--packages-dir", "nope", "--offline"}, "--packages-dir"},
		{[]string{"lint", "--source", filepath.Join(dir, "missing"), "--offline"}, "--source"},
		{[]string{"lint", "--source", dir, "--packages-dir", "file", "--offline"}, "--packages-dir"},
		{[]string{"run", "--source", dir, "--packages-dir", "nope", "--catalog", dir, "--dst-registry", "r.example.com"}, "--allow-empty"},
		{[]string{"plan", "--source", dir, "--packages-dir", "nope", "--catalog", dir}, "--packages-dir"},
		{[]string{"render", "--source", dir, "--packages-dir", "nope", "--catalog-dir", dir}, "--packages-dir"},
		{[]string{"mirror", "--source", dir, "--packages-dir", "nope", "--dst-registry", "r.example.com"}, "--packages-dir"},
		{[]string{"package", "--source", dir, "--packages-dir", "nope", "-o", filepath.Join(dir, "x.tgz")}, "--packages-dir"},
	} {
		_, err := runPublish(t, tc.args...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%v: %v (exit %d), want exit 2 naming %s", tc.args, err, exitCode(err), tc.flag)
		}
	}
}

// TestLogFlags: --log-format json writes one JSON object per stderr line,
// --quiet keeps warnings and errors only; results stay on stdout either
// way; a wrong --log-format is a usage error.
func TestLogFlags(t *testing.T) {
	src, dst := inProcessRegistry(t), inProcessRegistry(t)
	pushRandom(t, src+"/team/a:v1")
	args := []string{"mirror", "--dst-registry", dst + "/m", "--image", src + "/team/a:v1"}

	out, errOut, err := runPublishErr(t, append(args, "--log-format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "copied ") {
		t.Errorf("stdout lacks the result:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) < 2 {
		t.Errorf("stderr: %q", errOut)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "{") || !strings.Contains(l, `"msg":"mirror: `) {
			t.Errorf("not a JSON log line: %s", l)
		}
	}

	out, errOut, err = runPublishErr(t, append(args, "--quiet")...)
	if err != nil || errOut != "" || !strings.Contains(out, "present ") {
		t.Errorf("--quiet: %v, stderr %q, stdout %q", err, errOut, out)
	}
	out, errOut, err = runPublishErr(t, args...)
	if err != nil || !strings.HasPrefix(errOut, "mirror: 0 package versions, 1 related images") {
		t.Errorf("text: %v, stderr %q", err, errOut)
	}
	_ = out
	for _, bad := range [][]string{{"--log-format", "yaml"}, {"--quiet", "--verbose"}} {
		_, _, err := runPublishErr(t, append(args, bad...)...)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}

// TestPinned: a reference pinned by digest is printed once, not with its
// digest twice.
func TestPinned(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	for ref, want := range map[string]string{
		"r.example.com/a:v1":          "r.example.com/a:v1@" + d,
		"r.example.com/a@" + d:        "r.example.com/a@" + d,
		"r.example.com/a:v1@" + d:     "r.example.com/a:v1@" + d,
		"r.example.com/a:v1@sha256:b": "r.example.com/a:v1@sha256:b@" + d,
	} {
		if got := pinned(ref, d); got != want {
			t.Errorf("pinned(%s) = %s, want %s", ref, got, want)
		}
	}
}

// recordingEnv is a ci.Env that records what it is asked to mask.
type recordingEnv struct {
	masked []string
}

func (r *recordingEnv) Name() string                   { return "github" }
func (r *recordingEnv) Mask(s string)                  { r.masked = append(r.masked, s) }
func (r *recordingEnv) SetOutput(string, string) error { return nil }
func (r *recordingEnv) Summary(string) error           { return nil }
func (r *recordingEnv) Annotate([]lint.Finding)        {}
func (r *recordingEnv) PullRequest() (bool, string)    { return false, "" }

// runPublishErr runs publish with args and returns stdout and stderr.
func runPublishErr(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	root.SetArgs(args)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(t.Context())
	t.Logf("publish %s:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), errOut.String(), err
}

// pushRandom writes a random image to ref with opts and returns its
// digest.
func pushRandom(t *testing.T, ref string, opts ...remote.Option) string {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, ref), img, opts...); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d.String()
}

// TestDeprecatedAlias: a renamed flag keeps its old name, which works and
// says what to use instead; its help shows the new name only.
func TestDeprecatedAlias(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var v string
	fs.StringVar(&v, "new-name", "", "a flag")
	alias(fs, "new-name", "old-name", true)
	if err := fs.Parse([]string{"--old-name", "x"}); err != nil {
		t.Fatal(err)
	}
	inv := newInvocation(nil)
	notices, err := inv.applyEnv(fs)
	if err != nil || v != "x" || !inv.given("new-name") {
		t.Fatalf("%v %q %v", err, v, inv.cmdline)
	}
	if len(notices) != 1 || notices[0].msg != "--old-name is deprecated: use --new-name" {
		t.Errorf("notices %v", notices)
	}
	if f := fs.Lookup("new-name"); !strings.HasSuffix(f.Usage, "(alias: --old-name)") {
		t.Errorf("usage %q", f.Usage)
	}
}

// TestCatalogURLTokenMasked: a token given in the catalog URL
// (https://TOKEN@host/..., the user part alone) is masked in the CI log.
func TestCatalogURLTokenMasked(t *testing.T) {
	rec := &recordingEnv{}
	inv := newInvocation(rec)
	p := &pushCmd{}
	fs := p.command(inv).Flags()
	if err := fs.Parse([]string{"--catalog", "https://ghp_tok3nInTheURL@git.example.com/o/c.git"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.applyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.masked, "ghp_tok3nInTheURL") {
		t.Errorf("the URL's token is not masked: %v", rec.masked)
	}
}
