// Command catalogbench runs publish over a checkout of the largest public
// operator catalog, redhat-openshift-ecosystem/community-operators-prod:
// every bundle directory of its operators/ tree is built into a bundle image
// in one registry (related images replaced by small generated stand-ins,
// testenv.BuildCorpus), a package repo is written, and the commands a
// platform team runs are timed with their peak RSS: `publish lint` of
// everything beside `opm render` of the same bundle images, the first
// `publish run`, then `plan` and an incremental `run` after one new version.
// Bundles that are broken upstream are counted by cause, never hidden.
// See bench/catalog/run.sh.
//
//	go run ./bench/catalog -registry 127.0.0.1:PORT -checkout DIR -publish bin/publish [-opm OPM] [-operators N]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/testenv"
)

func main() {
	reg := flag.String("registry", "", "plain-HTTP registry host:port (required)")
	checkout := flag.String("checkout", "", "checkout of community-operators-prod (its operators/ directory is read; required)")
	publish := flag.String("publish", "bin/publish", "publish binary")
	opm := flag.String("opm", "", "opm binary (optional: without it opm render is not timed)")
	operators := flag.Int("operators", 0, "take the first N operators in name order (0: all)")
	workDir := flag.String("work", "", "working directory (default: a new temporary one, removed at the end)")
	compare := flag.String("compare", "", "with -lint-only: another publish binary whose lint output must equal this one's (the benchmark fails otherwise)")
	lintOnly := flag.Int("lint-only", 0, "time only lint with an empty lint cache and opm render, in turns, this many times each (0: the whole benchmark)")
	flag.Parse()
	if *reg == "" || *checkout == "" {
		fmt.Fprintln(os.Stderr, "catalogbench: -registry and -checkout are required")
		os.Exit(2)
	}
	work := *workDir
	if work == "" {
		var err error
		work, err = os.MkdirTemp("", "catalogbench-")
		check(err)
		defer os.RemoveAll(work)
	}
	check(os.MkdirAll(work, 0o755))
	b := &bench{reg: *reg, publish: *publish, opm: *opm, work: work, lintOnly: *lintOnly, compare: *compare}
	b.run(context.Background(), *checkout, *operators)
}

type bench struct {
	reg, publish, opm, work string
	lintOnly                int
	compare                 string
	rows                    []string
}

// row records one timed command in the table.
func (b *bench) row(what string, r result) {
	b.rows = append(b.rows, fmt.Sprintf("| %s | %s | %s | %d MiB | %s |", what, r.wall.Round(100*time.Millisecond), r.cpu.Round(100*time.Millisecond), r.maxRSS>>20, r.note))
	fmt.Fprintf(os.Stderr, "catalogbench: %s: %s (%s CPU), %d MiB peak RSS, exit %d %s\n", what, r.wall.Round(100*time.Millisecond), r.cpu.Round(100*time.Millisecond), r.maxRSS>>20, r.code, r.note)
}

