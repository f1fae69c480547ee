// Command demo is the README demo of publish. It needs only Go and git: no
// network, no Docker, no Kubernetes.
//
//	go build -o bin/publish ./cmd/publish
//	go run ./hack/demo -publish bin/publish [-keep]
//
// It plays the whole GitOps story on the local machine:
//
//  1. starts two in-process OCI registries (go-containerregistry
//     pkg/registry) on free 127.0.0.1 ports, "source" and "destination";
//  2. for every example bundle under examples/operators, pushes a small
//     stand-in image for every image the CSV deploys, rewrites the CSV to the
//     stand-ins and pushes the bundle image to the source registry;
//  3. creates a package repo (Git) holding PackageManifests;
//  4. creates an empty bare catalog repo;
//  5. runs `publish run` four times: initial listing, an upgrade (new
//     hello-operator version), a delisting (queue-operator removed) and a
//     run with nothing to do; with -airgap instead, packages everything
//     into an archive (twice, the second time from the --cache), verifies
//     it, stops the source registry and runs `publish push --catalog`;
//  6. prints what ended up in the catalog: the rendered/ tree, two objects
//     and the catalog's git log.
//
// Everything lives in one temporary directory, removed at the end unless
// -keep is given. The demo exits 1 with a message naming the step when a
// step fails, 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"
)

// catalogBranch is the catalog branch publish writes (its --catalog-branch
// default).
const catalogBranch = "main"

func main() {
	var (
		publish  = flag.String("publish", "", "path to the publish binary (required)")
		examples = flag.String("examples", "", "directory of example bundles (default: examples/operators of the enclosing module)")
		keep     = flag.Bool("keep", false, "keep the work directory (package repo, catalog, bundles) and print its path")
		timeout  = flag.Duration("timeout", 5*time.Minute, "time limit for each publish run")
		airgap   = flag.Bool("airgap", false, "step 5 is the air-gapped transfer (publish package, verify, then push --catalog with the source registry stopped) instead of four publish runs")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./hack/demo -publish PATH_TO_PUBLISH_BINARY [-keep]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *publish == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	d := &demo{out: os.Stdout, runTimeout: *timeout, keep: *keep, airgapped: *airgap}
	if err := d.main(*publish, *examples); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo FAILED: %v\n", err)
		os.Exit(1)
	}
}

// main runs the demo until it ends or is interrupted (Ctrl-C still cleans
// up: registries stopped, work directory removed).
func (d *demo) main(publish, examples string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return d.run(ctx, publish, examples)
}

// demo holds the state shared by the steps.
type demo struct {
	out        io.Writer
	runTimeout time.Duration
	keep       bool
	airgapped  bool // -airgap

	publish  string // absolute path of the publish binary
	examples string // examples/operators
	work     string // the temporary directory everything lives in

	src, dst *localRegistry
	bundles  []*exampleBundle

	pkgRepo string // package repo work tree
	catalog string // bare catalog repo
}

// run performs the steps in order and cleans up, whatever happens.
func (d *demo) run(ctx context.Context, publish, examples string) (err error) {
	if d.publish, err = findPublish(publish); err != nil {
		return err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return errors.New("git is not on PATH: the demo (and publish) use it for local repositories")
	}
	if d.examples, err = findExamples(examples); err != nil {
		return err
	}

	d.work, err = os.MkdirTemp("", "publish-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if d.keep {
			fmt.Fprintf(d.out, "\nWork directory kept: %s\n(package-repo/, catalog.git, catalog-clone/, bundles/; the registries lived in this process and are gone)\n", d.work)
			return
		}
		if rmErr := os.RemoveAll(d.work); rmErr != nil && err == nil {
			err = rmErr
		}
	}()
	fmt.Fprintf(d.out, "publish:  %s\nexamples: %s\nWORK=%s\n", d.publish, d.examples, d.work)

	// Step 1.
	d.header("1. Start the source and destination registries")
	if d.src, err = startRegistry("source"); err != nil {
		return fmt.Errorf("step 1: %w", err)
	}
	defer d.src.Close()
	if d.dst, err = startRegistry("destination"); err != nil {
		return fmt.Errorf("step 1: %w", err)
	}
	defer d.dst.Close()
	fmt.Fprintf(d.out, "source registry:      http://%s\ndestination registry: http://%s\n", d.src.Host, d.dst.Host)

	// Step 2.
	d.header("2. Push stand-in images and bundle images to the source registry")
	if err := d.stageBundles(ctx); err != nil {
		return fmt.Errorf("step 2: %w", err)
	}

	// Step 3.
	d.header("3. Create the package repo")
	repo, err := d.initPackageRepo()
	if err != nil {
		return fmt.Errorf("step 3: %w", err)
	}

	// Step 4.
	d.header("4. Create an empty bare catalog repo")
	if err := d.initCatalog(); err != nil {
		return fmt.Errorf("step 4: %w", err)
	}
	fmt.Fprintf(d.out, "catalog: %s (bare, no commits, HEAD -> %s)\n", d.display(d.catalog), catalogBranch)

	// Step 5.
	if d.airgapped {
		if err := d.airgap(ctx); err != nil {
			return fmt.Errorf("step 5: %w", err)
		}
	} else if err := d.publishRuns(ctx, repo); err != nil {
		return fmt.Errorf("step 5: %w", err)
	}

	// Step 6.
	d.header("6. What is in the catalog now")
	if err := d.showCatalog(); err != nil {
		return fmt.Errorf("step 6: %w", err)
	}
	d.header("Done")
	if d.airgapped {
		fmt.Fprintln(d.out, "The archive alone put every image into the destination registry and listed every operator in the catalog repo.")
	} else {
		fmt.Fprintln(d.out, "Listing, upgrade and delisting reached the catalog repo; the unchanged run committed nothing.")
	}
	return nil
}

