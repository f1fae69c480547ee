package trust_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/trust"
)

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, p, body string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func manifestYAML(artifact, bundle string, related ...string) string {
	s := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: " + artifact + ".v1.0.0\nspec:\n  type: bundle\n  artifact: " + bundle + "\n  version: v1.0.0\n  arch: [linux/amd64]\n"
	if len(related) > 0 {
		s += "  relatedImages:\n"
		for _, r := range related {
			s += "  - " + r + "\n"
		}
	}
	return s
}

// Read takes publish.yaml and the manifests' registries from the commit,
// whatever the work tree holds since.
func TestReadTakesTheBaseNotTheWorkTree(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q")
	write(t, filepath.Join(dir, "publish.yaml"), "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\ndstRegistry: dst.example.com/m\nsrcRegistries: [quay.io]\n")
	write(t, filepath.Join(dir, "packages/a/1.0.0/manifest.yaml"), manifestYAML("a", "quay.io/team/a-bundle:v1", "registry.example.com:5000/team/a:v1"))
	write(t, filepath.Join(dir, "packages/b/1.0.0/manifest.yaml"), "not: [a manifest")
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "base")
	base := runGit(t, dir, "rev-parse", "HEAD")
	// The pull request: another destination, a manifest naming its host.
	write(t, filepath.Join(dir, "publish.yaml"), "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\ndstRegistry: evil.example.com/x\n")
	write(t, filepath.Join(dir, "packages/c/1.0.0/manifest.yaml"), manifestYAML("c", "evil.example.com/c-bundle:v1"))
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "pr")

	b, err := trust.Read(dir, base, filepath.Join(dir, "publish.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Config == nil || b.Config.DstRegistry != "dst.example.com/m" || !slices.Equal(b.Config.SrcRegistries, []string{"quay.io"}) {
		t.Errorf("config at the base: %+v", b.Config)
	}
	if want := []string{"quay.io", "registry.example.com:5000"}; !slices.Equal(b.SourceHosts, want) {
		t.Errorf("SourceHosts = %v, want %v", b.SourceHosts, want)
	}

	// A base without publish.yaml: no configuration, no error.
	dir2 := t.TempDir()
	runGit(t, dir2, "init", "-q")
	write(t, filepath.Join(dir2, "README"), "x")
	runGit(t, dir2, "add", "-A")
	runGit(t, dir2, "commit", "-qm", "base")
	b, err = trust.Read(dir2, runGit(t, dir2, "rev-parse", "HEAD"), filepath.Join(dir2, "publish.yaml"), dir2)
	if err != nil || b.Config != nil || b.SourceHosts == nil || len(b.SourceHosts) != 0 {
		t.Errorf("empty base: %+v, %v", b, err)
	}
	// A configuration file outside the work tree is the workflow's: not
	// read at the base.
	if b, err := trust.Read(dir, base, filepath.Join(t.TempDir(), "publish.yaml"), dir); err != nil || !b.ConfigOutside || b.Config != nil {
		t.Errorf("a configuration outside the work tree: %+v, %v", b, err)
	}
}
