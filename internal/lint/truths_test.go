package lint

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestUTF16NotEmpty: a UTF-16 manifest gets the encoding finding, not also
// "the file is empty" (it is not).
func TestUTF16NotEmpty(t *testing.T) {
	text := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\n"
	for _, bom := range [][]byte{{0xFF, 0xFE}, {0xFE, 0xFF}} {
		data := append([]byte(nil), bom...)
		for _, u := range utf16.Encode([]rune(text)) {
			if bom[0] == 0xFF {
				data = append(data, byte(u), byte(u>>8))
			} else {
				data = append(data, byte(u>>8), byte(u))
			}
		}
		fs := checkManifest("packages/op/1.0.0/manifest.yaml", data).fs
		if len(fs) != 1 || fs[0].Rule != RuleManifestUTF8 || !strings.Contains(fs[0].Message, "UTF-16") {
			t.Errorf("BOM % X: findings %v, want the one manifest/utf8 finding", bom, fs)
		}
	}
}

// TestWaivedShowsWhatItWas: a waived finding keeps the severity it had and
// the waiver's reason, and reports print both.
func TestWaivedShowsWhatItWas(t *testing.T) {
	cfg := Config{
		Severity: map[string]Severity{RuleImagesUnusedRelated: Error},
		Waivers:  []Waiver{{Rule: RuleImagesUnusedRelated, Artifact: "op", Reason: "pulled from a ConfigMap (OPS-42)"}},
	}
	in := []Finding{{Rule: RuleImagesUnusedRelated, Severity: Warning, Artifact: "op", Version: "1.0.0", Path: "packages/op/1.0.0/manifest.yaml", Line: 3, Message: "unused"}}
	out := Apply(cfg, in)
	if len(out) != 1 || out[0].Severity != Waived || out[0].OriginalSeverity != Error {
		t.Fatalf("Apply: %+v", out)
	}
	const note = "error waived: pulled from a ConfigMap (OPS-42)"
	if got := out[0].WaiverNote(); got != note {
		t.Errorf("WaiverNote = %q, want %q", got, note)
	}
	want := "- **waived** `packages/op/1.0.0/manifest.yaml:3` unused (`images/unused-related`) — " + note
	if got := out[0].MarkdownLine(); got != want {
		t.Errorf("MarkdownLine =\n%s\nwant\n%s", got, want)
	}
	var b strings.Builder
	if err := Format(&b, out, FormatText); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "    "+note+"\n") {
		t.Errorf("text report:\n%s", b.String())
	}
	if in[0].WaiverNote() != "" || strings.Contains(in[0].MarkdownLine(), "waived") {
		t.Errorf("a finding that is not waived: %q", in[0].MarkdownLine())
	}
}

// TestCountPlural: "1 lint error", "2 lint errors".
func TestCountPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 lint errors", 1: "1 lint error", 2: "2 lint errors"} {
		if got := Count(n, "lint error"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSchemaDerived: the manifest rules' schema is manifest.PackageManifest's
// (derived from its yaml tags, no hand-kept copy to drift).
func TestSchemaDerived(t *testing.T) {
	want := map[string]map[string]fieldKind{
		"":                 {"apiVersion": kText, "kind": kText, "metadata": kMap, "spec": kMap},
		"metadata":         {"name": kText, "labels": kTextMap, "annotations": kTextMap},
		"spec":             {"type": kText, "artifact": kText, "chart": kText, "version": kText, "arch": kList, "info": kMap, "relatedImages": kList, "deprecation": kMap},
		"spec.info":        {"displayName": kText, "icon": kText, "keywords": kList, "links": kLinks, "description": kText},
		"spec.deprecation": {"message": kText},
		"link":             {"name": kText, "url": kText},
	}
	if !reflect.DeepEqual(schema, want) {
		t.Errorf("schema %v\nwant %v", schema, want)
	}
}
