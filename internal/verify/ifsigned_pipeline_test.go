package verify

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/pipeline"
)

// TestPipelineIfSigned: one bundle on Debian's docker-registry (TLS,
// htpasswd, the referrers tag schema) whose related images are the
// manager, signed with the policy's key (a .sig tag), the worker,
// unsigned, and the agent, signed with a foreign key (a Sigstore bundle
// referrer); the bundle itself is signed with the policy's key (a bundle
// referrer). The verdict of each mode:
//
//   - if-signed: the agent is a verify/untrusted error at its manifest
//     line, the worker is no finding; nothing is mirrored. The plan
//     counts 2 signed, 1 unsigned, 1 failed for tiny.
//   - enforce: the worker (verify/unsigned) and the agent fail.
//   - warn: both are warnings and the run publishes; off: no finding.
//
// In every mode a run that publishes (for enforce and if-signed, with the
// failing images exempted by off entries) leaves the signatures at the
// destination: the bundle's referrer and the manager's .sig tag, and the
// agent's foreign referrer too when it is exempted: signatures travel
// whatever the mode.
func TestPipelineIfSigned(t *testing.T) {
	f := newPublishFixture(t, debianRegistry(t), "agent")
	f.sign(t, "bundle")
	f.sign(t, "manager")
	agent, _ := name.NewRepository(f.src.host + "/tiny/agent")
	ad, err := remote.Get(agent.Tag("v1.0.0"), f.src.opts...)
	if err != nil {
		t.Fatal(err)
	}
	signBundle(t, newTestKey(t), agent, ad.Digest, types.DockerManifestSchema2, f.src.opts)
	ctx := context.Background()
	ref := func(img string) string { return f.src.host + "/tiny/" + img + ":v1.0.0" }

	lintFindings := func(v *Verifier) map[string]lint.Finding {
		t.Helper()
		fs, err := pipeline.Lint(ctx, pipeline.LintOptions{Source: f.source, Mirror: f.options(v).Mirror, Verify: v})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]lint.Finding{}
		for _, fd := range fs {
			if strings.HasPrefix(fd.Rule, "verify/") && fd.Rule != pipeline.RuleVerifyPattern {
				out[fd.Rule] = fd
			}
		}
		return out
	}

	// if-signed: the foreign signature fails at the agent's line, the
	// unsigned worker is accepted.
	v := f.policy(t, "if-signed")
	got := lintFindings(v)
	fd, ok := got[pipeline.RuleVerifyUntrusted]
	if len(got) != 1 || !ok || fd.Severity != lint.Error || fd.Path != f.manifest || fd.Line != f.lines["agent"] || !strings.Contains(fd.Message, "tiny/agent:v1.0.0") || !strings.Contains(fd.Message, "mode if-signed") {
		t.Errorf("if-signed findings: %v", got)
	}
	t.Logf("if-signed: %s", fd)
	_, err = pipeline.Run(ctx, f.options(v))
	var le *pipeline.LintError
	if !errors.As(err, &le) {
		t.Fatalf("run under if-signed: %v, want a lint error", err)
	}
	var errs []lint.Finding
	for _, fd := range le.Findings {
		if fd.Severity == lint.Error {
			errs = append(errs, fd)
		}
	}
	if len(errs) != 1 || errs[0].Rule != pipeline.RuleVerifyUntrusted || errs[0].Line != f.lines["agent"] {
		t.Fatalf("run under if-signed: %v, want the agent's error only", errs)
	}
	if repos := f.mirrored(t); len(repos) != 0 {
		t.Errorf("mirrored on an if-signed failure: %v", repos)
	}
	p, err := pipeline.PlanRun(ctx, pipeline.PlanOptions{Options: f.options(v)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Artifacts) != 1 || p.Artifacts[0].Signatures == nil {
		t.Fatalf("plan artifacts: %+v", p.Artifacts)
	}
	sc := p.Artifacts[0].Signatures
	slices.Sort(sc.Signed)
	if !slices.Equal(sc.Signed, []string{ref("bundle"), ref("manager")}) || !slices.Equal(sc.Unsigned, []string{ref("worker")}) || !slices.Equal(sc.Failed, []string{ref("agent")}) {
		t.Errorf("plan signatures: %+v", sc)
	}
	if md := p.Markdown(); !strings.Contains(md, "- `tiny`: 2 signed, 1 unsigned, 1 failed") {
		t.Errorf("plan Markdown:\n%s", md)
	}

	// enforce: the unsigned worker fails too.
	got = lintFindings(f.policy(t, "enforce"))
	if u, w := got[pipeline.RuleVerifyUnsigned], got[pipeline.RuleVerifyUntrusted]; len(got) != 2 || u.Line != f.lines["worker"] || u.Severity != lint.Error || w.Line != f.lines["agent"] || w.Severity != lint.Error {
		t.Errorf("enforce findings: %v", got)
	}

	// Runs that publish, each to a fresh destination and catalog.
	for _, tc := range []struct {
		mode     string
		off      []string
		warnings int
		logLine  string
	}{
		{"warn", nil, 2, "verify: tiny: 2 signed, 1 unsigned, 1 failed; unsigned: " + ref("worker") + "; failed: " + ref("agent")},
		{"off", nil, 0, ""},
		{"if-signed", []string{"agent"}, 0, "verify: tiny: 2 signed, 1 unsigned, 0 failed; unsigned: " + ref("worker")},
		{"enforce", []string{"worker", "agent"}, 0, "verify: tiny: 2 signed, 0 unsigned, 0 failed"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			f.fresh(t)
			var logs bytes.Buffer
			o := f.options(f.policy(t, tc.mode, tc.off...))
			o.Log = slog.New(slog.NewTextHandler(&logs, nil))
			res, err := pipeline.Run(ctx, o)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			n := 0
			for _, fd := range res.Findings {
				if strings.HasPrefix(fd.Rule, "verify/") && fd.Rule != pipeline.RuleVerifyPattern {
					n++
					if fd.Severity != lint.Warning {
						t.Errorf("finding: %s", fd)
					}
				}
			}
			if n != tc.warnings {
				t.Errorf("%d verify warnings, want %d: %v", n, tc.warnings, res.Findings)
			}
			if tc.logLine != "" && !strings.Contains(logs.String(), tc.logLine) {
				t.Errorf("log lacks %q:\n%s", tc.logLine, logs.String())
			}
			// The run's result (and its --report) counts the same.
			if c := res.Signatures["tiny"]; tc.logLine != "" && (c == nil || !strings.Contains(tc.logLine, "verify: tiny: "+c.String())) {
				t.Errorf("result signatures %+v, want those of %q", c, tc.logLine)
			}
			if !f.committed(t) {
				t.Error("nothing committed")
			}
			f.signaturesAtDestination(t, slices.Contains(tc.off, "agent") || tc.mode == "warn" || tc.mode == "off")
		})
	}
}

