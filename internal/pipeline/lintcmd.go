package pipeline

import (
	"context"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/errclass"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// LintOptions configures Lint (`publish lint`).
type LintOptions struct {
	Source      string
	PackagesDir string
	// Paths limits the report to these files or directories (relative to
	// Source); the repo-wide rules still see every manifest.
	Paths  []string
	Mirror mirror.Options
	Lint   lint.Config
	// LintCache is the lint cache directory (kind.LintCache), "" for none.
	LintCache string
	// Log receives the progress of reading the bundles of a large repo
	// (nil: none); Now is its clock (nil: time.Now).
	Log *slog.Logger
	Now func() time.Time
	// Offline skips the bundle images: manifest and repo rules only.
	Offline bool
	// Images checks that every related image exists in the source registry
	// and offers each platform of spec.arch (manifest requests only).
	Images bool
	// Verify checks the signatures of every selected version's bundle and
	// related images (publish.yaml verify); nil: none. Not with Offline.
	Verify ImageVerifier
}

// Lint lints the package repo: every manifest, and (unless Offline) every
// bundle. A registry that fails reading a bundle or checking an image is no
// finding: Lint returns the findings of what it read with a
// *RegistryFailure.
func Lint(ctx context.Context, o LintOptions) ([]lint.Finding, error) {
	if o.Source == "" {
		o.Source = "."
	}
	if o.PackagesDir == "" {
		o.PackagesDir = "packages"
	}
	root := packagesRoot(o.Source, o.PackagesDir)
	files, ms, scanErr := manifest.ScanFiles(o.Source, root)
	if ms == nil && scanErr != nil && !errors.As(scanErr, new(*manifest.Error)) {
		return nil, inputErr(scanErr)
	}
	paths, err := lintPaths(o.Source, o.PackagesDir, root, o.Paths, files, scanErr)
	if err != nil {
		return nil, err
	}
	if paths != nil {
		o.Paths = paths
	}
	in := lint.Input{Files: files}
	var regErrs []error
	var verifyFindings []lint.Finding
	var images *describedImages
	if !o.Offline {
		mc, err := newClient(o.Mirror, ms)
		if err != nil {
			return nil, err
		}
		var selected []*model.Version
		for _, v := range model.NewVersions(ms) {
			if Selected(v.Manifest.Path, o.Paths) {
				selected = append(selected, v)
			}
		}
		pre, err := prelint(o.Lint, o.LintCache, files, true)
		if err != nil {
			return nil, err
		}
		po := &Options{Log: o.Log, Now: o.Now}
		p := po.newProgress("read", "versions read and linted", len(selected))
		pre.Progress = p.step
		failed := readVersions(ctx, kind.Env{Client: mc, Prelint: pre}, selected)
		p.end()
		kind.Lint(&in, kind.Env{}, selected)
		// A bundle the registry did not give (TLS, credentials, network) is
		// no finding of its manifest: lint reports the rest, then fails
		// with the registry's error (exit 2).
		if failed != nil {
			regErrs = append(regErrs, splitErrs(failed)...)
		}
		if o.Images {
			images = newDescribedImages(mc)
			in.Images = images
		}
		var verr error
		if verifyFindings, _, verr = verifyStage(ctx, o.Verify, mc, selected); verr != nil {
			regErrs = append(regErrs, splitErrs(verr)...)
		}
		verifyFindings = append(verifyFindings, unmatchedFindings(o.Verify, o.Source, model.NewVersions(ms))...)
	}
	if o.Offline && o.Verify != nil {
		verifyFindings = append(verifyFindings, skippedFinding(o.Verify, o.Source))
	}
	var out []lint.Finding
	all := lint.Run(ctx, o.Lint, in)
	if ctx.Err() != nil {
		// Interrupted: the findings are incomplete, never "lint ok".
		return nil, context.Cause(ctx)
	}
	all = append(all, unreadFindings(scanErr, files)...)
	all = append(all, verifyFindings...)
	lint.Sort(all)
	for _, f := range all {
		if f.Rule == lint.RuleImagesCheck || f.Rule == lint.RuleBundleFetch {
			// The registry did not answer: not a finding (see above).
			if err, ok := images.failure(f); ok {
				regErrs = append(regErrs, err)
			} else {
				regErrs = append(regErrs, fmt.Errorf("%s:%d: %s", f.Path, f.Line, f.Message))
			}
			continue
		}
		if Selected(f.Path, o.Paths) || f.Path == "" || strings.HasPrefix(f.Rule, "repo/config") || strings.HasPrefix(f.Rule, "repo/waiver") || f.Rule == RuleVerifyPattern || f.Rule == lint.RuleVerifySkipped {
			out = append(out, f)
		}
	}
	if len(regErrs) > 0 {
		return out, &RegistryFailure{Err: errors.Join(regErrs...)}
	}
	return out, nil
}

// RegistryFailure is Lint's error when a source registry could not be read
// (a certificate, credentials, the network, a server error): what was read
// was linted and Lint returns those findings with it, but the versions it
// could not read were not checked. Not an input error: the command exits 2.
type RegistryFailure struct{ Err error }

func (e *RegistryFailure) Error() string {
	return "the source registry could not be read, so lint did not check everything: " + e.Err.Error()
}

func (e *RegistryFailure) Unwrap() error { return e.Err }

// PathError says a path given to lint cannot be linted (a usage error: a
// typo must not make lint pass without checking anything): it does not
// exist, is outside --source, or is no manifest (Reason says which; ""
// means it does not exist).
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("%s: no such file or directory below --source", e.Path)
}

// FlagError says a flag's value cannot be used (a usage error, exit 2:
// the message says what to give instead). Without Flag, Err names the flag
// itself.
type FlagError struct {
	Flag string
	Err  error
}

// ErrorClass implements errclass.Classified: a usage error.
func (e *FlagError) ErrorClass() errclass.Class { return errclass.Usage }

// ErrorClass implements errclass.Classified: a usage error.
func (e *PathError) ErrorClass() errclass.Class { return errclass.Usage }

func (e *FlagError) Error() string {
	if e.Flag == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Flag, e.Err)
}
func (e *FlagError) Unwrap() error { return e.Err }

// Selected reports whether path (slash-separated, relative to the source)
// is one of paths (files or directories as given on the command line) or
// below one of them; no paths selects everything.
func Selected(path string, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, p := range paths {
		p = strings.TrimSuffix(filepath.ToSlash(filepath.Clean(p)), "/")
		if p == "." || path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

func splitErrs(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// skippedFinding is the verify/skipped warning of lint --offline with the
// signature policy of iv: at the policy's first entry in publish.yaml
// (relative to source), saying that no signature was checked.
func skippedFinding(iv ImageVerifier, source string) lint.Finding {
	file, entries := iv.Unmatched(nil) // every entry: nothing was matched
	if rel, err := filepath.Rel(source, file); err == nil {
		file = filepath.ToSlash(rel)
	}
	line := 0
	if len(entries) > 0 {
		line = entries[0].Line
	}
	info, _ := lint.Rule(lint.RuleVerifySkipped)
	return lint.Finding{Rule: lint.RuleVerifySkipped, Severity: lint.Warning, Path: file, Line: line,
		Message: "signatures not checked: --offline reads no image, so the verify policy of publish.yaml was not applied", Hint: info.Hint}
}
