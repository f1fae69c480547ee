// Package lint holds the rules that stop a bad operator before it reaches a
// cluster. Each finding carries a stable rule ID (Rules lists the catalog,
// docs/lint-rules.md documents it), a severity, and the file, line and
// column it is about.
//
// Run applies every rule: manifest/* on the bytes and YAML of each
// manifest.yaml, bundle/* (including the operator-framework validators as
// bundle/validator/*), platform/* and images/* on the bundle each manifest
// names, repo/* across the manifests, and, for the cluster of
// Input.Listing, dependency/* on the bundles' dependencies against what the
// cluster lists. Config re-grades rules and waives
// findings; Format writes the findings as text, JSON, SARIF or GitHub
// workflow commands.
package lint

import (
	"errors"
	"fmt"
	"strings"

	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
)

// Severity of a finding. Errors stop `publish run` before any side effect.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Rule IDs of the repo-wide rules.
const (
	RuleDuplicateVersion = "repo/duplicate-version"
	RuleDuplicateTag     = "repo/duplicate-tag"
	RuleOneRepository    = "repo/one-repository"
)

// Finding is one problem at a place in the package repo.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Artifact string   `json:"artifact,omitempty"`
	Version  string   `json:"version,omitempty"`
	Path     string   `json:"path"`             // slash-separated, relative to the package repo
	Line     int      `json:"line,omitempty"`   // 1-based, 0 when unknown
	Column   int      `json:"column,omitempty"` // 1-based, 0 when unknown
	// BundlePath is the file inside the bundle image a bundle rule is about
	// (e.g. manifests/x.clusterserviceversion.yaml); Path/Line then point at
	// the manifest's spec.artifact.
	BundlePath string `json:"bundlePath,omitempty"`
	Message    string `json:"message"`
	Hint       string `json:"hint,omitempty"` // what to do
	// Waiver is the reason of the waiver that accepted the finding (its
	// Severity is then Waived).
	Waiver string `json:"waiver,omitempty"`
	// OriginalSeverity is the severity a waived finding had before the
	// waiver accepted it (after the configured re-grading); "" otherwise.
	OriginalSeverity Severity `json:"originalSeverity,omitempty"`
}

// WaiverNote says what a waived finding was and why it is accepted:
// "error waived: <reason>" ("" when f is not waived). Reports (lint text,
// the plan summary) print it with the finding.
func (f Finding) WaiverNote() string {
	if f.Severity != Waived {
		return ""
	}
	was := f.OriginalSeverity
	if was == "" {
		was = "finding"
	}
	reason := f.Waiver
	if reason == "" {
		reason = "(no reason given)"
	}
	return fmt.Sprintf("%s waived: %s", was, reason)
}

// MarkdownLine renders f as one Markdown list item for a plan summary or
// job summary: "- **severity** `path:line` message (`rule`)", and for a
// waived finding "— error waived: reason" after it. Backticks in the
// message are kept; line breaks become spaces.
func (f Finding) MarkdownLine() string {
	loc := f.Path
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.Path, f.Line)
	}
	flat := strings.NewReplacer("\r\n", " ", "\n", " ")
	line := fmt.Sprintf("- **%s** `%s` %s (`%s`)", f.Severity, loc, flat.Replace(f.Message), f.Rule)
	if n := f.WaiverNote(); n != "" {
		line += " — " + flat.Replace(n)
	}
	return line
}

// Count writes n and word, plural when n is not 1: "1 lint error",
// "2 lint errors".
func Count(n int, word string) string { return plural(n, word) }

func (f Finding) String() string {
	loc := f.Path
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.Path, f.Line)
		if f.Column > 0 {
			loc = fmt.Sprintf("%s:%d", loc, f.Column)
		}
	}
	return fmt.Sprintf("%s: %s: %s [%s]", loc, f.Severity, f.Message, f.Rule)
}

// Errors returns the findings of severity error joined as one error, or nil.
func Errors(fs []Finding) error {
	var errs []error
	for _, f := range fs {
		if f.Severity == Error {
			errs = append(errs, errors.New(f.String()))
		}
	}
	return errors.Join(errs...)
}

// Repo applies the repo-wide rules to ms (sorted by manifest.Sort):
//   - repo/duplicate-version: the same version twice for one artifact (the
//     platform would leave the second ArtifactVersion Pending with reason
//     AlreadyAdd);
//   - repo/duplicate-tag: two versions of one artifact whose bundle tags
//     name the same ArtifactVersion (model.ArtifactVersionName: equal tags,
//     or tags that differ only in case or in characters a name cannot hold);
//   - repo/one-repository: versions of one artifact in different bundle
//     repositories (an Artifact has one spec.repository).
func Repo(ms []*manifest.PackageManifest) []Finding {
	var out []Finding
	type key struct{ a, v string }
	versions := map[key]*manifest.PackageManifest{}
	tags := map[key]*manifest.PackageManifest{}
	repos := map[string]*manifest.PackageManifest{}
	for _, m := range ms {
		k := key{m.Artifact, m.Version.String()}
		if first, ok := versions[k]; ok {
			out = append(out, Finding{Rule: RuleDuplicateVersion, Severity: Error, Artifact: m.Artifact, Version: k.v, Path: m.Path, Line: m.Lines["spec.version"],
				Message: fmt.Sprintf("version %s of %s is also declared in %s: the platform would leave the second ArtifactVersion Pending (AlreadyAdd); remove one", k.v, k.a, first.Path)})
			continue
		}
		versions[k] = m
		// Two tags clash when they give one ArtifactVersion name, as
		// "V0_9_6" and "v0-9-6" do, not only when they are equal.
		avName := model.ArtifactVersionName(m.Artifact, m.Tag())
		t := key{m.Artifact, avName}
		if first, ok := tags[t]; ok {
			out = append(out, Finding{Rule: RuleDuplicateTag, Severity: Error, Artifact: m.Artifact, Version: k.v, Path: m.Path, Line: m.Lines["spec.artifact"],
				Message: fmt.Sprintf("bundle tag %s of %s names the ArtifactVersion %s, as bundle tag %s of %s does: each version needs a bundle tag of its own that differs in more than case and punctuation", m.Tag(), m.Artifact, avName, first.Tag(), first.Path)})
		} else {
			tags[t] = m
		}
		repo := Repository(m.Spec.Artifact)
		if first, ok := repos[m.Artifact]; !ok {
			repos[m.Artifact] = m
		} else if r := Repository(first.Spec.Artifact); r != repo {
			out = append(out, Finding{Rule: RuleOneRepository, Severity: Error, Artifact: m.Artifact, Version: k.v, Path: m.Path, Line: m.Lines["spec.artifact"],
				Message: fmt.Sprintf("bundle repository %s differs from %s used by %s: an Artifact has one repository; push every version of %s to one repository", repo, r, first.Path, m.Artifact)})
		}
	}
	return out
}

// Repository strips the tag and digest from an image reference.
func Repository(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}
