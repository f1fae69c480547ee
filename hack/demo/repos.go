package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"sigs.k8s.io/yaml"
)

// The story the package repo tells: upgradePackage gets its newest version
// in commit 2, delistPackage leaves in commit 3.
const (
	upgradePackage = "hello-operator"
	delistPackage  = "queue-operator"
	packagesDir    = "packages"
)

// commitTimes are the fixed author and committer times of the package repo
// commits: the source history reads the same on every run (the hashes still
// differ, as the manifests name the registry's random port).
var commitTimes = []time.Time{
	time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC),
	time.Date(2025, 3, 10, 10, 0, 0, 0, time.UTC),
	time.Date(2025, 3, 17, 10, 0, 0, 0, time.UTC),
}

// packageRepo is the demo's Git package repo of PackageManifests.
type packageRepo struct {
	d       *demo
	dir     string
	repo    *git.Repository
	upgrade *exampleBundle // held back from commit 1, added by commit 2
	commits int
}

// initPackageRepo is step 3: a new repo whose first commit lists every
// example bundle except the newest version of upgradePackage.
func (d *demo) initPackageRepo() (*packageRepo, error) {
	upgrade := newest(d.bundles, upgradePackage)
	if upgrade == nil || count(d.bundles, upgradePackage) < 2 {
		return nil, fmt.Errorf("the examples need at least two versions of %s", upgradePackage)
	}
	if count(d.bundles, delistPackage) == 0 {
		return nil, fmt.Errorf("the examples have no %s", delistPackage)
	}

	d.pkgRepo = filepath.Join(d.work, "package-repo")
	repo, err := git.PlainInitWithOptions(d.pkgRepo, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		return nil, err
	}
	r := &packageRepo{d: d, dir: d.pkgRepo, repo: repo, upgrade: upgrade}

	var first []*exampleBundle
	for _, b := range d.bundles {
		if b != upgrade {
			first = append(first, b)
		}
	}
	var names []string
	for _, b := range first {
		names = append(names, b.Package+" "+b.Version)
	}
	fmt.Fprintf(d.out, "package repo: %s\n", d.display(r.dir))
	if err := r.commit("Add "+strings.Join(names, ", "), first, ""); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *packageRepo) upgradeMessage() string {
	return fmt.Sprintf("Upgrade %s to %s", r.upgrade.Package, r.upgrade.Version)
}

func (r *packageRepo) delistMessage() string { return "Delist " + delistPackage }

// commitUpgrade is source commit 2: add the held-back version.
func (r *packageRepo) commitUpgrade() error {
	return r.commit(r.upgradeMessage(), []*exampleBundle{r.upgrade}, "")
}

// commitDelist is source commit 3: remove every manifest of delistPackage.
func (r *packageRepo) commitDelist() error {
	return r.commit(r.delistMessage(), nil, delistPackage)
}

// commit writes a PackageManifest for each of add, removes the directory of
// package remove (if not empty), and commits everything as the demo author.
func (r *packageRepo) commit(msg string, add []*exampleBundle, remove string) error {
	wt, err := r.repo.Worktree()
	if err != nil {
		return err
	}
	for _, b := range add {
		rel := manifestPath(b)
		p := filepath.Join(r.dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, packageManifest(b), 0o644); err != nil {
			return err
		}
		if _, err := wt.Add(rel); err != nil {
			return err
		}
		fmt.Fprintf(r.d.out, "  add     %s\n", rel)
	}
	if remove != "" {
		rel := path.Join(packagesDir, remove)
		matches, err := filepath.Glob(filepath.Join(r.dir, filepath.FromSlash(rel), "*", "manifest.yaml"))
		if err != nil {
			return err
		}
		if len(matches) == 0 {
			return fmt.Errorf("package repo: nothing to remove under %s", rel)
		}
		for _, m := range matches {
			mrel, _ := filepath.Rel(r.dir, m)
			fmt.Fprintf(r.d.out, "  remove  %s\n", filepath.ToSlash(mrel))
		}
		if err := os.RemoveAll(filepath.Join(r.dir, filepath.FromSlash(rel))); err != nil {
			return err
		}
	}
	if r.commits >= len(commitTimes) {
		return errors.New("package repo: no commit time left")
	}
	sig := &object.Signature{Name: "Demo", Email: "demo@example.com", When: commitTimes[r.commits]}
	// All stages the removals, like `git commit -a`.
	h, err := wt.Commit(msg, &git.CommitOptions{All: true, Author: sig, Committer: sig})
	if err != nil {
		return err
	}
	r.commits++
	fmt.Fprintf(r.d.out, "package repo commit %s %q\n", h.String()[:7], msg)
	return nil
}

