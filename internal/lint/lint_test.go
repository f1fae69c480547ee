package lint

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/manifest"
)

func pm(t *testing.T, path, name, ref, version string) *manifest.PackageManifest {
	t.Helper()
	m, err := manifest.Parse(path, []byte("apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: "+name+"\nspec:\n  type: bundle\n  artifact: "+ref+"\n  version: "+version+"\n  info:\n    displayName: X\n"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRepo(t *testing.T) {
	for _, tc := range []struct {
		name string
		ms   func(t *testing.T) []*manifest.PackageManifest
		want []string
	}{
		{"clean", func(t *testing.T) []*manifest.PackageManifest {
			return []*manifest.PackageManifest{pm(t, "a/1", "op.v1.0.0", "r.io/op:v1.0.0", "v1.0.0"), pm(t, "a/2", "op.v1.1.0", "r.io/op:v1.1.0", "v1.1.0")}
		}, nil},
		{"duplicate version", func(t *testing.T) []*manifest.PackageManifest {
			return []*manifest.PackageManifest{pm(t, "a/1", "op.v1.0.0", "r.io/op:v1.0.0", "v1.0.0"), pm(t, "b/1", "op.v1.0.0", "r.io/op:v1.0.0-b", "1.0.0")}
		}, []string{"b/1:8: error: version 1.0.0 of op is also declared in a/1", "AlreadyAdd", RuleDuplicateVersion}},
		{"duplicate tag", func(t *testing.T) []*manifest.PackageManifest {
			return []*manifest.PackageManifest{pm(t, "a/1", "op.v1.0.0", "r.io/op:latest", "v1.0.0"), pm(t, "a/2", "op.v1.1.0", "r.io/op:latest", "v1.1.0")}
		}, []string{"a/2:7: error: bundle tag latest of op names the ArtifactVersion op.latest, as bundle tag latest of a/1 does", RuleDuplicateTag}},
		{"tags naming one ArtifactVersion", func(t *testing.T) []*manifest.PackageManifest {
			return []*manifest.PackageManifest{pm(t, "a/1", "op.v0.9.6", "r.io/op:V0_9_6", "v0.9.6"), pm(t, "a/2", "op.v0.9.7", "r.io/op:v0-9-6", "v0.9.7")}
		}, []string{"a/2:7: error: bundle tag v0-9-6 of op names the ArtifactVersion op.v0-9-6, as bundle tag V0_9_6 of a/1 does", RuleDuplicateTag}},
		{"two repositories", func(t *testing.T) []*manifest.PackageManifest {
			return []*manifest.PackageManifest{pm(t, "a/1", "op.v1.0.0", "r.io/op:v1.0.0", "v1.0.0"), pm(t, "a/2", "op.v1.1.0", "r.io:5000/other/op:v1.1.0", "v1.1.0")}
		}, []string{"a/2:7: error: bundle repository r.io:5000/other/op differs from r.io/op", RuleOneRepository}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Errors(Repo(tc.ms(t)))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no finding")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

func TestRepository(t *testing.T) {
	for in, want := range map[string]string{
		"r.io:5000/a/b:v1":                              "r.io:5000/a/b",
		"r.io/a/b@sha256:" + strings.Repeat("a", 64):    "r.io/a/b",
		"r.io/a/b:v1@sha256:" + strings.Repeat("a", 64): "r.io/a/b",
		"r.io:5000/a/b":                                 "r.io:5000/a/b",
	} {
		if got := Repository(in); got != want {
			t.Errorf("%s: got %s want %s", in, got, want)
		}
	}
}
