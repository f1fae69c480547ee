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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/redact"
	"github.com/operator-publish/publish/internal/scratch"
	"github.com/operator-publish/publish/internal/shard"
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
	// Referrers are the digests of the signature, attestation and
	// referrer manifests of the image at the destination (in its
	// repository) after the copy.
	Referrers []string `json:"referrers,omitempty"`
	// Bytes is the image's size as the plan of a split sized it (its
	// manifests, config and layers); absent outside a split.
	Bytes int64 `json:"bytes,omitempty"`
	// Verification is the outcome of the signature check of the image
	// before it was copied (publish.yaml verify: model.Verification's
	// Status, "verified", "unsigned", …); absent when none applied.
	Verification string `json:"verification,omitempty"`
	// Outcome sorts Verification as the plan counts it per artifact
	// (model.Verification.Outcome): "signed", "unsigned" (no signature,
	// accepted under if-signed or a warning under warn), "failed";
	// absent when no rule required the image.
	Outcome string `json:"outcome,omitempty"`
}

// AddSignatures records, per artifact, its images signed, unsigned and
// failed (pipeline.Result.Signatures), each list non-nil; nil adds
// nothing.
func (r *Report) AddSignatures(byArtifact map[string]*model.SignatureCounts) {
	for a, c := range byArtifact {
		if r.Signatures == nil {
			r.Signatures = map[string]*model.SignatureCounts{}
		}
		cp := *c
		for _, l := range []*[]string{&cp.Signed, &cp.Unsigned, &cp.Failed} {
			if *l == nil {
				*l = []string{} // [] in the JSON, not null, as the plan
			}
		}
		r.Signatures[a] = &cp
	}
}

// AddVerification records the status of each image's signature check
// (by source reference, as run's Result.Verified holds them).
func (r *Report) AddVerification(verified map[string]model.Verification) {
	for i := range r.Images {
		if v, ok := verified[r.Images[i].Source]; ok {
			r.Images[i].Verification, r.Images[i].Outcome = v.Status, v.Outcome()
		}
	}
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
	// Signatures lists, per artifact (PackageManifest spec.artifact
	// name), its images signed, unsigned and failed as the publish.yaml
	// verify policy judged them (the plan's artifacts[].signatures);
	// absent without a policy.
	Signatures map[string]*model.SignatureCounts `json:"signatures,omitempty"`
	// Shard is the part of a split the command did, nil outside one.
	Shard *Shard `json:"shard,omitempty"`
	// SHA256 is the hex SHA-256 of the report's JSON as WriteFile writes
	// it with this field empty: ReadFile refuses a report edited since.
	SHA256 string `json:"sha256,omitempty"`
}

// Shard is what a report of one part of a split says of it
// (docs/scale-out.md): the part, the digest and method of the plan every
// part computed, and the plan's items this part copies, with their bytes.
type Shard struct {
	Part   string `json:"part"` // "I/N"
	Plan   string `json:"plan"` // shard.Plan.Digest
	Method string `json:"method"`
	Bytes  int64  `json:"bytes"` // the part's items' bytes
	// Copied and Skipped are the bytes of the part's images copied in
	// this run and those the destination had already.
	Copied  int64        `json:"copied"`
	Skipped int64        `json:"skipped"`
	Items   []shard.Item `json:"items"`
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
			r.Images = append(r.Images, Image{Source: i.Source, Destination: i.Destination, Digest: i.Digest, State: st, Signatures: i.Signatures, Retries: i.Retries, Referrers: i.SignatureDigests})
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

// AddShard records that the report is of the part s of plan p, and the
// planned bytes of each of its images.
func (r *Report) AddShard(s shard.Shard, p *shard.Plan, part []shard.Item) {
	bytes := map[string]int64{}
	for _, it := range part {
		bytes[it.Source] = it.Bytes
	}
	for i := range r.Images {
		r.Images[i].Bytes = bytes[r.Images[i].Source]
	}
	r.Shard = &Shard{Part: s.String(), Plan: p.Digest, Method: shard.Method, Bytes: shard.Bytes(part), Items: append([]shard.Item{}, part...)}
	for _, im := range r.Images {
		switch im.State {
		case Copied:
			r.Shard.Copied += im.Bytes
		case Present:
			r.Shard.Skipped += im.Bytes
		}
	}
}

// seal returns the report's JSON with its SHA256 set: the hash of the
// indented JSON with SHA256 empty.
func (r *Report) seal() ([]byte, error) {
	c := *r
	c.SHA256 = ""
	data, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	c.SHA256 = hex.EncodeToString(sum[:])
	r.SHA256 = c.SHA256
	return json.MarshalIndent(&c, "", "  ")
}

// ReadFile reads a report WriteFile wrote. Errors name path: a file that
// is not a report of this format, or whose content no longer matches its
// sha256 (edited since it was written: write it again by running the
// command again).
func ReadFile(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a publish report: %w", path, err)
	}
	if r.APIVersion != APIVersion || r.Kind != Kind {
		return nil, fmt.Errorf("%s: not a publish report (apiVersion %q, kind %q; want %s %s)", path, r.APIVersion, r.Kind, APIVersion, Kind)
	}
	want := r.SHA256
	if want == "" {
		return nil, fmt.Errorf("%s: the report has no sha256: write it again with this version of publish", path)
	}
	if _, err := r.seal(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.SHA256 != want {
		return nil, fmt.Errorf("%s: its content does not match its sha256 %s: it was changed after publish wrote it; run the command again for a report that can be trusted", path, want)
	}
	return &r, nil
}

// WriteFile writes the report as indented JSON to path, with its SHA256,
// whole or not at all: into a temporary file beside it, then renamed over
// path. Errors name path.
func (r *Report) WriteFile(path string) error {
	data, err := r.seal()
	if err != nil {
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	data = append(data, '\n')
	if err := scratch.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	return nil
}
