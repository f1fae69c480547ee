package lint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-publish/publish/internal/manifest"
)

// parseRules are the rules that explain why manifest.Parse rejects a file.
var parseRules = map[string]bool{
	RuleManifestYAML: true, RuleManifestParse: true, RuleManifestMultiDocument: true,
	RuleManifestDuplicateKey: true, RuleManifestUnknownField: true, RuleManifestFieldType: true,
	RuleManifestAPIVersion: true, RuleManifestRequired: true, RuleManifestName: true,
	RuleManifestVersion: true, RuleManifestType: true, RuleManifestArtifact: true,
	RuleManifestRelatedImage: true, RuleManifestUTF8: true, RuleManifestTabIndent: true,
	RuleManifestAnchor: true,
}

// FuzzManifest runs the manifest rules (and the repo rules, through Run)
// on arbitrary bytes. The seed corpus is testdata/fuzz/FuzzManifest (the
// fixtures' manifests and YAML oddities). Invariants: no panic; every
// finding has a catalog rule, a line and a column; manifest.Parse rejects
// the file exactly when a rule explaining it reports an error, and the
// catch-all manifest/parse is not needed.
func FuzzManifest(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "base", "packages", "op", "1.0.0", "manifest.yaml")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "packages/op/1.0.0/manifest.yaml"
		fs := Run(context.Background(), Config{}, Input{Files: []File{{Path: path, Data: data}}})
		_, perr := manifest.Parse(path, data)
		explained := false
		for _, x := range fs {
			if _, ok := Rule(x.Rule); !ok {
				t.Fatalf("rule outside the catalog: %v", x)
			}
			if x.Path != path || x.Line < 1 || x.Column < 1 {
				t.Fatalf("finding without position: %v", x)
			}
			if x.Rule == RuleManifestParse {
				t.Fatalf("only the catch-all explains the parse error: %v", x)
			}
			if parseRules[x.Rule] && x.Severity == Error {
				explained = true
			}
		}
		if perr != nil && !explained {
			t.Fatalf("manifest.Parse fails (%v) but no rule explains it:\n%s", perr, report(fs))
		}
	})
}