// header prints the line that introduces a step.
func (d *demo) header(title string) {
	fmt.Fprintf(d.out, "\n==> %s\n", title)
}

// display shortens a path below the work directory to $WORK/...
func (d *demo) display(p string) string {
	if rel, err := filepath.Rel(d.work, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.Join("$WORK", rel)
	}
	return p
}

// findPublish resolves the -publish flag to an absolute path of an
// executable.
func findPublish(p string) (string, error) {
	found, err := exec.LookPath(p)
	if err != nil {
		return "", fmt.Errorf("-publish %s: %w (build it with: go build -o bin/publish ./cmd/publish)", p, err)
	}
	if strings.ContainsRune(found, os.PathSeparator) {
		return filepath.Abs(found)
	}
	return found, nil
}

// findExamples returns dir, or when dir is empty examples/operators in the
// current directory or the nearest parent holding a go.mod.
func findExamples(dir string) (string, error) {
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", fmt.Errorf("-examples %s: not a directory", dir)
		}
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, "examples", "operators")
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand, nil
		}
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil || filepath.Dir(d) == d {
			break
		}
	}
	return "", errors.New("examples/operators not found: run the demo from the repository, or pass -examples DIR")
}

// publishRuns is step 5: the four publish runs and the source commits
// between them.
func (d *demo) publishRuns(ctx context.Context, repo *packageRepo) error {
	d.header("5a. publish run #1: list everything in source commit 1")
	if err := d.publishRun(ctx, 1, expectCommit); err != nil {
		return err
	}

	d.header(fmt.Sprintf("5b. Source commit 2 %q, then publish run #2", repo.upgradeMessage()))
	if err := repo.commitUpgrade(); err != nil {
		return err
	}
	if err := d.publishRun(ctx, 2, expectCommit); err != nil {
		return err
	}

	d.header(fmt.Sprintf("5c. Source commit 3 %q, then publish run #3", repo.delistMessage()))
	if err := repo.commitDelist(); err != nil {
		return err
	}
	if err := d.publishRun(ctx, 3, expectCommit); err != nil {
		return err
	}

	d.header("5d. publish run #4, the source unchanged: nothing to commit")
	return d.publishRun(ctx, 4, expectNoCommit)
}

type commitExpectation int

const (
	expectCommit commitExpectation = iota
	expectNoCommit
)

// publishRun runs publish once, streaming its output, then reports what
// happened to the catalog branch.
func (d *demo) publishRun(ctx context.Context, n int, expect commitExpectation) error {
	before, err := catalogHead(d.catalog)
	if err != nil {
		return err
	}
	args := []string{"run",
		"--source", d.pkgRepo,
		"--catalog", d.catalog,
		"--dst-registry", d.dst.Host,
		"--plain-http",
	}
	if err := d.publishCmd(ctx, fmt.Sprintf("publish run #%d", n), args...); err != nil {
		return err
	}

	after, err := catalogHead(d.catalog)
	if err != nil {
		return err
	}
	switch {
	case after == nil:
		fmt.Fprintf(d.out, "catalog %s: still empty (publish made no commit)\n", catalogBranch)
	case before != nil && before.Hash == after.Hash:
		fmt.Fprintf(d.out, "catalog %s: unchanged at %s\n", catalogBranch, after)
		if expect == expectCommit {
			fmt.Fprintf(d.out, "note: expected a new catalog commit after run #%d\n", n)
		}
	default:
		fmt.Fprintf(d.out, "catalog %s: now at %s\n", catalogBranch, after)
		if expect == expectNoCommit {
			return fmt.Errorf("publish run #%d made catalog commit %s although the source did not change", n, after)
		}
	}
	return nil
}

// prefixWriter writes every line with a prefix; Flush ends a last line that
// has no newline.
type prefixWriter struct {
	w       io.Writer
	prefix  string
	midLine bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if !p.midLine {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
			p.midLine = true
		}
		i := strings.IndexByte(string(b), '\n')
		if i < 0 {
			_, err := p.w.Write(b)
			return n, err
		}
		if _, err := p.w.Write(b[:i+1]); err != nil {
			return 0, err
		}
		p.midLine = false
		b = b[i+1:]
	}
	return n, nil
}

// Flush terminates an unfinished line.
func (p *prefixWriter) Flush() {
	if p.midLine {
		io.WriteString(p.w, "\n")
		p.midLine = false
	}
}
