package lint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/manifest"
)

// The rule fixtures: testdata/rules/<rule ID>/<fail|pass>[-what].txtar.
// Each case is an overlay on testdata/base (a clean package repo whose
// single version has no finding at all), in txtar form:
//
//	comment: what the case shows
//	-- packages/op/1.0.0/manifest.yaml --   a file replacing or adding one
//	-- <path>.replace --                    edits of a base file: blocks of
//	<<<                                     old text (found exactly once)
//	===
//	new text
//	>>>
//	-- copy --                              "from to" directory copies, one a line
//	-- delete --                            paths to remove, one a line
//	-- lint.yaml --                         the lint Config (yaml)
//	-- olmv1-clusters --                    Config.OLMv1Clusters, one a line
//	-- listing --                           Input.Listing (parseListing)
//	-- want --                              the text report (golden, -update)
//
// In the package repo, packages/<a>/<v>/bundle/ is the bundle of that
// manifest (loaded with bundle.Load; a load error becomes a bundle error),
// packages/<a>/<v>/bundle-error holds "not-found", "invalid: <msg>" or
// "fetch: <msg>" instead, packages/<a>/<v>/no-annotations clears
// Bundle.Annotations, and images.yaml drives the fake ImageChecker.
//
// A fail case must report its rule, a pass case must not; both must match
// their want section.

type txtFile struct {
	name string
	data []byte
}

func parseTxtar(data []byte) (string, []txtFile) {
	var comment bytes.Buffer
	var files []txtFile
	var cur *txtFile
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		t := bytes.TrimRight(line, "\n")
		if bytes.HasPrefix(t, []byte("-- ")) && bytes.HasSuffix(t, []byte(" --")) && len(t) > 6 {
			files = append(files, txtFile{name: string(t[3 : len(t)-3])})
			cur = &files[len(files)-1]
			continue
		}
		if cur == nil {
			comment.Write(line)
		} else {
			cur.data = append(cur.data, line...)
		}
	}
	return comment.String(), files
}

func formatTxtar(comment string, files []txtFile) []byte {
	var b bytes.Buffer
	b.WriteString(comment)
	for _, f := range files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.Write(f.data)
		if len(f.data) > 0 && f.data[len(f.data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// fakeChecker answers from images.yaml.
type fakeChecker map[string]string

func (c fakeChecker) Platforms(_ context.Context, ref string) ([]string, error) {
	v, ok := c[ref]
	switch {
	case !ok || v == "notfound":
		return nil, fmt.Errorf("%s: %w", ref, ErrImageNotFound)
	case v == "single":
		return nil, nil
	case strings.HasPrefix(v, "error: "):
		return nil, errors.New(strings.TrimPrefix(v, "error: "))
	case v == "":
		return []string{}, nil
	}
	return strings.Split(v, ","), nil
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// applyReplace applies the <<< old === new >>> blocks of edits to data.
func applyReplace(t *testing.T, name string, data, edits []byte) []byte {
	t.Helper()
	s := string(edits)
	for {
		i := strings.Index(s, "<<<\n")
		if i < 0 {
			return data
		}
		s = s[i+4:]
		j := strings.Index(s, "\n===\n")
		k := strings.Index(s, "\n>>>")
		if j < 0 || k < j {
			t.Fatalf("%s: malformed replace block", name)
		}
		old, repl := s[:j+1], s[j+5:k+1]
		if j+5 > k+1 {
			repl = ""
		}
		s = s[k+4:]
		if n := bytes.Count(data, []byte(old)); n != 1 {
			t.Fatalf("%s: %q occurs %d times, want once", name, old, n)
		}
		data = bytes.Replace(data, []byte(old), []byte(repl), 1)
	}
}

// loadCase builds the package repo of a case and the lint input.
func loadCase(t *testing.T, files []txtFile) (Input, Config) {
	t.Helper()
	root := t.TempDir()
	copyTree(t, filepath.Join("testdata", "base"), root)
	var cfg Config
	var listing *Listing
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f.name))
		switch {
		case f.name == "want":
		case f.name == "olmv1-clusters":
			// The clusters using OLM v1 (internal/config sets them from
			// publish.yaml clusters), one a line.
			cfg.OLMv1Clusters = strings.Fields(string(f.data))
		case f.name == "listing":
			listing = parseListing(string(f.data))
		case f.name == "lint.yaml":
			if err := yaml.Unmarshal(f.data, &cfg); err != nil {
				t.Fatalf("lint.yaml: %v", err)
			}
		case f.name == "copy":
			for _, l := range strings.Split(strings.TrimSpace(string(f.data)), "\n") {
				from, to, ok := strings.Cut(strings.TrimSpace(l), " ")
				if !ok {
					t.Fatalf("copy: want \"from to\", got %q", l)
				}
				copyTree(t, filepath.Join(root, filepath.FromSlash(from)), filepath.Join(root, filepath.FromSlash(strings.TrimSpace(to))))
			}
		case f.name == "delete":
			for _, l := range strings.Split(strings.TrimSpace(string(f.data)), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(l))); err != nil {
						t.Fatal(err)
					}
				}
			}
		case strings.HasSuffix(f.name, ".replace"):
			target := strings.TrimSuffix(p, ".replace")
			data, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, applyReplace(t, f.name, data, f.data), 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	in := repoInput(t, root)
	in.Listing = listing
	return in, cfg
}

