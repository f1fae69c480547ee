package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError is a wrong command line (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "publish",
		Short:         "Publish Kubernetes Operators from a package repo to a registry and a GitOps catalog repo",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(newRunCmd(), newPlanCmd(), newLintCmd(), newRenderCmd(), newVersionCmd(), newMirrorCmd(), newPackageCmd(), newPushCmd(), newVerifyCmd(), newCreateCmd(), newAdoptCmd())
	return root
}

// envName is the environment variable that sets a flag: PUBLISH_ and the
// flag name in upper case with '-' as '_' (--dst-password:
// PUBLISH_DST_PASSWORD).
func envName(flag string) string {
	return "PUBLISH_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// ciEnv is the CI system publish runs in (internal/ci), detected first thing
// in main so that secrets are masked before anything is printed. Nil in
// tests: plain output.
var ciEnv ci.Env

// masked holds the secrets already masked in the CI log, so each is masked
// once.
var masked = map[string]bool{}

// applyEnv sets every flag of fs that was not given on the command line from
// its environment variable, if set, else from the GitHub Action input of the
// same name (INPUT_<NAME>): flag > PUBLISH_* > action input > default. Every
// password that ends up set is masked in the CI log.
func applyEnv(fs *pflag.FlagSet) error {
	var err error
	inputs := ci.FlagEnv(nil)
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok && v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = &usageError{fmt.Errorf("environment %s: %w", envName(f.Name), e)}
			}
		} else if v := inputs[f.Name]; v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = &usageError{fmt.Errorf("action input %s (%s): %w", f.Name, ci.InputEnv(f.Name), e)}
			}
		}
	})
	if err == nil && fs.Lookup("config") != nil {
		err = applyConfig(fs)
	}
	if ciEnv != nil {
		fs.VisitAll(func(f *pflag.Flag) {
			if v := f.Value.String(); strings.HasSuffix(f.Name, "-password") && v != "" && !masked[v] {
				masked[v] = true
				ciEnv.Mask(v)
			}
		})
	}
	return err
}

// withEnvHelp appends the environment variable to each flag's usage.
func withEnvHelp(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		f.Usage += " [$" + envName(f.Name) + "]"
	})
}

// loadedConfig is the publish.yaml applied by applyConfig (nil: none).
var loadedConfig *config.Config

// applyConfig reads publish.yaml (--config, else <--source>/publish.yaml
// when it exists) and sets every flag still unset from it: it comes after
// flags and the environment, before defaults.
func applyConfig(fs *pflag.FlagSet) error {
	path, required := fs.Lookup("config").Value.String(), true
	if path == "" {
		src := "."
		if f := fs.Lookup("source"); f != nil {
			src = f.Value.String()
		}
		path, required = filepath.Join(src, config.FileName), false
	}
	c, err := config.Load(path, required)
	if err != nil {
		return &pipeline.InputError{Err: err}
	}
	loadedConfig = c
	for name, v := range c.Values() {
		f := fs.Lookup(name)
		if f == nil || f.Changed {
			continue
		}
		if e := fs.Set(name, v); e != nil {
			return &pipeline.InputError{Err: fmt.Errorf("%s: %s: %w", path, name, e)}
		}
	}
	return nil
}
