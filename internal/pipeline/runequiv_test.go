package pipeline

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/operator-publish/publish"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/testenv"
)

// treeOf is the root tree hash of the main branch's tip of the bare repo at
// dir.
func treeOf(t *testing.T, dir string) plumbing.Hash {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference("refs/heads/main", true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c.TreeHash
}

// TestRunIncrementalEqualsFull: for each change the plan equivalence test
// covers (nothing, a file that is not a manifest, added / edited / removed
// version, a version directory moved (git mv), added / renamed / removed
// artifact, an uncommitted edit, a staged one, a change made in a linked
// worktree of the package repo, whose .git is a file) and with
// --catalog-path, the incremental `run` (only the touched artifacts
// read and rendered, from Git objects of the branch tip) leaves the same
// catalog tree, by tree hash, and commits the same files as the full run
// (every manifest read, the whole tip rendered), each on its own catalog
// repo fed the same package repo; and after the first publish it really
// goes the incremental way. Each run serves two clusters, global (every
// artifact) and edge (the tiny artifacts, another namespace), in one
// commit. Both push the OCI catalog of each cluster to one tag: the
// artifact of the incremental run, built from the tip's rendered/<cluster>
// with its changes, must have the digest of the full run's (else the
// state, which records it, makes the trees differ).
func TestRunIncrementalEqualsFull(t *testing.T) {
	for _, path := range []string{"", "deploy/catalog"} {
		t.Run("catalog-path="+path, func(t *testing.T) {
			f := newFixture(t)
			old := filepath.Join(t.TempDir(), "full.git")
			if _, err := git.PlainInit(old, true); err != nil {
				t.Fatal(err)
			}
			// Both catalogs start with the overlay of the second cluster,
			// edge, which gets the tiny artifacts only.
			edgeOverlay(t, f.catalog, path)
			edgeOverlay(t, old, path)
			oci := f.dst + "/platform/operator-catalog"
			// src is the package repo's checkout the runs read: f.source,
			// then a linked worktree of it.
			src := f.source
			runOn := func(name, dir string, full bool) (*Result, string) {
				t.Helper()
				cat := catalogOpts(dir)
				cat.Path, cat.InitCatalog = path, true
				var log syncBuffer
				res, err := Run(context.Background(), Options{
					Source: src, Catalog: cat, AllowEmpty: true, AllowDirty: true,
					// Artifacts other and tiny2 reuse tiny's bundles.
					Lint:   lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}},
					Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
					Log:    slog.New(slog.NewTextHandler(&log, nil)),
					Clusters: []ClusterOptions{
						{Name: "global", OCI: oci},
						{Name: "edge", OCI: oci, Include: []string{"tiny*"}, Render: render.Config{Namespace: "edge-system"}},
					},
					fullRead: full,
				})
				if err != nil {
					t.Fatalf("%s: run: %v\n%s", name, err, log.String())
				}
				if len(res.Clusters) != 2 || res.Clusters[0].OCI == nil || res.Clusters[1].OCI == nil {
					t.Fatalf("%s: no OCI catalog pushed: %+v", name, res.Clusters)
				}
				return res, tookFullRead(log.String())
			}
			first := true
			// wantCommit: whether the run commits; nil: whatever the
			// full run does.
			check := func(name string, wantCommit *bool) {
				t.Helper()
				want, _ := runOn(name+" (full)", old, true)
				got, why := runOn(name, f.catalog, false)
				if !first && why != "" {
					t.Errorf("%s: the run read everything: %s", name, why)
				}
				first = false
				if a, b := treeOf(t, f.catalog), treeOf(t, old); a != b {
					t.Errorf("%s: the incremental run left tree %s, the full run %s", name, a, b)
				}
				if strings.Join(got.Files, ",") != strings.Join(want.Files, ",") || (got.Commit == "") != (want.Commit == "") {
					t.Errorf("%s: the incremental run committed %q files %v, the full run %q files %v", name, got.Commit, got.Files, want.Commit, want.Files)
				}
				if wantCommit != nil && (got.Commit != "") != *wantCommit {
					t.Errorf("%s: commit %q, want a commit: %v", name, got.Commit, *wantCommit)
				}
			}
			yes, no := new(true), new(false)
			check("first publish", yes)
			check("nothing changed", no)

			os.WriteFile(filepath.Join(f.source, "README.md"), []byte("not a manifest\n"), 0o644)
			f.commit(t, "readme")
			check("a file that is not a manifest", no)

			f.addVersion(t, "1.2.0")
			check("add version", yes)

			p := filepath.Join(f.source, "packages/tiny/1.0.0/manifest.yaml")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(data), "displayName: Tiny", "displayName: Tiny Operator", 1)), 0o644)
			f.commit(t, "edit 1.0.0 in place")
			check("edit in place", nil) // the render keeps the published record: what reaches the catalog is as the full run says

			p = filepath.Join(f.source, "packages/tiny/1.2.0/manifest.yaml")
			data, _ = os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(data), "displayName: Tiny", "displayName: Tiny (uncommitted)", 1)), 0o644)
			check("uncommitted edit", yes)
			f.commit(t, "commit the edit")
			check("the edit committed", nil)

			// Added to the index (git add) but not committed: the same
			// detector on both ways sees it.
			data, _ = os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(data), "displayName: Tiny (uncommitted)", "displayName: Tiny (staged)", 1)), 0o644)
			f.stage(t, "packages/tiny/1.2.0/manifest.yaml")
			check("staged edit", yes)
			f.commit(t, "commit the staged edit")
			check("the staged edit committed", nil)

			// git mv of a version directory: the same version, read from
			// its new path on the incremental way (no full read).
			os.Rename(filepath.Join(f.source, "packages/tiny/1.0.0"), filepath.Join(f.source, "packages/tiny/v1.0.0"))
			f.commit(t, "move 1.0.0 to v1.0.0")
			check("move a version directory", nil)

			// Touching tiny again reads 1.0.0 from the path the state now
			// records, not the old one (which would be a full read).
			os.RemoveAll(filepath.Join(f.source, "packages/tiny/1.1.0"))
			f.commit(t, "remove 1.1.0")
			check("remove version", yes)

			os.Rename(filepath.Join(f.source, "packages/tiny/v1.0.0"), filepath.Join(f.source, "packages/tiny/1.0.0"))
			f.commit(t, "move v1.0.0 back to 1.0.0")
			check("move it back", nil)

			// Another artifact, on tiny's 1.2.0 bundle.
			data, _ = os.ReadFile(filepath.Join(f.source, "packages/tiny/1.2.0/manifest.yaml"))
			os.MkdirAll(filepath.Join(f.source, "packages/other/1.2.0"), 0o755)
			os.WriteFile(filepath.Join(f.source, "packages/other/1.2.0/manifest.yaml"), []byte(strings.Replace(string(data), "name: tiny.v", "name: other.v", 1)), 0o644)
			f.commit(t, "add other")
			check("add artifact", yes)
			at := func(p string) string { return strings.TrimPrefix(path+"/"+p, "/") }
			if catalogFileOf(t, f.catalog, at("rendered/edge/other/artifact_other.yaml")) != "" || !strings.Contains(catalogFileOf(t, f.catalog, at("rendered/edge/tiny/artifact_tiny.yaml")), "namespace: edge-system") || catalogFileOf(t, f.catalog, at("rendered/global/other/artifact_other.yaml")) == "" {
				t.Errorf("add artifact: edge gets other, or global does not")
			}

			os.Rename(filepath.Join(f.source, "packages/tiny"), filepath.Join(f.source, "packages/tiny2"))
			for _, v := range []string{"1.0.0", "1.2.0"} {
				p := filepath.Join(f.source, "packages/tiny2", v, "manifest.yaml")
				data, _ := os.ReadFile(p)
				os.WriteFile(p, []byte(strings.Replace(string(data), "name: tiny.v", "name: tiny2.v", 1)), 0o644)
			}
			f.commit(t, "rename tiny to tiny2")
			check("rename artifact", yes)

			os.RemoveAll(filepath.Join(f.source, "packages/tiny2"))
			f.commit(t, "remove tiny2")
			check("remove artifact", yes)

			// A linked worktree (git worktree add): its index is read
			// through the common Git directory, so the run from it goes
			// the incremental way too, and sees its edits and commits.
			src = gitWorktree(t, f.source)
			check("a linked worktree", nil)
			p = filepath.Join(src, "packages/other/1.2.0/manifest.yaml")
			data, _ = os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(data), "displayName: Tiny", "displayName: Other (linked)", 1)), 0o644)
			check("an uncommitted edit in a linked worktree", yes)
			gitIn(t, src, "commit", "-q", "-a", "-m", "edit other in the linked worktree")
			check("a commit in a linked worktree", nil)
		})
	}
}

// gitIn runs the git command in dir (skipped, through testenv.Skip, when
// git is not installed).
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// gitWorktree adds a linked worktree of the repo at dir (git worktree
// add, on a new branch at HEAD) and returns its path.
func gitWorktree(t *testing.T, dir string) string {
	t.Helper()
	linked := filepath.Join(t.TempDir(), "linked")
	gitIn(t, dir, "worktree", "add", "-q", linked)
	return linked
}

// edgeOverlay gives the empty bare catalog repo at dir a first commit on
// main holding the overlay of the cluster edge (below the catalog path),
// a copy of the template's global overlay naming edge's generated base.
func edgeOverlay(t *testing.T, dir, catalogPath string) {
	t.Helper()
	work := t.TempDir()
	repo, err := git.PlainInitWithOptions(work, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := publish.CatalogTemplate.ReadFile("catalog-repo-template/kustomize/clusters/global/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(work, filepath.FromSlash(catalogPath), "kustomize/clusters/edge/kustomization.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(strings.Replace(string(data), "publish/generated/global", "publish/generated/edge", 1)), 0o644)
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{dir}}); err != nil {
		t.Fatal(err)
	}
	commitPushAll(t, repo, "edge overlay")
}