// manifestPath is where the PackageManifest of b lives in the package repo.
func manifestPath(b *exampleBundle) string {
	return path.Join(packagesDir, b.Package, b.Version, "manifest.yaml")
}

// packageManifest renders the PackageManifest of a staged bundle: the bundle
// and every related image as stand-in references in the source registry,
// display information from the CSV.
func packageManifest(b *exampleBundle) []byte {
	var s strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&s, format, args...) }
	w("apiVersion: app.alauda.cn/v1beta1\n")
	w("kind: PackageManifest\n")
	w("metadata:\n")
	w("  name: %s\n", scalar(b.Package+".v"+b.Version))
	w("spec:\n")
	w("  type: bundle\n")
	w("  artifact: %s\n", scalar(b.BundleRef))
	w("  version: %s\n", scalar("v"+b.Version))
	w("  arch: [linux/amd64]\n")
	w("  info:\n")
	w("    displayName: %s\n", scalar(b.DisplayName))
	if b.Description != "" {
		w("    description: %s\n", scalar(b.Description))
	}
	if b.Icon != "" {
		w("    icon: %s\n", scalar(b.Icon))
	}
	if len(b.Keywords) > 0 {
		w("    keywords:\n")
		for _, k := range b.Keywords {
			w("    - %s\n", scalar(k))
		}
	}
	if len(b.Links) > 0 {
		w("    links:\n")
		for _, l := range b.Links {
			w("    - name: %s\n", scalar(l.Name))
			w("      url: %s\n", scalar(l.URL))
		}
	}
	w("  relatedImages:\n")
	for _, ref := range b.StandInImages() {
		w("  - %s\n", scalar(ref))
	}
	return []byte(s.String())
}

// scalar renders s as a one-line YAML scalar, quoted only when needed.
func scalar(s string) string {
	out, err := yaml.Marshal(s)
	if err != nil || strings.Count(strings.TrimSuffix(string(out), "\n"), "\n") > 0 {
		return strconv.Quote(s) // a JSON-compatible double-quoted string is valid YAML
	}
	return strings.TrimSuffix(string(out), "\n")
}

// initCatalog is step 4: an empty bare repo whose HEAD names catalogBranch.
func (d *demo) initCatalog() error {
	d.catalog = filepath.Join(d.work, "catalog.git")
	_, err := git.PlainInitWithOptions(d.catalog, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(catalogBranch)},
		Bare:        true,
	})
	return err
}

// commitInfo identifies a commit for display.
type commitInfo struct {
	Hash    plumbing.Hash
	Subject string
}

func (c *commitInfo) String() string {
	return fmt.Sprintf("%s %q", c.Hash.String()[:7], c.Subject)
}

// catalogHead returns the commit catalogBranch points at in the repo at dir,
// nil if the branch does not exist yet.
func catalogHead(dir string) (*commitInfo, error) {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("catalog repo: %w", err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(catalogBranch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog repo: %w", err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return nil, fmt.Errorf("catalog repo: %w", err)
	}
	return &commitInfo{Hash: c.Hash, Subject: subject(c.Message)}, nil
}

// subject is the first line of a commit message.
func subject(msg string) string {
	s, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return s
}

// count returns how many bundles belong to package pkg.
func count(bundles []*exampleBundle, pkg string) int {
	n := 0
	for _, b := range bundles {
		if b.Package == pkg {
			n++
		}
	}
	return n
}

// newest returns the bundle of pkg with the highest version.
func newest(bundles []*exampleBundle, pkg string) *exampleBundle {
	var best *exampleBundle
	for _, b := range bundles {
		if b.Package == pkg && (best == nil || versionLess(best.Version, b.Version)) {
			best = b
		}
	}
	return best
}

// versionLess compares dotted release versions numerically ("0.10.0" >
// "0.9.0"); a part that is not a number compares as text.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, errA := strconv.Atoi(pa[i])
		nb, errB := strconv.Atoi(pb[i])
		if errA == nil && errB == nil {
			if na != nb {
				return na < nb
			}
			continue
		}
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}
