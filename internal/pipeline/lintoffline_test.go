package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// policyOnly is a verify policy of one entry that is never asked to verify
// (lint --offline reads no image).
type policyOnly struct{ file string }

func (p policyOnly) Verify(context.Context, string, []remote.Option) model.Verification {
	panic("lint --offline verified an image")
}

func (p policyOnly) Unmatched([]string) (string, []config.VerifyEntry) {
	return p.file, []config.VerifyEntry{{Match: "r.example.com/**", Line: 4}}
}

// TestLintOfflineSaysSignaturesSkipped: lint --offline with a signature
// policy says, as a verify/skipped warning at publish.yaml, that the
// signatures were not checked, so that a clean report is not read as
// verified; without a policy it says nothing of signatures.
func TestLintOfflineSaysSignaturesSkipped(t *testing.T) {
	src := lintPathsRepo(t)
	fs, err := Lint(context.Background(), LintOptions{Source: src, Offline: true, Verify: policyOnly{file: filepath.Join(src, "publish.yaml")}})
	if err != nil {
		t.Fatal(err)
	}
	var skipped []lint.Finding
	for _, f := range fs {
		if f.Rule == lint.RuleVerifySkipped {
			skipped = append(skipped, f)
		}
	}
	if len(skipped) != 1 || skipped[0].Severity != lint.Warning || skipped[0].Path != "publish.yaml" || !strings.Contains(skipped[0].Message, "--offline") {
		t.Errorf("verify/skipped findings %v, want one warning at publish.yaml naming --offline", skipped)
	}
	fs, err = Lint(context.Background(), LintOptions{Source: src, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if strings.HasPrefix(f.Rule, "verify/") {
			t.Errorf("without a policy: %s", f)
		}
	}
}

// TestLintInterrupted: a lint whose context is cancelled (SIGINT, SIGTERM)
// returns the cause, never findings that would read as "lint ok".
func TestLintInterrupted(t *testing.T) {
	src := lintPathsRepo(t)
	cause := errors.New("interrupted by SIGINT")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	fs, err := Lint(ctx, LintOptions{Source: src, Offline: true})
	if !errors.Is(err, cause) || fs != nil {
		t.Fatalf("cancelled lint: %d findings, %v; want none and the cause", len(fs), err)
	}
}

// failingVerifier is a verify policy whose registry does not answer.
type failingVerifier struct{ err error }

func (f failingVerifier) Verify(_ context.Context, ref string, _ []remote.Option) model.Verification {
	return model.Verification{Image: ref, Status: model.VerifyUnsigned, Mode: config.VerifyEnforce, Found: "the image could not be read", Err: f.err}
}

func (f failingVerifier) Unmatched([]string) (string, []config.VerifyEntry) { return "", nil }

// TestLintVerifyRegistryFailure: a signature check the registry did not
// answer is no verify/unsigned finding of the image but a registry failure
// (exit 2) naming the manifest line and the image.
func TestLintVerifyRegistryFailure(t *testing.T) {
	f := newFixture(t)
	refused := errors.New("UNAUTHORIZED: authentication required")
	fs, err := Lint(context.Background(), LintOptions{Source: f.source, Verify: failingVerifier{err: refused},
		Mirror: mirror.Options{PlainHTTP: true}})
	var rf *RegistryFailure
	if !errors.As(err, &rf) || !errors.Is(err, refused) || !strings.Contains(err.Error(), "packages/tiny/1.0.0/manifest.yaml:") || !strings.Contains(err.Error(), "could not be checked (publish.yaml verify)") {
		t.Fatalf("lint: %v, want a registry failure naming the manifest", err)
	}
	for _, x := range fs {
		if strings.HasPrefix(x.Rule, "verify/") {
			t.Errorf("a finding of the image for the registry's failure: %s", x)
		}
	}
}
