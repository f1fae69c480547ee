package report

import (
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/rollout"
)

// PlanSchemaVersion is the version of the plan JSON (docs/plan-json.md).
const PlanSchemaVersion = 1

// Plan is what `publish plan` reports: what a `publish run` of this source
// would list, upgrade, delist and relist, the images it would mirror, the
// lint findings, and the rendered files it would change. The plan of a
// pull-request delivery is the same Plan. Its JSON form is documented in
// docs/plan-json.md; Markdown renders it for people.
type Plan struct {
	SchemaVersion int                 `json:"schemaVersion"`
	Source        PlanSource          `json:"source"`
	Cluster       string              `json:"cluster"`
	Summary       PlanSummary         `json:"summary"`
	Artifacts     []PlanArtifact      `json:"artifacts"`
	Findings      []lint.Finding      `json:"findings"`
	Files         []gitops.FileChange `json:"files"`
	Diff          string              `json:"diff"`
	// Waiting are the versions the cluster's gates hold back
	// (publish.yaml clusters.<name>.after, docs/rollout.md), with when
	// each may list; none without gates.
	Waiting []rollout.Wait `json:"waiting,omitempty"`
	// Graphs are the upgrade graphs of the changed packages of bundles,
	// before and after (NewPlanGraph); none for charts.
	Graphs []PlanGraph `json:"graphs,omitempty"`
	// Listed are the versions listed after the plan (ascending) of the
	// artifacts it changes or holds back, by artifact (ClusterTable).
	Listed map[string][]string `json:"listed,omitempty"`
}

// PlanSource says what was compared.
type PlanSource struct {
	Head     string   `json:"head,omitempty"`
	Base     string   `json:"base,omitempty"`
	BaseFrom string   `json:"baseFrom,omitempty"` // flag, merge-base, ci, state, none
	All      bool     `json:"all"`                // no usable base: every version counted as changed
	Warnings []string `json:"warnings,omitempty"`
}

// PlanSummary counts the plan. Listed, Upgraded, Delisted and Relisted
// count the listing changes as the run's commit subject does: one per
// listed or relisted artifact, one per new version of a listed artifact,
// one per delisted artifact, and one per delisted or relisted version.
type PlanSummary struct {
	Listed        int `json:"listed"`
	Upgraded      int `json:"upgraded"`
	Delisted      int `json:"delisted"`
	Relisted      int `json:"relisted"`
	Errors        int `json:"errors"`
	Warnings      int `json:"warnings"`
	ImagesToCopy  int `json:"imagesToMirror"`
	ImagesMissing int `json:"imagesMissing"`
	// ImagesUnknown counts the images to mirror the destination did not
	// say it has or lacks (PlanImage.UnknownReason says why): they are in
	// ImagesToCopy, not in ImagesMissing.
	ImagesUnknown int `json:"imagesUnknown"`
	FilesChanged  int `json:"filesChanged"`
}

// PlanArtifact is one artifact whose listing or versions change.
type PlanArtifact struct {
	Name     string        `json:"name"`
	Action   string        `json:"action"` // listed, upgraded, delisted, relisted, changed
	Versions []PlanVersion `json:"versions"`
	// Signatures sorts the images of Versions whose Verification has an
	// outcome into signed, unsigned and failed (model.Verification.Outcome),
	// each image once; nil when none has (no verify policy, or no image the
	// policy covers). Summarise sets it.
	Signatures *model.SignatureCounts `json:"signatures,omitempty"`
}

// PlanVersion is one version of a PlanArtifact that changes.
type PlanVersion struct {
	Version string      `json:"version"`
	Tag     string      `json:"tag"`
	Action  string      `json:"action"` // added, modified, delisted, relisted
	Images  []PlanImage `json:"images,omitempty"`
}

