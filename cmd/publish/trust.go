package main

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/source/diff"
	"github.com/operator-publish/publish/internal/trust"
	"github.com/spf13/pflag"
)

// trustedFlags are the flags that choose where credentials go, or how
// they travel: in a pull request their publish.yaml values come from the
// base revision, never from the pull request (docs/security.md).
var trustedFlags = []string{"catalog", "dst-registry", "src-registry", "plain-http", "ca-file", "forge", "forge-api-url", "forge-repo"}

// pullRequestTrust makes a command that runs on a pull request (plan, and
// lint in a CI pull-request pipeline) take what decides where credentials
// go from the pull request's base revision instead of the working tree:
//
//   - every flag of trustedFlags that publish.yaml set (none the command
//     line, the environment or an action input set) gets the value of
//     the base's publish.yaml, or its default when the base has none, and
//     each clusters.<name>.dstRegistry is the base's; a warning names
//     every one the pull request changes;
//   - without --src-registry (or the base's srcRegistries:), the source
//     credentials go only to the registries the base's package manifests
//     name (src.pinned).
//
// base is --base ("" for the merge base with target). When no base can
// be resolved, nothing of the working tree's publish.yaml is trusted for
// those flags and the source credentials go to no registry unless
// --src-registry names it. Errors: a base that cannot be read, or whose
// publish.yaml does not load.
func (inv *invocation) pullRequestTrust(ctx context.Context, fs *pflag.FlagSet, source *sourceFlags, src *srcRegistryFlags, base, target string, fetch bool) error {
	res, err := diff.ResolveBase(ctx, diff.Options{Repo: source.source, Base: base, PR: true, TargetBranch: target, Fetch: fetch, Getenv: inv.getenv, Log: inv.logWriter()})
	var b *trust.Base
	if err == nil && res != nil && res.Base != "" {
		cfg := source.config
		if cfg == "" {
			cfg = filepath.Join(source.source, config.FileName)
		}
		if b, err = trust.Read(source.source, res.Base, cfg, source.source); err != nil {
			return err
		}
	} else {
		why := "no merge base"
		if err != nil {
			why = err.Error()
		}
		inv.warnf("pull request: the base revision cannot be read (%s): publish.yaml's %v are not taken from the pull request, and the source credentials go only to --src-registry hosts", why, trustedFlags)
		b = &trust.Base{SourceHosts: []string{}}
	}
	if b.ConfigOutside {
		// --config names the workflow's own file: no pull request wrote it.
		if len(src.hosts) == 0 {
			src.pinned, src.hosts = true, slices.Clone(b.SourceHosts)
		}
		return nil
	}
	changed := inv.rebaseFlags(fs, b.Config)
	if inv.config != nil {
		for _, name := range sortedClusters(inv.config) {
			cl := inv.config.Clusters[name]
			want := ""
			if b.Config != nil {
				want = b.Config.Clusters[name].DstRegistry
			}
			if cl.DstRegistry != want {
				changed = append(changed, "clusters."+name+".dstRegistry")
				cl.DstRegistry = want
				inv.config.Clusters[name] = cl
			}
		}
	}
	for _, c := range changed {
		inv.warnf("pull request: publish.yaml %s differs from the base revision %s: the plan uses the base's value (a pull request cannot choose where credentials go; it takes effect once merged)", c, shortCommit(b.Commit))
	}
	if len(src.hosts) == 0 {
		src.pinned, src.hosts = true, slices.Clone(b.SourceHosts)
	}
	return nil
}

// rebaseFlags sets every trusted flag that publish.yaml set to the value
// of base (a publish.yaml; nil: none), or back to its default, and
// returns the publish.yaml keys whose value differed.
func (inv *invocation) rebaseFlags(fs *pflag.FlagSet, base *config.Config) []string {
	values := base.Values() // nil-safe
	var changed []string
	for _, name := range trustedFlags {
		f := fs.Lookup(name)
		if f == nil || (f.Changed && !inv.fromConfig[name]) {
			continue
		}
		want, ok := values[name]
		if !ok {
			want = f.DefValue
		}
		if f.Value.String() == want || (f.Value.Type() == "stringSlice" && sliceText(f) == want) {
			continue
		}
		changed = append(changed, configKey(name))
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			var list []string
			if want != "" && want != "[]" {
				list = splitList(want)
			}
			_ = sv.Replace(list)
		} else {
			_ = f.Value.Set(want)
		}
	}
	return changed
}

// configKey is the publish.yaml key of a flag.
func configKey(flag string) string {
	switch flag {
	case "dst-registry":
		return "dstRegistry"
	case "src-registry":
		return "srcRegistries"
	case "plain-http":
		return "plainHTTP"
	case "ca-file":
		return "caFile"
	case "forge":
		return "forge.kind"
	case "forge-api-url":
		return "forge.apiURL"
	case "forge-repo":
		return "forge.repo"
	}
	return flag
}

func sliceText(f *pflag.Flag) string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return joinList(sv.GetSlice())
	}
	return f.Value.String()
}

func sortedClusters(c *config.Config) []string {
	names := make([]string, 0, len(c.Clusters))
	for n := range c.Clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func shortCommit(c string) string {
	if c == "" {
		return "(none)"
	}
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func splitList(s string) []string { return strings.Split(s, ",") }
func joinList(l []string) string  { return strings.Join(l, ",") }
