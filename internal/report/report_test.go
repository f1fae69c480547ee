package report

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// TestAddMirror: the results of a mirror run become copied and present
// images in their order, then the failed ones sorted by reference with the
// credential of a URL in their error removed, then the pending targets;
// the summary counts each state; WriteFile writes the whole document and
// leaves no temporary file beside it.
func TestAddMirror(t *testing.T) {
	rep := &mirror.Report{
		Images: []mirror.Result{
			{Source: "src/a:v1", Destination: "dst/a:v1", Digest: "sha256:aa"},
			{Source: "src/b:v1", Destination: "dst/b:v1", Digest: "sha256:bb", Skipped: true},
		},
		Pending: []mirror.Target{{Ref: "src/bundle:v1", Tag: "v1"}},
	}
	failed := []*mirror.ImageError{
		{Ref: "src/z:v1", Err: errors.New("pushing to https://robot:s3cret@dst/z: denied")},
		{Ref: "src/c:v1", Input: true, Err: errors.New("not found")},
	}
	r := New("run")
	r.AddMirror(rep, failed)
	if want := (Summary{Images: 5, Copied: 1, Present: 1, Failed: 2, Pending: 1}); r.Summary != want {
		t.Fatalf("summary %+v, want %+v", r.Summary, want)
	}
	order := []struct {
		src string
		st  State
	}{{"src/a:v1", Copied}, {"src/b:v1", Present}, {"src/c:v1", Failed}, {"src/z:v1", Failed}, {"src/bundle:v1", Pending}}
	for i, w := range order {
		if r.Images[i].Source != w.src || r.Images[i].State != w.st {
			t.Errorf("image %d: %s %s, want %s %s", i, r.Images[i].Source, r.Images[i].State, w.src, w.st)
		}
	}
	if e := r.Images[3].Error; e == "" || strings.Contains(e, "s3cret") {
		t.Errorf("failed image error %q: want the error without the credential", e)
	}
	if !r.Images[2].Input || r.Images[4].Error == "" {
		t.Errorf("input flag or pending reason lost: %+v", r.Images)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil || back.Summary != r.Summary || back.Kind != Kind || back.Command != "run" {
		t.Fatalf("read back: %v\n%s", err, data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the report's directory, want the report alone", len(entries))
	}
}

// TestReportVerification: each image carries its verification's status
// and outcome, and the report lists per artifact the images signed,
// unsigned and failed, as JSON.
func TestReportVerification(t *testing.T) {
	r := New("run")
	r.AddMirror(&mirror.Report{Images: []mirror.Result{
		{Source: "src/a:v1", Destination: "dst/a:v1", Digest: "sha256:aa"},
		{Source: "src/b:v1", Destination: "dst/b:v1", Digest: "sha256:bb"},
		{Source: "src/c:v1", Destination: "dst/c:v1", Digest: "sha256:cc"},
	}}, nil)
	verified := map[string]model.Verification{
		"src/a:v1": {Image: "src/a:v1", Status: model.VerifyVerified, Mode: "enforce"},
		"src/b:v1": {Image: "src/b:v1", Status: model.VerifyUnsigned, Mode: model.VerifyModeIfSigned, NoSignature: true},
		"src/c:v1": {Image: "src/c:v1", Status: model.VerifyNotRequired},
	}
	r.AddVerification(verified)
	var counts model.SignatureCounts
	for _, v := range verified {
		counts.Add(v)
	}
	r.AddSignatures(map[string]*model.SignatureCounts{"tiny": &counts})
	for i, want := range [][2]string{{"verified", "signed"}, {"unsigned", "unsigned"}, {"not-required", ""}} {
		if got := [2]string{r.Images[i].Verification, r.Images[i].Outcome}; got != want {
			t.Errorf("image %d: %v, want %v", i, got, want)
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"signatures":{"tiny":{"signed":["src/a:v1"],"unsigned":["src/b:v1"],"failed":[]}}`) {
		t.Errorf("report JSON: %s", data)
	}
}
