package pipeline

import (
	"context"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/source/diff"
	"github.com/operator-publish/publish/internal/target"
)

// prepared is what the one sequence before the mirror gives run, plan and
// the plan of a pull request (prepare): the versions of the cluster's
// selection with Changed set, those of them to read and mirror, the lint
// and verification findings, and the verification of every image read.
type prepared struct {
	vs       []*model.Version
	changed  []*model.Version
	findings []lint.Finding
	verified map[string]model.Verification
}

// prepareMode says what prepare is for.
type prepareMode struct {
	// plan: a dirty package repo is a warning (run refuses it), and the
	// manifests that did not parse are findings.
	plan bool
	// read reads the artifacts of the versions given (the run's shared
	// cache, which the clusters of one run share); nil: readVersions.
	read func(ctx context.Context, mc *mirror.Client, vs []*model.Version) error
}

// prepare is the sequence every command that publishes or plans shares,
// on the scope read (incremental or full) and the run r built on it:
// change detection's answer into r, the cluster's selection, the versions
// to read (changed since the base, unknown to the state, dirty, or taken
// from a dirty tree by the last publish), their artifacts (bundles), lint, the
// versions edited in place, and signature verification. Errors: a dirty
// package repo in run mode (*DirtyError, an input error), and the
// registry's while reading artifacts; findings are returned, not errors.
func (s *scope) prepare(ctx context.Context, r *run, m prepareMode) (*prepared, error) {
	o := r.Options
	switch {
	case s.diffErr != nil:
		o.warnf("change detection failed (%v): every version counts as changed", s.diffErr)
	case s.diff != nil:
		dr := s.diff
		r.diff, r.changed = dr, dr.Changed
		if !dr.All { // else change detection said why every version counts
			o.logf("changes: %d added, %d modified, %d removed since %s (%s)", dr.Count(diff.Added), dr.Count(diff.Modified), dr.Count(diff.Removed), shortOr(dr.Base, "the beginning"), dr.BaseFrom)
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
	p := &prepared{vs: vs, changed: model.ChangedVersions(vs)}
	read := m.read
	if read == nil {
		read = readVersions
	}
	if err := read(ctx, r.mc, p.changed); err != nil {
		return nil, err
	}
	var err error
	if p.findings, err = lintStage(ctx, o.Lint, s.files, vs); err != nil {
		return nil, err
	}
	if bc, ok := r.target.(target.BundleChecker); ok {
		if err := bc.CheckBundles(p.changed); err != nil {
			return nil, err
		}
	}
	p.findings = append(p.findings, editedInPlace(o.Lint, r.diff, vs, state.Artifacts)...)
	vf, verified, verr := verifyStage(ctx, o.Verify, r.mc, p.changed)
	if verr != nil {
		return nil, verr // a registry that did not answer: no verdict
	}
	p.findings = append(p.findings, vf...)
	p.verified = verified
	if m.plan {
		p.findings = append(p.findings, unreadFindings(s.scanErr, s.files)...)
	}
	return p, nil
}
