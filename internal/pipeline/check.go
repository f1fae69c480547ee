package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/source/diff"
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

// readVersions reads the artifacts of vs through their kinds of package
// (kind.Read: the bundle images today), with env's client's source side,
// for env's cluster. A missing
// or invalid artifact is recorded as the version's ReadErr (a lint finding
// later, exit code 1); registry failures are returned, joined and sorted,
// each naming the manifest (exit code 2).
func readVersions(ctx context.Context, env kind.Env, vs []*model.Version) error {
	return kind.Read(ctx, env, vs)
}

// prelint is the kind.Prelint of a command that lints the bundles it reads
// with cfg: each bundle is linted alone as it arrives, and made slim when
// slim is set (the command's later stages need no whole bundle), so that a
// command over a whole catalog never holds every bundle at once.
// With cacheDir (--lint-cache), slim bundles and their findings are kept
// there by digest (kind.LintCache). The error is a cache directory that
// cannot be used, naming --lint-cache.
func prelint(cfg lint.Config, cacheDir string, files []manifest.File, slim bool) (*kind.Prelint, error) {
	byPath := make(map[string][]byte, len(files))
	for _, f := range files {
		byPath[f.Path] = f.Data
	}
	p := &kind.Prelint{Config: cfg, Files: byPath, Slim: slim}
	if cacheDir != "" && slim {
		c, err := kind.OpenLintCache(cacheDir, cfg)
		if err != nil {
			return nil, &FlagError{Flag: "--lint-cache", Err: err}
		}
		p.Cache = c
	}
	return p, nil
}

// lintStage runs the lint engine on the package repo for cluster ("" for
// none: kind.Env): the manifest rules
// on every manifest file, the repo-wide rules on all versions, and what
// each version's kind lints of the artifacts read (the changed versions;
// kind.Lint: the bundle, platform and image rules of a bundle). It
// keeps the findings about changed versions, repo-wide rules and files that
// do not parse: unchanged versions were checked when they changed. The
// error is the context's cause when ctx was cancelled (the findings would
// be incomplete). With listed (run and plan), the bundles read are also
// checked against what the cluster lists (dependency/missing: vs, the
// cluster's selection, and listed's artifacts); nil skips that rule.
func lintStage(ctx context.Context, cfg lint.Config, cluster string, listed *listed, files []manifest.File, vs []*model.Version) ([]lint.Finding, error) {
	return lintScoped(ctx, lintScope{cfg: cfg, cluster: cluster, listed: listed}, files, vs)
}

// lintScope is what lintScoped lints for: lintStage's configuration,
// cluster and listing, and the name of the cluster's target when it
// refuses charts (lint.Input.RefuseCharts; "" when it does not).
type lintScope struct {
	cfg          lint.Config
	cluster      string
	refuseCharts string
	listed       *listed
}

// lintScoped is lintStage for sc.
func lintScoped(ctx context.Context, sc lintScope, files []manifest.File, vs []*model.Version) ([]lint.Finding, error) {
	cfg, listed := sc.cfg, sc.listed
	in := lint.Input{Files: files, Listing: lintListing(listed, vs), RefuseCharts: sc.refuseCharts}
	kind.Lint(&in, kind.Env{Cluster: sc.cluster}, vs)
	changed := map[string]bool{}
	parsed := map[string]bool{}
	for _, v := range vs {
		p := v.Manifest.Path
		parsed[p] = true
		if v.Changed {
			changed[p] = true
		}
	}
	all := lint.Run(ctx, cfg, in)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	var out []lint.Finding
	for _, f := range all {
		if changed[f.Path] || !parsed[f.Path] || strings.HasPrefix(f.Rule, "repo/") {
			out = append(out, f)
		}
	}
	return out, nil
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
func editedInPlace(cfg lint.Config, dr *diff.Result, vs []*model.Version, state []model.ArtifactRecord) []lint.Finding {
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
	for _, v := range vs {
		byID[[2]string{v.Manifest.Artifact, v.Manifest.Version.String()}] = v.Manifest
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
