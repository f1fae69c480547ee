package main

// How a flag gets its value, and the aliases of a flag. The flag groups
// (flags_*.go) register their flags with the helpers here; every command
// wires the groups it needs (docs/design.md, "The commands").

import (
	"fmt"
	"github.com/operator-publish/publish/internal/errclass"
	"github.com/operator-publish/publish/internal/redact"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/verify"
	"github.com/spf13/pflag"
)

// usageError is a wrong command line (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// ErrorClass implements errclass.Classified: a usage error (exit 2).
func (e *usageError) ErrorClass() errclass.Class { return errclass.Usage }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// Flag annotations (pflag.Flag.Annotations) that the helpers below read.
const (
	// annAliasOf marks an alias: its value is the canonical flag's name.
	annAliasOf = "publish/alias-of"
	// annDeprecated marks an alias that says so when used (on the command
	// line or through its PUBLISH_* variable).
	annDeprecated = "publish/deprecated"
	// annSecret marks a password or token: masked in the CI log, never
	// logged.
	annSecret = "publish/secret"
	// annNoConfig marks a flag that publish.yaml does not set for this
	// command (push: the catalog is switched on explicitly).
	annNoConfig = "publish/no-config"
)

// envName is the environment variable that sets a flag: PUBLISH_ and the
// flag name in upper case with '-' as '_' (--dst-password:
// PUBLISH_DST_PASSWORD).
func envName(flag string) string {
	return "PUBLISH_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// alias registers name as another spelling of the canonical flag: the same
// value, hidden from --help (the canonical flag's help names it), its own
// PUBLISH_* variable. A deprecated alias gets a notice when used; a
// violet spelling (--dst-repo, --username, --plain) does not, as the
// platform's procedure tells users to type it.
func alias(fs *pflag.FlagSet, canonical, name string, deprecated bool) {
	f := fs.Lookup(canonical)
	if f == nil {
		panic("alias of an unregistered flag --" + canonical)
	}
	fs.AddFlag(&pflag.Flag{Name: name, Value: f.Value, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal, Usage: "alias of --" + canonical, Hidden: true})
	_ = fs.SetAnnotation(name, annAliasOf, []string{canonical})
	if deprecated {
		_ = fs.SetAnnotation(name, annDeprecated, []string{"true"})
	}
	if isSecret(f) {
		_ = fs.SetAnnotation(name, annSecret, f.Annotations[annSecret])
	}
	if i := strings.Index(f.Usage, " (alias: "); i >= 0 {
		f.Usage = f.Usage[:i]
	}
	f.Usage += " (alias: --" + strings.Join(aliasNames(fs, canonical), ", --") + ")"
}

// secret marks the flags as passwords or tokens.
func secret(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		_ = fs.SetAnnotation(n, annSecret, []string{"true"})
	}
}

// secretKey marks flags that take a key or the file holding it: the
// value is masked when it is the key itself (a PEM or armored block).
func secretKey(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		_ = fs.SetAnnotation(n, annSecret, []string{"key"})
	}
}

func isSecret(f *pflag.Flag) bool { return len(f.Annotations[annSecret]) > 0 }

// secretValue is the value of a secret flag to mask, "" for none.
func secretValue(f *pflag.Flag) string {
	if !isSecret(f) {
		return ""
	}
	v := f.Value.String()
	if f.Annotations[annSecret][0] == "key" {
		return keySecret(v) // "" for a file name
	}
	return v
}

// aliasOf is the canonical name of an alias, "" for a canonical flag.
func aliasOf(f *pflag.Flag) string {
	if a := f.Annotations[annAliasOf]; len(a) > 0 {
		return a[0]
	}
	return ""
}

// aliasNames lists the aliases of canonical, sorted.
func aliasNames(fs *pflag.FlagSet, canonical string) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		if aliasOf(f) == canonical {
			out = append(out, f.Name)
		}
	})
	sort.Strings(out)
	return out
}

// spelled is the flag as the user typed it: an alias given on the command
// line, else the canonical name, with "--". Errors use it, so that they
// name a flag of the command that ran, in the user's words.
func spelled(fs *pflag.FlagSet, canonical string) string {
	name := canonical
	fs.Visit(func(f *pflag.Flag) {
		if aliasOf(f) == canonical {
			name = f.Name
		}
	})
	return "--" + name
}

// isSet reports whether the flag (or an alias of it) got a value from
// anywhere: the command line, the environment, an action input, publish.yaml.
func isSet(fs *pflag.FlagSet, canonical string) bool {
	f := fs.Lookup(canonical)
	return f != nil && f.Changed
}

