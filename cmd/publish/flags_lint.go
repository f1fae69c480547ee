package main

import "github.com/spf13/pflag"

// lintFlags are how `publish lint` checks and reports: --format, --offline,
// --no-image-check. The lint rules themselves (severities, waivers) come
// from publish.yaml for every command that lints (lint, run, plan, push
// --catalog): invocation.lintConfig.
type lintFlags struct {
	format  string
	offline bool
	noImage bool
}

func (l *lintFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.format, "format", "text", "text, json, sarif or github")
	fs.BoolVar(&l.offline, "offline", false, "do not read bundle images: manifest and repo rules only")
	fs.BoolVar(&l.noImage, "no-image-check", false, "do not check that related images exist in the source registry")
}

// check rejects an unknown --format (usage error).
func (l *lintFlags) check() error {
	switch l.format {
	case "text", "json", "sarif", "github":
		return nil
	}
	return usagef("--format %q: want text, json, sarif or github", l.format)
}
