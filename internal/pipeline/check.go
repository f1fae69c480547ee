package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/diff"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/render"
	"golang.org/x/sync/errgroup"
)

// LintError is an *InputError carrying lint findings: the run stopped
// before any registry write because at least one is an error.
type LintError struct {
	Findings []lint.Finding
}

func (e *LintError) Error() string {
	var b strings.Builder
	n := 0
	for _, f := range e.Findings {
		if f.Severity == lint.Error {
			n++
		}
		fmt.Fprintf(&b, "%s\n", f.String())
	}
	fmt.Fprintf(&b, "lint failed: %s; nothing mirrored, nothing committed", lint.Count(n, "error"))
	return b.String()
}

// readBundles reads the bundles of the manifests marked in work,
// concurrently. A missing or invalid bundle goes to byErr (a lint finding
// later); registry failures are returned in infra, naming the manifest.
func readBundles(ctx context.Context, mc *mirror.Client, ms []*manifest.PackageManifest, work []bool) (bundles []*bundle.Bundle, byErr map[string]error, infra error) {
	bundles = make([]*bundle.Bundle, len(ms))
	byErr = map[string]error{}
	var mu sync.Mutex
	var infras []error
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, m := range ms {
		if work != nil && !work[i] {
			continue
		}
		g.Go(func() error {
			b, err := bundle.Fetch(gctx, m.Spec.Artifact, mc.SrcOptions()...)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				bundles[i] = b
				return nil
			}
			var nf *bundle.NotFoundError
			var inv *bundle.InvalidError
			if errors.As(err, &nf) || errors.As(err, &inv) {
				byErr[m.Path] = err
				return nil
			}
			host := strings.SplitN(m.Spec.Artifact, "/", 2)[0]
			infras = append(infras, fmt.Errorf("%s:%d: %w", m.Path, m.Lines["spec.artifact"], mirror.Describe("reading bundle "+m.Spec.Artifact, host, errors.Unwrap(err))))
			return nil
		})
	}
	_ = g.Wait()
	sortErrs(infras)
	return bundles, byErr, errors.Join(infras...)
}

// lintStage runs the lint engine on the package repo: the manifest rules
// on every manifest file, the repo-wide rules on all versions, the bundle,
// platform and image rules on the bundles read (the changed versions). It
// keeps the findings about changed versions, repo-wide rules and files that
// do not parse: unchanged versions were checked when they changed.
func lintStage(ctx context.Context, cfg lint.Config, files []manifest.File, ms []*manifest.PackageManifest, bundles []*bundle.Bundle, byErr map[string]error, work []bool) []lint.Finding {
	in := lint.Input{Files: files, Bundles: map[string]*bundle.Bundle{}, BundleErrors: byErr, Annotations: map[string]map[string]string{}}
	changed := map[string]bool{}
	parsed := map[string]bool{}
	for i, m := range ms {
		parsed[m.Path] = true
		if work == nil || work[i] {
			changed[m.Path] = true
		}
		if bundles[i] != nil {
			in.Bundles[m.Path] = bundles[i]
			in.Annotations[m.Path] = bundles[i].Annotations
		}
	}
	var out []lint.Finding
	for _, f := range lint.Run(ctx, cfg, in) {
		if changed[f.Path] || !parsed[f.Path] || strings.HasPrefix(f.Rule, "repo/") {
			out = append(out, f)
		}
	}
	return out
}

func hasErrors(fs []lint.Finding) bool {
	for _, f := range fs {
		if f.Severity == lint.Error {
			return true
		}
	}
	return false
}

// editedInPlace reports repo/edited-in-place for every version that change
// detection saw modified and the state records as published: clusters that
// installed it keep the old content. Severity and waivers come from cfg.
func editedInPlace(cfg lint.Config, dr *diff.Result, ms []*manifest.PackageManifest, state []render.Artifact) []lint.Finding {
	if dr == nil || dr.All {
		return nil
	}
	published := map[[2]string]bool{}
	for _, a := range state {
		for _, v := range a.Versions {
			if a.Present && v.Present {
				published[[2]string{a.Name, v.Version}] = true
			}
		}
	}
	byID := map[[2]string]*manifest.PackageManifest{}
	for _, m := range ms {
		byID[[2]string{m.Artifact, m.Version.String()}] = m
	}
	info, _ := lint.Rule(lint.RuleEditedInPlace)
	var out []lint.Finding
	for _, c := range dr.Changes {
		k := [2]string{c.Artifact, strings.TrimPrefix(c.Version, "v")}
		m := byID[k]
		if c.Kind != diff.Modified || !published[k] || m == nil {
			continue
		}
		out = append(out, lint.Finding{Rule: lint.RuleEditedInPlace, Severity: info.Severity, Artifact: c.Artifact, Version: k[1],
			Path: m.Path, Line: m.Lines["spec.version"], Message: fmt.Sprintf("version %s of %s is already published and was edited in place", k[1], c.Artifact), Hint: info.Hint})
	}
	return lint.Apply(cfg, out)
}

// unreadFindings turns the scan errors about files the lint engine never
// read (symbolic links, misnamed files) into findings, so that plan and lint
// report them instead of the version silently disappearing.
func unreadFindings(scanErr error, files []manifest.File) []lint.Finding {
	if scanErr == nil {
		return nil
	}
	read := map[string]bool{}
	for _, f := range files {
		read[f.Path] = true
	}
	var out []lint.Finding
	for _, e := range splitErrs(scanErr) {
		var me *manifest.Error
		if errors.As(e, &me) && !read[me.Path] {
			out = append(out, lint.ScanFinding(me))
		}
	}
	return out
}
