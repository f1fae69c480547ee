// Package report holds the machine-readable reports and their text.
//
// Report is the one account of what a command did to images: copied,
// already present, verified, missing or failed, and why. `publish mirror
// --report FILE` writes it; its format is documented in docs/report.md.
//
// Plan is what `publish plan` (and the pull request of a run) reports
// before anything is written: the listing changes, the images to mirror,
// the lint findings and the rendered files (plan.go; its JSON format is
// documented in docs/plan-json.md), and its Markdown (planmarkdown.go).
//
// The listing changes of a publish (model.Change) are worded once
// (changes.go): the commit subject and sections, the run's result lines
// and the job summary's lines.
package report

import (
	"encoding/json"
	"fmt"
	"github.com/operator-publish/publish/internal/scratch"
	"sort"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/redact"
)

// APIVersion and Kind identify the report format (docs/report.md).
const (
	APIVersion = "publish.operator-publish.io/v1alpha1"
	Kind       = "Report"
)

// State is what became of one image.
type State string

const (
	Copied  State = "copied"  // copied to the destination in this run
	Present State = "present" // the destination already had it (one HEAD)
	Failed  State = "failed"  // not at the destination: Error says why
	// Pending: never tried, because what must go before it failed (a
	// bundle after the images it deploys); the next run copies it.
	Pending State = "pending"
)

// Image is one image of a report. Source and Destination are references
// as the command named them; Digest is the manifest digest (equal at both
// ends) when known. Input reports, for a failed image, that running again
// cannot help (the source has no such image: fix the reference).
type Image struct {
	Source      string `json:"source"`
	Destination string `json:"destination,omitempty"`
	Digest      string `json:"digest,omitempty"`
	State       State  `json:"state"`
	Signatures  int    `json:"signatures,omitempty"`
	Retries     int    `json:"retries,omitempty"`
	Error       string `json:"error,omitempty"`
	Input       bool   `json:"input,omitempty"`
}

// Summary counts a report's images by State.
type Summary struct {
	Images  int `json:"images"`
	Copied  int `json:"copied"`
	Present int `json:"present"`
	Failed  int `json:"failed"`
	Pending int `json:"pending,omitempty"`
}

// Report is the machine-readable report of one command: which command
// wrote it, each image, and the counts.
type Report struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Command    string  `json:"command"`
	Summary    Summary `json:"summary"`
	Images     []Image `json:"images"`
}

// New returns an empty report of command (e.g. "mirror").
func New(command string) *Report {
	return &Report{APIVersion: APIVersion, Kind: Kind, Command: command, Images: []Image{}}
}

// AddMirror adds the images of a mirror run: each result of rep (copied
// or present, in its order), then each failed image (sorted by reference),
// with its error with any credential in a URL removed (redact.Text), then
// each target of rep.Pending (never tried: a bundle whose related images
// failed). rep may be nil.
func (r *Report) AddMirror(rep *mirror.Report, failed []*mirror.ImageError) {
	if rep != nil {
		for _, i := range rep.Images {
			st := Copied
			if i.Skipped {
				st = Present
			}
			r.Images = append(r.Images, Image{Source: i.Source, Destination: i.Destination, Digest: i.Digest, State: st, Signatures: i.Signatures, Retries: i.Retries})
		}
	}
	fs := append([]*mirror.ImageError(nil), failed...)
	sort.SliceStable(fs, func(a, b int) bool { return fs[a].Ref < fs[b].Ref })
	for _, ie := range fs {
		msg := ""
		if ie.Err != nil {
			msg = redact.Text(ie.Err.Error())
		}
		r.Images = append(r.Images, Image{Source: ie.Ref, State: Failed, Error: msg, Input: ie.Input})
	}
	if rep != nil {
		for _, t := range rep.Pending {
			r.Images = append(r.Images, Image{Source: t.Ref, State: Pending, Error: "not tried: a bundle is copied only after the images it deploys, and one of them failed"})
		}
	}
	r.count()
}

func (r *Report) count() {
	s := Summary{Images: len(r.Images)}
	for _, i := range r.Images {
		switch i.State {
		case Copied:
			s.Copied++
		case Present:
			s.Present++
		case Failed:
			s.Failed++
		case Pending:
			s.Pending++
		}
	}
	r.Summary = s
}

// WriteFile writes the report as indented JSON to path, whole or not at
// all: into a temporary file beside it, then renamed over path. Errors
// name path.
func (r *Report) WriteFile(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	data = append(data, '\n')
	if err := scratch.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	return nil
}