// parseListing reads the listing file of a rule case: what the cluster
// lists (lint.Listing), one line each: "cluster <name>", "complete", and
// "<package> <version>..." for the versions listed of a package.
func parseListing(text string) *Listing {
	l := &Listing{}
	versions := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		fs := strings.Fields(line)
		switch {
		case len(fs) == 0:
		case fs[0] == "cluster" && len(fs) == 2:
			l.Cluster = fs[1]
		case fs[0] == "complete":
			l.Complete = true
		default:
			versions[fs[0]] = append(versions[fs[0]], fs[1:]...)
		}
	}
	l.Versions = func(pkg string) ([]string, error) { return versions[pkg], nil }
	return l
}

// repoInput reads the package repo at root: manifests, bundles next to
// them, images.yaml.
func repoInput(t *testing.T, root string) Input {
	t.Helper()
	mfs, err := manifest.ReadFiles(root, filepath.Join(root, "packages"))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Files: mfs, Bundles: map[string]*bundle.Bundle{}, BundleErrors: map[string]error{}, Annotations: map[string]map[string]string{}}
	for _, f := range mfs {
		dir := filepath.Join(root, filepath.Dir(filepath.FromSlash(f.Path)))
		if data, err := os.ReadFile(filepath.Join(dir, "bundle-error")); err == nil {
			kind, msg, _ := strings.Cut(strings.TrimSpace(string(data)), ": ")
			switch kind {
			case "not-found":
				in.BundleErrors[f.Path] = &bundle.NotFoundError{Ref: "registry.example.com/acme/op-bundle"}
			case "invalid":
				in.BundleErrors[f.Path] = &bundle.InvalidError{Ref: "registry.example.com/acme/op-bundle", Err: errors.New(msg)}
			default:
				in.BundleErrors[f.Path] = fmt.Errorf("fetching bundle image registry.example.com/acme/op-bundle: %s", msg)
			}
			continue
		}
		bdir := filepath.Join(dir, "bundle")
		if _, err := os.Stat(bdir); err != nil {
			continue
		}
		b, err := bundle.Load(bdir)
		if err != nil {
			var inv *bundle.InvalidError
			if errors.As(err, &inv) {
				inv.Ref = "registry.example.com/acme/op-bundle" // as bundle.Fetch sets it
			}
			in.BundleErrors[f.Path] = err
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "no-annotations")); err == nil {
			b.Annotations = nil
		}
		in.Bundles[f.Path] = b
	}
	if data, err := os.ReadFile(filepath.Join(root, "images.yaml")); err == nil {
		var c map[string]string
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Fatalf("images.yaml: %v", err)
		}
		if c != nil {
			in.Images = fakeChecker(c)
		}
	}
	return in
}

func report(fs []Finding) string {
	var b bytes.Buffer
	if err := Format(&b, fs, FormatText); err != nil {
		panic(err)
	}
	return b.String()
}