// PlanImage is one image a run would mirror for a version.
type PlanImage struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	// AtDestination: "yes", "missing", or "unknown" (no read access or no
	// answer: the plan never needs write credentials).
	AtDestination string `json:"atDestination"`
	// UnknownReason is the short cause of an "unknown" AtDestination:
	// ReasonNoReadAccess, ReasonDenied, "no answer: <error>", "not a
	// reference: <error>", "no destination: <error>", or ReasonNotMirrored
	// (the plan of a run's pull request); empty otherwise
	// (docs/plan-json.md lists them).
	UnknownReason string `json:"unknownReason,omitempty"`
	// Verification is the image's signature check against the publish.yaml
	// verify policy (absent without a policy): status verified, unsigned,
	// untrusted, identity or not-required (docs/plan-json.md).
	Verification *model.Verification `json:"verification,omitempty"`
	// NamedBy says, for an image of a chart, what named it: the render
	// (the template file, the cluster and its values file), an image
	// annotation (helm.sh/images or artifacthub.io/images of the chart or
	// a subchart), spec.relatedImages, or spec.artifact for the chart
	// itself (docs/plan-json.md). Absent for a bundle's images.
	NamedBy []lint.ImageSource `json:"namedBy,omitempty"`
}

// The UnknownReasons of a refused HEAD at the destination (Markdown says
// what to do for them), and of an image a run's mirror report lacks.
const (
	ReasonNoReadAccess = "no read access (401)"
	ReasonDenied       = "denied (403)"
	ReasonNotMirrored  = "not in the mirror report"
)

// Summarise sets p.Summary from the rest of p. changes are the listing
// changes a run would make: Listed, Upgraded, Delisted and Relisted count
// them as the run's commit subject does (model.CountChanges); nil counts
// them from the Actions of p.Artifacts instead. Images are counted from
// p.Artifacts, findings by severity, and FilesChanged is len(p.Files).
// It also sets the Signatures of each artifact from its images.
func (p *Plan) Summarise(changes []model.Change) {
	s := PlanSummary{}
	if changes != nil {
		n := model.CountChanges(changes)
		s.Listed, s.Upgraded, s.Delisted, s.Relisted = n[model.ChangeListed], n[model.ChangeUpgraded], n[model.ChangeDelisted], n[model.ChangeRelisted]
	}
	for i := range p.Artifacts {
		p.Artifacts[i].Signatures = artifactSignatures(p.Artifacts[i])
	}
	for _, a := range p.Artifacts {
		if changes != nil {
			countImages(&s, a)
			continue
		}
		switch a.Action {
		case "listed":
			s.Listed++
		case "upgraded":
			s.Upgraded++
		case "delisted":
			s.Delisted++
		case "relisted":
			s.Relisted++
		}
		countImages(&s, a)
	}
	for _, f := range p.Findings {
		switch f.Severity {
		case lint.Error:
			s.Errors++
		case lint.Warning:
			s.Warnings++
		}
	}
	s.FilesChanged = len(p.Files)
	p.Summary = s
}

// countImages adds a's images to mirror, and those missing and unknown at
// the destination, to s.
func countImages(s *PlanSummary, a PlanArtifact) {
	for _, v := range a.Versions {
		for _, img := range v.Images {
			s.ImagesToCopy++
			switch img.AtDestination {
			case "missing":
				s.ImagesMissing++
			case "unknown":
				s.ImagesUnknown++
			}
		}
	}
}

// artifactSignatures sorts the verified images of a by outcome, each
// list non-nil; nil when no image has an outcome.
func artifactSignatures(a PlanArtifact) *model.SignatureCounts {
	var c model.SignatureCounts
	for _, v := range a.Versions {
		for _, i := range v.Images {
			if i.Verification != nil {
				c.Add(*i.Verification)
			}
		}
	}
	if c.Empty() {
		return nil
	}
	for _, l := range []*[]string{&c.Signed, &c.Unsigned, &c.Failed} {
		if *l == nil {
			*l = []string{} // [] in the JSON, not null
		}
	}
	return &c
}
