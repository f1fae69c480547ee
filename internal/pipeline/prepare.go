package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/rollout"
	"github.com/operator-publish/publish/internal/source/diff"
	"github.com/operator-publish/publish/internal/target"
)

// prepareIn is what prepare works on: plain values a command gathered
// (its selection of versions, the published records, change detection's
// answer) and the steps it takes. A step whose field is zero is not
// taken: render takes records only, package and mirror read and verify,
// push --catalog reads from the destination and records the pushed
// digests, run and plan take every step.
type prepareIn struct {
	// Versions are the command's selection, in order, each marked
	// Changed when its artifact is to be read (and linted as changed).
	Versions []*model.Version
	// Previous are the published records of the cluster (its state), nil
	// for none.
	Previous []model.ArtifactRecord

	// Read reads the artifacts of the changed versions (kind.Read through
	// readVersions, the run's shared cache, or the destination for push);
	// nil reads nothing.
	Read func(ctx context.Context, vs []*model.Version) error
	// MustRead makes a changed version whose artifact could not be read
	// an input error listing each at its manifest line (package, mirror);
	// else it is a lint finding.
	MustRead bool

	// Lint runs the lint engine (lintStage) with LintConfig over Files
	// and Versions; Diff adds repo/edited-in-place; Unparsed (the scan's
	// error) adds a finding per file the engine never read.
	Lint       bool
	LintConfig lint.Config
	// Cluster is the cluster the versions are read and linted for
	// (kind.Env), "" for a command over no cluster.
	Cluster string
	// RefuseCharts names the cluster's target when it cannot publish
	// charts (target.Capabilities.RefusesCharts): each chart of the
	// selection is a chart/target finding.
	RefuseCharts string
	// Listed is what the cluster lists besides Versions, for
	// dependency/missing (run and plan); nil for a command over no
	// cluster's catalog, which skips the rule.
	Listed   *listed
	Files    []manifest.File
	Diff     *diff.Result
	Unparsed error
	// Check is the target's own check of the changed versions
	// (target.BundleChecker), nil for none.
	Check func([]*model.Version) error

	// Verify, when set, checks the signatures of the changed versions'
	// artifacts and images with Client (publish.yaml verify).
	Verify ImageVerifier
	Client *mirror.Client

	// Records, when set, maps the versions to their records at the
	// destination (currentRecords), with Report's digests when something
	// already reached it (push --catalog), and merges them with Previous.
	Records Mapper
	Report  *mirror.Report
	// Gates, when set, hold back in the records the versions whose gates
	// have not passed (gateSet.hold).
	Gates *gateSet
}

// prepared is what prepare gives: the one value the commands that publish,
// plan, render or package share before what each does beyond it.
type prepared struct {
	// vs are the versions of the selection; changed those of them read.
	vs, changed []*model.Version
	// findings are the lint and verification findings (nil without lint
	// or verify); verified is the verification of every image checked.
	findings []lint.Finding
	verified map[string]model.Verification
	// current are the records of vs, next the published records with them
	// merged in (render.Merge), and changes the listing changes from
	// Previous to next (render.Diff); all zero without the records step.
	current, next []model.ArtifactRecord
	changes       render.Changes
	// gates hold back the versions whose gates have not passed; waits
	// are those versions, from the last records step.
	gates *gateSet
	waits []rollout.Wait
}

