package main

import "github.com/spf13/pflag"

// lintFlags are how `publish lint` checks and reports: --format, --offline,
// --no-image-check. The lint rules themselves (severities, waivers) come
// from publish.yaml for every command that lints (lint, run, plan, push
// --catalog): invocation.lintConfig.
type lintFlags struct {
	format    string
	offline   bool
	noImage   bool
	lintCache string
}

// lintCacheUsage is the help of --lint-cache (lint, run, plan,
// merge-shards).
const lintCacheUsage = "keep each bundle's lint results in DIR, keyed by the bundle's digest, its manifest, the lint configuration and this binary: a bundle linted before is not read again (docs/commands.md#the-lint-cache)"

func (l *lintFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.format, "format", "text", "text, json, sarif or github")
	fs.BoolVar(&l.offline, "offline", false, "do not read bundle images: manifest and repo rules only")
	fs.BoolVar(&l.noImage, "no-image-check", false, "do not check that related images exist in the source registry")
	fs.StringVar(&l.lintCache, "lint-cache", "", lintCacheUsage)
}

// check rejects an unknown --format (usage error).
func (l *lintFlags) check() error {
	switch l.format {
	case "text", "json", "sarif", "github":
		return nil
	}
	return usagef("--format %q: want text, json, sarif or github", l.format)
}
