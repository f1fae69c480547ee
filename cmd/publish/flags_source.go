package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
)

// sourceFlags are the package repo and its publish.yaml: --source,
// --packages-dir and --config (run, plan, lint, render, mirror, package),
// or --config alone (push, create: no package repo checkout).
type sourceFlags struct {
	source, packagesDir, config string
	// hasSource: --source and --packages-dir are registered.
	hasSource bool
}

// register adds --source, --packages-dir and --config.
func (s *sourceFlags) register(fs *pflag.FlagSet) {
	s.hasSource = true
	fs.StringVar(&s.source, "source", ".", "package repo checkout")
	fs.StringVar(&s.packagesDir, "packages-dir", "packages", "directory of PackageManifests, relative to --source")
	s.registerConfig(fs)
}

// registerConfig adds --config only.
func (s *sourceFlags) registerConfig(fs *pflag.FlagSet) {
	where := "publish.yaml at the root of --source"
	if !s.hasSource {
		where = "./publish.yaml"
	}
	fs.StringVar(&s.config, "config", "", "publish.yaml to read (default: "+where+", when present)")
}

// check rejects a --source or --packages-dir that is not a directory, as a
// usage error naming the flag (exit 2), before anything is read. A missing
// packages directory passes when allowMissing (run --allow-empty: every
// operator was removed, and every artifact is delisted); else the error
// says so when hint is set (run).
func (s *sourceFlags) check(allowMissing bool, hint string) error {
	if !s.hasSource {
		return nil
	}
	if fi, err := os.Stat(s.source); err != nil || !fi.IsDir() {
		return usagef("--source %s: not a directory (want the package repo checkout)", s.source)
	}
	if s.packagesDir == "" {
		return usagef("--packages-dir must not be empty")
	}
	dir := filepath.Join(s.source, s.packagesDir)
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return usagef("--packages-dir %s: %s is not a directory (check --source and --packages-dir)", s.packagesDir, dir)
	case os.IsNotExist(err) && allowMissing:
		return nil
	case os.IsNotExist(err):
		return usagef("--packages-dir %s: no directory %s (check --source and --packages-dir%s)", s.packagesDir, dir, hint)
	}
	return usagef("--packages-dir %s: %v", s.packagesDir, err)
}