func (b *bench) run(ctx context.Context, checkout string, operators int) {
	view := filepath.Join(b.work, "view")
	pkgs := linkOperators(checkout, view, operators)
	repo := filepath.Join(b.work, "repo")
	t := time.Now()
	c, err := testenv.BuildCorpus(ctx, view, b.reg, filepath.Join(repo, "packages"))
	built := time.Since(t)
	defects := countDefects(err)
	fmt.Fprintf(os.Stderr, "catalogbench: %d bundle images built in %s; %d bundles left out\n", len(c.Packages), built.Round(time.Second), total(defects))
	if len(c.Packages) == 0 {
		check(err)
	}
	refs := make([]string, len(c.Packages))
	for i, p := range c.Packages {
		refs[i] = p.BundleRef
	}
	// Hold one version back: the incremental run lists it.
	held := c.Packages[len(c.Packages)-1]
	heldDir := filepath.Dir(held.ManifestPath)
	stash := filepath.Join(b.work, "held")
	check(os.Rename(heldDir, stash))
	git(repo, "init", "-q", "-b", "main")
	gitCommit(repo, "the catalog")

	if b.lintOnly > 0 {
		b.lintTurns(repo, refs[:len(refs)-1])
		b.print(pkgs, len(c.Packages), built, defects)
		return
	}
	cache := filepath.Join(b.work, "lint-cache")
	lintArgs := []string{"lint", "--source", repo, "--format", "json", "--plain-http", "--no-image-check", "--lint-cache", cache}
	lint := b.exec(repo, lintArgs...)
	byRule, stopped := lintCounts(lint.stdout, repo)
	lint.note = fmt.Sprintf("%d bundles, empty lint cache; error findings by rule: %s", len(refs)-1, formatCounts(byRule))
	b.row("publish lint (everything)", lint)
	warm := b.exec(repo, lintArgs...)
	warm.note = "the same, every bundle in the lint cache"
	b.row("publish lint (everything, again)", warm)
	if b.opm != "" {
		b.row("opm render (the same bundle images)", b.opmRender(refs))
	}
	// Versions stopped by an error finding leave the package repo (each
	// named at its file and line in the lint output): what remains is
	// what a first run lists. Leaving a version out breaks the upgrade
	// graph of the versions that replace it (repo/replaces), so lint again
	// until no error is left (untimed); then plan, for the rules only plan
	// and run check (dependency/missing: requirements on packages of other
	// catalogs), the same way.
	var left []string
	for round := 0; len(stopped) > 0 && round < 50; round++ {
		left = append(left, b.leaveOut(repo, stopped, "lint")...)
		again := b.exec(repo, lintArgs...)
		_, stopped = lintCounts(again.stdout, repo)
	}
	catalog := filepath.Join(b.work, "catalog.git")
	git(b.work, "init", "-q", "--bare", catalog)
	planJSON := filepath.Join(b.work, "plan.json")
	roundArgs := []string{"plan", "--source", repo, "--catalog", catalog, "--dst-registry", b.reg + "/mirror", "--plain-http", "--lint-cache", cache, "--plan-json", planJSON}
	byPlan := map[string]int{}
	for round := 0; round < 50; round++ {
		b.exec(repo, roundArgs...)
		data, err := os.ReadFile(planJSON)
		check(err)
		rules, stopped := lintCounts(data, repo)
		if len(stopped) == 0 {
			break
		}
		for r, n := range rules {
			byPlan[r] += n
		}
		left = append(left, b.leaveOut(repo, stopped, "plan")...)
	}
	runArgs := []string{"--source", repo, "--catalog", catalog, "--dst-registry", b.reg + "/mirror", "--plain-http", "--lint-cache", filepath.Join(b.work, "run-lint-cache")}
	first := b.exec(repo, append([]string{"run"}, runArgs...)...)
	first.note = fmt.Sprintf("%d versions left (%d stopped by an error finding or a broken replaces chain; plan's error findings by rule: %s), empty lint cache", len(refs)-1-len(left), len(left), formatCounts(byPlan))
	b.row("publish run (first)", first)

	check(os.Rename(stash, heldDir))
	gitCommit(repo, "one new version")
	plan := b.exec(repo, append([]string{"plan"}, runArgs...)...)
	plan.note = fmt.Sprintf("%s %s", held.Package, held.Version)
	b.row("publish plan (one new version)", plan)
	inc := b.exec(repo, append([]string{"run"}, runArgs...)...)
	inc.note = plan.note
	b.row("publish run (one new version)", inc)
	b.olmAndPackage(ctx, repo)

	b.print(pkgs, len(c.Packages), built, defects)
}

// leaveOut removes the version directories dirs from the package repo; a
// directory suffixed "+later" (stopped by repo/replaces) goes with the later
// versions of its package (in version order): their replaces chain leads
// to it, so each would be stopped in a round of its own. It commits and
// returns what it removed.
func (b *bench) leaveOut(repo string, dirs []string, by string) []string {
	var gone []string
	for _, dir := range dirs {
		later := strings.HasSuffix(dir, "+later")
		dir = strings.TrimSuffix(dir, "+later")
		pkg, v := filepath.Dir(dir), filepath.Base(dir)
		ents, err := os.ReadDir(pkg)
		if err != nil {
			continue // its package went already
		}
		for _, e := range ents {
			if e.IsDir() && (e.Name() == v || later && laterVersion(e.Name(), v)) {
				gone = append(gone, filepath.Join(pkg, e.Name()))
				check(os.RemoveAll(filepath.Join(pkg, e.Name())))
			}
		}
	}
	gitCommit(repo, "leave out the versions "+by+" stops")
	return gone
}

// laterVersion says whether version a sorts after b by their dot-separated
// numbers (a pre-release suffix compares as text).
func laterVersion(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		switch {
		case aerr == nil && berr == nil && ai != bi:
			return ai > bi
		case (aerr != nil || berr != nil) && as[i] != bs[i]:
			return as[i] > bs[i]
		}
	}
	return len(as) > len(bs)
}

