package diffbench

import (
	"context"
	"os/exec"
	"strconv"
	"testing"

	"github.com/operator-publish/publish/internal/source/diff"
)

// TestGenerate checks a small generated repo: go-git reads it, the last
// commit edits one version, every version is present, and git agrees.
func TestGenerate(t *testing.T) {
	for _, p := range []Params{{Artifacts: 7, Versions: 3, Commits: 9}, {Artifacts: 3, Versions: 2, Commits: 20}} {
		t.Run(p.String(), func(t *testing.T) {
			repo, err := Generate(t.TempDir(), p)
			if err != nil {
				t.Fatal(err)
			}
			if len(repo.Commits) != p.Commits {
				t.Fatalf("%d commits", len(repo.Commits))
			}
			res, err := diff.Compute(context.Background(), diff.Options{Repo: repo.Dir, StateCommit: repo.Back(1)})
			if err != nil {
				t.Fatal(err)
			}
			a, v := p.Changed()
			if len(res.Changes) != 1 || res.Changes[0].Kind != diff.Modified || res.Changes[0].Artifact != a || res.Changes[0].Version != v {
				t.Fatalf("last commit: %+v", res)
			}
			res, err = diff.Compute(context.Background(), diff.Options{Repo: repo.Dir, Base: repo.Commits[0]})
			if err != nil {
				t.Fatal(err)
			}
			total := p.Artifacts * p.Versions
			first := max(1, total/(p.Commits-1)) // versions the first commit adds
			if got := res.Count(diff.Added) + res.Count(diff.Modified); got < total-first || got > total-first+1 || res.Count(diff.Removed) > 0 || len(res.Warnings) > 0 {
				t.Fatalf("from the first commit: %d added or modified, want %d: %+v", got, total-first, res)
			}
			if _, err := exec.LookPath("git"); err == nil {
				out, err := exec.Command("git", "-C", repo.Dir, "fsck", "--no-dangling").CombinedOutput()
				if err != nil {
					t.Fatalf("git fsck: %v\n%s", err, out)
				}
				out, err = exec.Command("git", "-C", repo.Dir, "rev-list", "--count", "HEAD").CombinedOutput()
				if err != nil || string(out) != strconv.Itoa(p.Commits)+"\n" {
					t.Fatalf("rev-list: %v %s", err, out)
				}
			}
		})
	}
}
