package lint

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/manifest"
)

func baseManifest(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "base", "packages", "op", "1.0.0", "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestFieldSizes: the fields that reach rendered objects are capped, with
// a finding naming the field and the limit.
func TestFieldSizes(t *testing.T) {
	base := baseManifest(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 300<<10)...)
	for _, tc := range []struct{ name, old, new, rule, want string }{
		{"description", "description: Runs Acme widgets.", "description: " + strings.Repeat("d", MaxDescriptionSize+1),
			RuleManifestFieldSize, "spec.info.description is 131073 bytes, over the 128 KiB limit of the field"},
		{"displayName", "displayName: Acme Operator", "displayName: " + strings.Repeat("n", MaxDisplayNameSize+1),
			RuleManifestFieldSize, "spec.info.displayName is 1025 bytes, over the 1 KiB limit of the field"},
		{"icon", "icon: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "icon: " + base64.StdEncoding.EncodeToString(png),
			RuleManifestIcon, "spec.info.icon is about 300.0 KiB once decoded, more than the 192 KiB limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("base manifest lacks %q", tc.old)
			}
			data := strings.Replace(base, tc.old, tc.new, 1)
			fs := Run(context.Background(), Config{}, Input{Files: []File{{Path: "packages/op/1.0.0/manifest.yaml", Data: []byte(data)}}})
			found := false
			for _, f := range fs {
				if f.Rule == tc.rule && f.Severity == Error && strings.Contains(f.Message, tc.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s error %q in %v", tc.rule, tc.want, fs)
			}
		})
	}
}

// TestScanFinding: the scan's errors about files lint never read become
// findings of their own rules, not waivable.
func TestScanFinding(t *testing.T) {
	for _, tc := range []struct {
		err  *manifest.Error
		rule string
	}{
		{&manifest.Error{Path: "p/manifest.yaml", Msg: "a directory", Err: manifest.ErrNotRegular}, RuleManifestNotAFile},
		{&manifest.Error{Path: "p/manifest.yaml", Msg: "larger than 1 MiB", Err: manifest.ErrTooLarge}, RuleManifestFileSize},
		{&manifest.Error{Path: "p/manifest.yaml", Line: 3, Msg: "bad"}, RuleManifestParse},
	} {
		f := ScanFinding(tc.err)
		if f.Rule != tc.rule || f.Severity != Error || f.Path != tc.err.Path || f.Line != tc.err.Line || f.Message != tc.err.Msg {
			t.Errorf("ScanFinding(%v) = %+v, want rule %s", tc.err, f, tc.rule)
		}
		if _, ok := Rule(f.Rule); !ok {
			t.Errorf("rule %s not in the catalog", f.Rule)
		}
	}
	// Through the real scan: a 1 MiB + 1 file.
	root := t.TempDir()
	dir := filepath.Join(root, "packages", "op", "1.0.0")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(baseManifest(t)+"#"+strings.Repeat("x", MaxFileSize)+"\n"), 0o644)
	_, _, err := manifest.ScanFiles(root, filepath.Join(root, "packages"))
	var me *manifest.Error
	if !errors.As(err, &me) {
		t.Fatalf("scan: %v", err)
	}
	if f := ScanFinding(me); f.Rule != RuleManifestFileSize || !strings.Contains(f.Message, "1 MiB") {
		t.Errorf("ScanFinding = %+v", f)
	}
}

// TestCheckObjectSize: a rendered object of 256 KiB or more is an
// *ObjectSizeError naming the file, its size and the limit.
func TestCheckObjectSize(t *testing.T) {
	if err := CheckObjectSize("rendered/global/op/artifact_op.yaml", make([]byte, MaxObjectSize-1)); err != nil {
		t.Errorf("an object of %d bytes: %v", MaxObjectSize-1, err)
	}
	err := CheckObjectSize("rendered/global/op/artifact_op.yaml", make([]byte, 300<<10))
	var se *ObjectSizeError
	if !errors.As(err, &se) || se.Size != 300<<10 || se.Limit != MaxObjectSize {
		t.Fatalf("err %v", err)
	}
	for _, want := range []string{"rendered/global/op/artifact_op.yaml", "300 KiB", "256 KiB", RuleManifestObjectSize, "spec.info.description"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