// prepare is the one sequence every command that publishes, plans,
// renders or packages shares: read the changed versions' artifacts
// through their kinds, lint, the target's own check, edited-in-place,
// signature verification, then the records (current, merged, the listing
// changes), each step as in says. Errors: registry failures while
// reading or verifying (no verdict), the context's cause during lint, an
// *InputError for artifacts that could not be read under MustRead, for a
// target check that refuses, and for a repository that cannot be mapped.
// Findings are returned, not errors: the caller decides what stops it.
func prepare(ctx context.Context, in prepareIn) (*prepared, error) {
	p := &prepared{vs: in.Versions, changed: model.ChangedVersions(in.Versions), gates: in.Gates}
	if in.Read != nil {
		if err := in.Read(ctx, p.changed); err != nil {
			return nil, err
		}
		if in.MustRead {
			if err := unreadable(p.changed); err != nil {
				return nil, err
			}
		}
	}
	if in.Lint {
		var err error
		if p.findings, err = lintScoped(ctx, lintScope{cfg: in.LintConfig, cluster: in.Cluster, refuseCharts: in.RefuseCharts, listed: in.Listed}, in.Files, in.Versions); err != nil {
			return nil, err
		}
	}
	if in.Check != nil {
		if err := in.Check(p.changed); err != nil {
			return nil, err
		}
	}
	if in.Lint {
		p.findings = append(p.findings, editedInPlace(in.LintConfig, in.Diff, in.Versions, in.Previous)...)
	}
	if in.Verify != nil {
		vf, verified, err := verifyStage(ctx, in.Verify, in.Client, p.changed)
		if err != nil {
			return nil, err // a registry that did not answer: no verdict
		}
		p.findings = append(p.findings, vf...)
		p.verified = verified
	}
	if in.Lint {
		p.findings = append(p.findings, unreadFindings(in.Unparsed, in.Files)...)
	}
	if in.Records != nil {
		if err := p.record(in.Records, in.Report, in.Previous); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// record makes the records step of p: the records of p.vs through m with
// rep's digests (nil: nothing mirrored yet), completed from previous
// (currentRecords), the versions whose gates have not passed held back
// (p.waits), merged with previous, and the listing changes.
// `publish run` takes it again once the mirror reported. Errors are input
// errors (a repository that cannot be mapped).
func (p *prepared) record(m Mapper, rep *mirror.Report, previous []model.ArtifactRecord) error {
	current, err := currentRecords(m, p.vs, rep, previous)
	if err != nil {
		return err
	}
	p.current, p.waits = p.gates.hold(current, previous)
	p.next = render.Merge(previous, p.current)
	p.changes = render.Diff(previous, p.next)
	return nil
}

// unreadable is the input error listing, at its manifest line, each of vs
// whose artifact could not be read (model.Version.ReadErr); nil when all
// were.
func unreadable(vs []*model.Version) error {
	var bad []error
	for _, v := range vs {
		if v.ReadErr != nil {
			bad = append(bad, fmt.Errorf("%s: %s %s: %w", v.Where(), v.Kind(), v.Ref(), v.ReadErr))
		}
	}
	if len(bad) > 0 {
		return inputErr(errors.Join(bad...))
	}
	return nil
}

// prepareMode says what the scope's prepare is for.
type prepareMode struct {
	// plan: a dirty package repo is a warning (run refuses it), and the
	// manifests that did not parse are findings.
	plan bool
	// read reads the artifacts of the versions given for the cluster of
	// env (the run's shared cache, which the clusters of one run share);
	// nil: readVersions.
	read func(ctx context.Context, env kind.Env, vs []*model.Version) error
}

// prepare is prepare on the scope read (incremental or full) and the run
// r built on it, for run, plan and the plan of a pull request: change
// detection's answer into r, the cluster's selection, the versions marked
// to read (changed since the base, unknown to the state, dirty, or taken
// from a dirty tree by the last publish), then every step of prepare,
// the records made without digests (run makes them again after the
// mirror). Errors: a dirty package repo in run mode (*DirtyError, an input
// error), and prepare's.
func (s *scope) prepare(ctx context.Context, r *run, m prepareMode) (*prepared, error) {
	o := r.Options
	switch {
	case s.diffErr != nil:
		o.warnf("change detection failed (%v): every version counts as changed", s.diffErr)
	case s.diff != nil:
		dr := s.diff
		r.diff, r.changed = dr, dr.Changed
		if !dr.All { // else change detection said why every version counts
			o.logf("changes: %d added, %d modified, %d removed since %s (%s)", dr.Count(diff.Added), dr.Count(diff.Modified), dr.Count(diff.Removed), report.ShortCommitOr(dr.Base, "the beginning"), dr.BaseFrom)
		}
	}
	vs := s.selected(s.vs)
	if !m.plan {
		if err := checkDirty(o, s.dirty); err != nil {
			return nil, err
		}
	}
	r.uncommitted = s.dirty
	state := s.state
	r.markChanged(vs, s.dirty, state.Source.Dirty, state.Artifacts)
	s.gates.markPending(vs, state.Artifacts)
	read := m.read
	if read == nil {
		read = readVersions
	}
	k, kerr := target.Lookup(o.Target)
	env := o.kindEnv(r.mc)
	var condense func(*model.Version, *bundle.Bundle) bool
	if c, ok := r.target.(target.Condenser); ok {
		condense = c.Condenser()
	}
	pre, err := prelint(o.Lint, o.LintCache, s.files, kerr == nil && (!k.Caps.WholeBundles || condense != nil))
	if err != nil {
		return nil, err
	}
	pre.Condense = condense
	env.Prelint = pre
	in := prepareIn{
		Versions: vs, Previous: state.Artifacts,
		Read: func(ctx context.Context, vs []*model.Version) error {
			p := o.newProgress("read", "changed versions read and linted", len(vs))
			pre.Progress = p.step
			defer p.end()
			return read(ctx, env, vs)
		},
		Lint: true, LintConfig: o.Lint, Cluster: o.Cluster, Listed: s.listing(), Files: s.files, Diff: r.diff,
		Verify: o.Verify, Client: r.mc,
		Records: DestinationOf(r.mc), Gates: s.gates,
	}
	if m.plan {
		in.Unparsed = s.scanErr
	}
	if kerr == nil && k.Caps.RefusesCharts {
		in.RefuseCharts = k.Name
	}
	if bc, ok := r.target.(target.BundleChecker); ok {
		in.Check = bc.CheckBundles
	}
	return prepare(ctx, in)
}