// withEnvHelp appends the environment variable to each canonical flag's
// usage.
func withEnvHelp(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if aliasOf(f) == "" && f.Name != "help" {
			f.Usage += " [$" + envName(f.Name) + "]"
		}
	})
}

// applyEnv fills every flag of fs that the command line left unset:
// PUBLISH_<FLAG>, then an alias's PUBLISH_<ALIAS> (with a deprecation
// notice), then the GitHub Action input of the same name (INPUT_<NAME>),
// then publish.yaml (--config, or <--source>/publish.yaml), then the
// default. An alias given on the command line counts as its canonical
// flag. Every password or token that ends up set is masked in the CI log.
// It returns the notices to log: deprecated spellings (warnings) and where
// each flag's value came from (debug); never a value.
// Errors: *usageError for a value that does not parse, *pipeline.InputError
// for publish.yaml.
func (inv *invocation) applyEnv(fs *pflag.FlagSet) (notices []notice, err error) {
	warn := func(format string, a ...any) {
		notices = append(notices, notice{slog.LevelWarn, fmt.Sprintf(format, a...)})
	}
	debug := func(format string, a ...any) {
		notices = append(notices, notice{slog.LevelDebug, fmt.Sprintf(format, a...)})
	}
	// The command line: an alias stands for its canonical flag.
	inv.cmdline = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) {
		c := aliasOf(f)
		if c == "" {
			inv.cmdline[f.Name] = true
			return
		}
		inv.cmdline[c] = true
		fs.Lookup(c).Changed = true
		if len(f.Annotations[annDeprecated]) > 0 {
			warn("--%s is deprecated: use --%s", f.Name, c)
		}
	})
	inputs := ci.FlagEnv(inv.getenv)
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" || aliasOf(f) != "" {
			return
		}
		if v := inv.getenv(envName(f.Name)); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = usagef("environment %s: %w", envName(f.Name), e)
			}
			debug("--%s from %s", f.Name, envName(f.Name))
			return
		}
		for _, a := range aliasNames(fs, f.Name) {
			if v := inv.getenv(envName(a)); v != "" {
				if e := fs.Set(f.Name, v); e != nil {
					err = usagef("environment %s: %w", envName(a), e)
				}
				warn("%s is deprecated: use %s", envName(a), envName(f.Name))
				return
			}
		}
		if v := inputs[f.Name]; v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = usagef("action input %s (%s): %w", f.Name, ci.InputEnv(f.Name), e)
			}
			debug("--%s from the action input %s", f.Name, f.Name)
		}
	})
	if err == nil && fs.Lookup("config") != nil {
		var set []string
		set, err = inv.applyConfig(fs)
		for _, line := range set {
			debug("%s", line)
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if aliasOf(f) == "" {
			inv.mask(secretValue(f))
			// A token in a URL (--catalog https://TOKEN@host/...).
			for _, s := range redact.Secrets(f.Value.String()) {
				inv.mask(s)
			}
		}
	})
	return notices, err
}

// applyConfig reads publish.yaml (--config, else <--source>/publish.yaml
// when it exists; without --source ./publish.yaml) and sets every flag
// still unset from it: it comes after flags and the environment, before
// defaults. The file is kept in inv.config for the settings that are no
// flag (lint rules, the olm target).
// It returns what it set, as lines for the debug log (no value).
func (inv *invocation) applyConfig(fs *pflag.FlagSet) ([]string, error) {
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
		return nil, &pipeline.InputError{Err: err}
	}
	inv.config = c
	if inv.verifier, err = verify.New(c); err != nil {
		return nil, &pipeline.InputError{Err: err}
	}
	values := c.Values()
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	var set []string
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil || f.Changed || len(f.Annotations[annNoConfig]) > 0 {
			continue
		}
		if e := fs.Set(name, values[name]); e != nil {
			return set, &pipeline.InputError{Err: fmt.Errorf("%s: %s: %w", path, name, e)}
		}
		set = append(set, fmt.Sprintf("--%s from %s", name, path))
		if inv.fromConfig == nil {
			inv.fromConfig = map[string]bool{}
		}
		inv.fromConfig[name] = true
	}
	return set, nil
}

// notice is a line for the log that applyEnv cannot write yet (the logger
// is made after the flags are filled).
type notice struct {
	level slog.Level
	msg   string
}

// given reports whether the flag (canonical name) or an alias of it was on
// the command line, as opposed to the environment, an action input or
// publish.yaml.
func (inv *invocation) given(canonical string) bool { return inv.cmdline[canonical] }

// getenv is os.Getenv, or the invocation's environment in tests.
func (inv *invocation) getenv(k string) string {
	if inv.env != nil {
		return inv.env(k)
	}
	return os.Getenv(k)
}