// olmAndPackage times the olm target's first run over the same package
// repo into a catalog repo of its own (its catalog image built on a small
// generated base image: the images are at the destination already), and
// `publish package` of every version into one archive.
func (b *bench) olmAndPackage(ctx context.Context, repo string) {
	base := b.reg + "/base/opm:v1.73.0"
	img, err := random.Image(1024, 1)
	check(err)
	ref, err := name.ParseReference(base)
	check(err)
	check(remote.Write(ref, img, remote.WithContext(ctx)))
	cfg := filepath.Join(b.work, "olm.yaml")
	check(os.WriteFile(cfg, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nclusters:\n  edge:\n    target: olm\n    olm:\n      baseImage: "+base+"\n"), 0o644))
	catalog := filepath.Join(b.work, "olm-catalog.git")
	git(b.work, "init", "-q", "--bare", catalog)
	olm := b.exec(repo, "run", "--config", cfg, "--cluster", "edge", "--source", repo, "--catalog", catalog,
		"--dst-registry", b.reg+"/mirror", "--plain-http", "--lint-cache", filepath.Join(b.work, "olm-lint-cache"))
	olm.note = "olm target, every version listed: file-based catalog and catalog image"
	b.row("publish run --target olm (first)", olm)
	archive := filepath.Join(b.work, "whole.tgz")
	pkg := b.exec(repo, "package", "--source", repo, "-o", archive, "--plain-http")
	if st, err := os.Stat(archive); err == nil {
		pkg.note = fmt.Sprintf("every version, one archive of %d MiB", st.Size()>>20)
	}
	b.row("publish package (everything)", pkg)
}

// print writes the table of the rows on stdout.
func (b *bench) print(operators, built int, took time.Duration, defects map[string]int) {
	fmt.Printf("%d operators, %d bundle images built (%s); left out before publish: %s\n\n", operators, built, took.Round(time.Second), formatCounts(defects))
	fmt.Println("| command | wall time | CPU time | peak RSS | notes |")
	fmt.Println("|---|---:|---:|---:|---|")
	for _, r := range b.rows {
		fmt.Println(r)
	}
}

// lintTurns times publish lint with an empty lint cache and opm render of
// the same bundle images (refs) in turns, b.lintOnly times each, so that
// both see the same load; each row is one run.
func (b *bench) lintTurns(repo string, refs []string) {
	args := []string{"lint", "--source", repo, "--format", "json", "--plain-http", "--no-image-check"}
	if b.compare != "" {
		this := b.exec(repo, args...)
		other := (&bench{publish: b.compare, work: b.work}).exec(repo, args...)
		if !bytes.Equal(this.stdout, other.stdout) || this.code != other.code {
			fmt.Fprintf(os.Stderr, "catalogbench: lint of %s and of %s differ (exit %d and %d); outputs in %s\n", b.publish, b.compare, this.code, other.code, b.work)
			check(os.WriteFile(filepath.Join(b.work, "lint-this.json"), this.stdout, 0o644))
			check(os.WriteFile(filepath.Join(b.work, "lint-other.json"), other.stdout, 0o644))
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "catalogbench: lint of %s and of %s give the same output (%d bytes)\n", b.publish, b.compare, len(this.stdout))
	}
	for i := 0; i < b.lintOnly; i++ {
		lint := b.exec(repo, args...)
		lint.note = fmt.Sprintf("%d bundles, no lint cache (turn %d)", len(refs), i+1)
		b.row("publish lint (everything)", lint)
		if b.opm != "" {
			r := b.opmRender(refs)
			r.note += fmt.Sprintf(" (turn %d)", i+1)
			b.row("opm render (the same bundle images)", r)
		}
	}
}

// result is one command's outcome.
type result struct {
	wall   time.Duration
	cpu    time.Duration // user + system
	maxRSS int64         // bytes
	code   int
	stdout []byte
	note   string
}

// exec runs publish with args in dir, stdout kept, stderr to a log file.
func (b *bench) exec(dir string, args ...string) result {
	cmd := exec.Command(b.publish, args...)
	cmd.Dir = dir
	logf, err := os.Create(filepath.Join(b.work, args[0]+"-"+time.Now().Format("150405.000")+".log"))
	check(err)
	defer logf.Close()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, logf
	return finish(cmd, &out)
}

func finish(cmd *exec.Cmd, out *bytes.Buffer) result {
	t := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(t)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		check(err)
	}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = ru.Maxrss << 10 // KiB on Linux
			r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if out != nil {
		r.stdout = out.Bytes()
	}
	return r
}

// opmRender times `opm render` of refs, its JSON output discarded.
func (b *bench) opmRender(refs []string) result {
	home := filepath.Join(b.work, "opm-home")
	check(os.MkdirAll(filepath.Join(home, ".config/containers"), 0o755))
	check(os.WriteFile(filepath.Join(home, ".config/containers/policy.json"), []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o644))
	cmd := exec.Command(b.opm, append([]string{"render", "--use-http", "-o", "json"}, refs...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Dir = b.work
	logf, err := os.Create(filepath.Join(b.work, "opm-render.log"))
	check(err)
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = nil, logf
	r := finish(cmd, nil)
	r.note = fmt.Sprintf("%d bundle images, no validation", len(refs))
	return r
}

// linkOperators makes view/community-operators the checkout's operators/
// directory (a link), or, when n > 0, a copy of its first n operators in
// name order; it returns how many operators the view holds.
func linkOperators(checkout, view string, n int) int {
	src, err := filepath.Abs(filepath.Join(checkout, "operators"))
	check(err)
	ents, err := os.ReadDir(src)
	check(err)
	dst := filepath.Join(view, "community-operators")
	check(os.MkdirAll(view, 0o755))
	if n <= 0 {
		check(os.Symlink(src, dst))
		count := 0
		for _, e := range ents {
			if e.IsDir() {
				count++
			}
		}
		return count
	}
	count := 0
	for _, e := range ents {
		if !e.IsDir() || count == n {
			continue
		}
		check(os.CopyFS(filepath.Join(dst, e.Name()), os.DirFS(filepath.Join(src, e.Name()))))
		count++
	}
	return count
}

// countDefects counts BuildCorpus's errors by cause: a duplicate package
// version, or the first words of a bundle's error.
func countDefects(err error) map[string]int {
	out := map[string]int{}
	if err == nil {
		return out
	}
	for _, e := range unjoin(err) {
		var dup *testenv.DuplicateBundleError
		var be *testenv.BundleError
		switch {
		case errors.As(e, &dup):
			out["duplicate package version"] += len(dup.Dirs)
		case errors.As(e, &be):
			out[cause(be.Err)]++
		default:
			out[cause(e)]++
		}
	}
	return out
}

// cause shortens an error to its kind: the text before the first quote,
// colon-separated detail or digit, at most 60 characters.
func cause(err error) string {
	s := err.Error()
	if i := strings.IndexAny(s, "\"'"); i > 0 {
		s = s[:i]
	}
	if parts := strings.SplitN(s, ": ", 3); len(parts) > 1 {
		s = parts[0] + ": " + parts[1]
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return strings.TrimSpace(s)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// lintCounts reads `publish lint --format json` (or plan's --plan-json): the
// error findings by rule, and the version directories (under repo) holding
// one, those stopped by repo/replaces (a broken upgrade chain) suffixed
// with "+later".
func lintCounts(out []byte, repo string) (map[string]int, []string) {
	var doc struct {
		Findings []struct {
			Rule     string `json:"rule"`
			Severity string `json:"severity"`
			Path     string `json:"path"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		fmt.Fprintf(os.Stderr, "catalogbench: lint output: %v\n", err)
		return nil, nil
	}
	byRule := map[string]int{}
	dirs := map[string]bool{}
	for _, f := range doc.Findings {
		if f.Severity != "error" {
			continue
		}
		byRule[f.Rule]++
		if strings.HasPrefix(f.Path, "packages/") && strings.HasSuffix(f.Path, "/manifest.yaml") {
			d := filepath.Join(repo, filepath.Dir(f.Path))
			if f.Rule == "repo/replaces" {
				d += "+later"
			}
			dirs[d] = true
		}
	}
	var list []string
	for d := range dirs {
		list = append(list, d)
	}
	sort.Strings(list)
	return byRule, list
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func git(dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "catalogbench: git %s: %v\n%s", strings.Join(args, " "), err, out)
		os.Exit(2)
	}
}

func gitCommit(repo, msg string) {
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "--allow-empty", "-m", msg)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalogbench:", err)
		os.Exit(2)
	}
}