// signaturesAtDestination checks that the destination has the bundle's
// Sigstore bundle referrer and the manager's .sig tag (and, with agent,
// the agent's referrer), as the source has them.
func (f *publishFixture) signaturesAtDestination(t *testing.T, agent bool) {
	t.Helper()
	imgs := []string{"bundle"}
	if agent {
		imgs = append(imgs, "agent")
	}
	for _, img := range imgs {
		src, _ := name.NewRepository(f.src.host + "/tiny/" + img)
		dst, _ := name.NewRepository(f.dst.host + "/mirror/tiny/" + img)
		desc, err := remote.Get(src.Tag("v1.0.0"), f.src.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := referrers(t, src.Digest(desc.Digest.String()), f.src.opts), referrers(t, dst.Digest(desc.Digest.String()), nil); !slices.Equal(a, b) || len(a) != 1 {
			t.Errorf("%s referrers: source %v, destination %v", img, a, b)
		}
	}
	src, _ := name.NewRepository(f.src.host + "/tiny/manager")
	desc, err := remote.Get(src.Tag("v1.0.0"), f.src.opts...)
	if err != nil {
		t.Fatal(err)
	}
	sigTag := "sha256-" + desc.Digest.Hex + ".sig"
	dst, _ := name.NewRepository(f.dst.host + "/mirror/tiny/manager")
	want, err := remote.Head(src.Tag(sigTag), f.src.opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := remote.Head(dst.Tag(sigTag)); err != nil || got.Digest != want.Digest {
		t.Errorf("manager %s at the destination: %v %v, want %s", sigTag, got, err, want.Digest)
	}
}
