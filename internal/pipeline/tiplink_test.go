package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestRunReplacesLinkInRendered: a symbolic link committed in the
// catalog at rendered/<cluster>/<artifact> (here other's directory made
// a link to tiny's: Argo CD or Flux would apply tiny's objects twice and
// prune other's) is no file publish rendered; the next run, though only
// tiny changed, sees it (catalog.Tip.Links), takes the full way and
// renders the cluster whole: the link is gone and other's rendered files
// are back.
func TestRunReplacesLinkInRendered(t *testing.T) {
	gitBin := testenv.Require(t, "git", "git")
	f := newFixture(t)
	f.addOther(t)
	o := Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog),
		Lint: lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}}} // other reuses tiny's bundle
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	dir, _, _ := f.cloneCatalog(t)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("rm", "-rq", "rendered/global/other")
	if err := os.Symlink("tiny", filepath.Join(dir, "rendered/global/other")); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-qm", "rendered/global/other a link to tiny")
	git("push", "-q", "origin", "main")
	f.addVersion(t, "1.2.0")
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if got := f.catalogFile(t, "rendered/global/other/artifact_other.yaml"); got == "" {
		dir, _, _ := f.cloneCatalog(t)
		fi, err := os.Lstat(filepath.Join(dir, "rendered/global/other"))
		mode := "absent"
		if err == nil {
			mode = fi.Mode().String()
		}
		t.Errorf("after the run, rendered/global/other has no artifact_other.yaml (it is %s)", mode)
	}
}
