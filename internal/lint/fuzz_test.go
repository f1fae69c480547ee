package lint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// fuzzOddities are YAML corner cases for the seed corpus.
var fuzzOddities = []string{
	"",
	"~\n",
	"- a\n- b\n",
	"a: &x [1]\nb: *x\n",
	"<<: {apiVersion: x}\n",
	"<<: [1]\n",
	"spec: !!binary aGVsbG8=\n",
	"spec:\n  version: !!binary '%%%'\n",
	"spec:\n  version: !!int v1\n",
	"\tapiVersion: x\n",
	"apiVersion: x\r\nkind: y\r\n",
	"apiVersion: x\rkind: y\r",
	"\xef\xbb\xbfapiVersion: x\n",
	"\xff\xfea\x00:\x00",
	"apiVersion: \xe9\n",
	"a: 1\n---\nb: 2\n",
	"a: 1\n--- [\n",
	"{a: 1, a: 2}\n",
	"? [a]\n: b\n",
	"metadata: {name: op.v1.0.0, labels: {a: [1]}}\n",
	"spec: {relatedImages: [~, '', {a: b}]}\n",
	"spec: {info: {links: [~, x, {name: 1}]}}\n",
	"x: \"\\x00\"\n",
}

// TestFuzzSeeds keeps testdata/fuzz/FuzzManifest in step with the rule
// fixtures: every manifest.yaml a case produces and the oddities above
// (go test ./internal/lint/ -update rewrites it).
func TestFuzzSeeds(t *testing.T) {
	seeds := map[string][]byte{}
	for i, s := range fuzzOddities {
		seeds[fmt.Sprintf("oddity-%02d", i)] = []byte(s)
	}
	cases := ruleCases(t)
	for _, id := range sortedKeys(cases) {
		for _, kind := range []string{"fail", "pass"} {
			for _, p := range cases[id][kind] {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				_, files := parseTxtar(data)
				in, _ := loadCase(t, files)
				for _, f := range in.Files {
					if f.Path == "packages/op/1.0.0/manifest.yaml" {
						name := strings.NewReplacer("/", "-", ".txtar", "").Replace(strings.TrimPrefix(filepath.ToSlash(p), "testdata/rules/"))
						seeds[name] = f.Data
					}
				}
			}
		}
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzManifest")
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Seeds whose content equals another's are kept once.
	seen := map[string]bool{}
	for _, name := range sortedKeys(seeds) {
		if seen[string(seeds[name])] {
			continue
		}
		seen[string(seeds[name])] = true
		golden(t, filepath.Join(dir, name), fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seeds[name]))
	}
	if !*update {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != len(seen) {
			t.Errorf("%s holds %d seeds, want %d (go test ./internal/lint/ -update)", dir, len(ents), len(seen))
		}
	}
}