// ruleCases lists the case files by rule: rule -> "fail"/"pass" -> files.
func ruleCases(t *testing.T) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	root := filepath.Join("testdata", "rules")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".txtar") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rule := filepath.ToSlash(filepath.Dir(rel))
		kind, _, _ := strings.Cut(strings.TrimSuffix(d.Name(), ".txtar"), "-")
		if kind != "fail" && kind != "pass" {
			return fmt.Errorf("%s: case files are named fail[-what].txtar or pass[-what].txtar", p)
		}
		if out[rule] == nil {
			out[rule] = map[string][]string{}
		}
		out[rule][kind] = append(out[rule][kind], p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBaseIsClean(t *testing.T) {
	in, cfg := loadCase(t, nil)
	if len(in.Bundles) != 1 || in.Images == nil {
		t.Fatalf("base fixture: %d bundles, checker %v", len(in.Bundles), in.Images)
	}
	if fs := Run(context.Background(), cfg, in); len(fs) != 0 {
		t.Fatalf("the base fixture has findings:\n%s", report(fs))
	}
}

func TestRuleCoverage(t *testing.T) {
	cases := ruleCases(t)
	for _, r := range Rules() {
		if strings.HasPrefix(r.ID, "verify/") {
			// Reported by the pipeline from internal/verify, not by Run:
			// internal/verify's TestPipelineVerify covers them.
			continue
		}
		if strings.HasPrefix(r.ID, "chart/") {
			// The chart kind (internal/kind) renders the chart with the
			// Helm SDK and fills Input.Charts; this package imports
			// neither: internal/kind's TestChartKindLint covers every
			// chart rule on real charts.
			continue
		}
		if r.ID == RuleEditedInPlace {
			// Reported by the pipeline from change detection, not by Run:
			// internal/pipeline's TestEditedInPlace covers it.
			continue
		}
		switch r.ID {
		case RuleManifestNotAFile, RuleManifestFileSize, RuleManifestObjectSize:
			// Reported by the scan (ScanFinding) or the render stage
			// (CheckObjectSize), not by Run: TestScanFinding and
			// TestCheckObjectSize cover them.
			continue
		}
		if r.ID == RuleManifestParse && len(cases[r.ID]["pass"]) > 0 {
			// No input is known to trigger the catch-all (FuzzManifest keeps
			// it so): TestParseFallback covers its failing side.
			continue
		}
		if len(cases[r.ID]["fail"]) == 0 || len(cases[r.ID]["pass"]) == 0 {
			t.Errorf("rule %s needs testdata/rules/%s/fail.txtar and pass.txtar", r.ID, r.ID)
		}
	}
	for id := range cases {
		if _, ok := Rule(id); !ok {
			t.Errorf("testdata/rules/%s: no such rule", id)
		}
	}
}

func TestRules(t *testing.T) {
	cases := ruleCases(t)
	ids := sortedKeys(cases)
	for _, id := range ids {
		for _, kind := range []string{"fail", "pass"} {
			for _, p := range cases[id][kind] {
				t.Run(strings.TrimPrefix(filepath.ToSlash(p), "testdata/rules/"), func(t *testing.T) {
					data, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					comment, files := parseTxtar(data)
					in, cfg := loadCase(t, files)
					fs := Run(context.Background(), cfg, in)
					n := 0
					for _, f := range fs {
						if f.Rule == id {
							n++
						}
						if f.Line < 1 || f.Column < 1 {
							if !(f.Rule == RuleWaiver || f.Rule == RuleConfig) {
								t.Errorf("finding without line and column: %v", f)
							}
						}
					}
					if kind == "fail" && n == 0 {
						t.Errorf("no %s finding:\n%s", id, report(fs))
					}
					if kind == "pass" && n > 0 {
						t.Errorf("unexpected %s finding:\n%s", id, report(fs))
					}
					got := report(fs)
					want := ""
					wi := -1
					for i, f := range files {
						if f.name == "want" {
							want, wi = string(f.data), i
						}
					}
					if *update {
						if wi < 0 {
							files = append(files, txtFile{name: "want"})
							wi = len(files) - 1
						}
						files[wi].data = []byte(got)
						if err := os.WriteFile(p, formatTxtar(comment, files), 0o644); err != nil {
							t.Fatal(err)
						}
						return
					}
					if got != want {
						t.Errorf("report differs (go test ./internal/lint/ -update accepts it):\n--- want\n%s--- got\n%s", want, got)
					}
				})
			}
		}
	}
}

// TestRuleIDs keeps the catalog tidy: unique IDs in the known families,
// every field filled.
func TestRuleIDs(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("duplicate rule %s", r.ID)
		}
		seen[r.ID] = true
		fam, _, _ := strings.Cut(r.ID, "/")
		switch fam {
		case "manifest", "chart", "bundle", "platform", "olmv1", "dependency", "images", "repo", "verify":
		default:
			t.Errorf("rule %s: family %q", r.ID, fam)
		}
		if r.Summary == "" || r.Hint == "" || (r.Severity != Error && r.Severity != Warning) {
			t.Errorf("rule %s: incomplete %+v", r.ID, r)
		}
	}
}

// TestParseFallback covers the failing side of manifest/parse: a parser
// error no other rule explains is reported, with the parser's line.
func TestParseFallback(t *testing.T) {
	f := &mfile{path: "m.yaml", lines: [][]byte{[]byte("a: 1"), []byte("  b: 2")}}
	f.explainParse(&manifest.Error{Path: "m.yaml", Line: 2, Msg: "something new"})
	if len(f.fs) != 1 || f.fs[0].Rule != RuleManifestParse || f.fs[0].Line != 2 || f.fs[0].Column != 3 || f.fs[0].Message != "something new" {
		t.Fatalf("got %+v", f.fs)
	}
	f.explainParse(errors.New("again"))
	if len(f.fs) != 1 {
		t.Fatalf("an explained error is reported twice: %+v", f.fs)
	}
}

// TestPositionOnce: a finding's position is its path:line:col, printed
// once: no message of the rule fixtures says its own line again ("line 13
// is indented with a tab" at :13:). Other lines a message names (where a
// duplicated key was first defined) are information and stay.
func TestPositionOnce(t *testing.T) {
	finding := regexp.MustCompile(`^(\S+?):(\d+)(?::\d+)?: \w+: (.*) \[[^\]]+\]$`)
	n := 0
	for _, kinds := range ruleCases(t) {
		for _, files := range kinds {
			for _, p := range files {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				_, want, ok := strings.Cut(string(data), "\n-- want --\n")
				if !ok {
					continue
				}
				for _, l := range strings.Split(want, "\n") {
					m := finding.FindStringSubmatch(l)
					if m == nil {
						continue
					}
					n++
					own := regexp.MustCompile(`\bline ` + m[2] + `\b|` + regexp.QuoteMeta(m[1]+":"+m[2]))
					if own.MatchString(m[3]) {
						t.Errorf("%s: %q says its position again", p, l)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no findings read from the fixtures")
	}
}
