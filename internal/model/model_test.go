package model

import (
	"errors"
	"reflect"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-publish/publish/internal/manifest"
)

// images is a Content that deploys its images (internal/kind holds the
// real kinds; model cannot import it).
type images []string

func (c images) Images() []string               { return c }
func (images) ImagesFrom() string               { return "the test" }
func (images) Info() (displayName, desc string) { return "", "" }

func pm(t *testing.T, artifact, version string, related ...string) *manifest.PackageManifest {
	t.Helper()
	m := &manifest.PackageManifest{Artifact: artifact, Path: "packages/" + artifact + "/" + version + "/manifest.yaml", Lines: map[string]int{"spec.artifact": 7}}
	m.Spec.Artifact = "quay.io/x/" + artifact + "-bundle:v" + version
	m.Spec.RelatedImages = related
	m.Version = semver.MustParse(version)
	return m
}

// TestVersion: the images of a version are its relatedImages, then the
// images its content deploys, each once; a read error clears the content;
// versions group by artifact in order.
func TestVersion(t *testing.T) {
	vs := NewVersions([]*manifest.PackageManifest{
		pm(t, "a", "1.0.0", "r/one:1", "r/one:1"),
		pm(t, "b", "1.0.0"),
		pm(t, "a", "1.1.0", "r/two:1"),
	})
	if !reflect.DeepEqual(vs[0].Images, []string{"r/one:1"}) {
		t.Errorf("images before the bundle: %v", vs[0].Images)
	}
	if vs[0].Read() || vs[0].Kind() != manifest.TypeBundle {
		t.Errorf("a new version: read %v, kind %q", vs[0].Read(), vs[0].Kind())
	}
	vs[0].ReadErr = errors.New("stale")
	vs[0].SetContent(images{"r/op:1", "r/one:1"})
	if !reflect.DeepEqual(vs[0].Images, []string{"r/one:1", "r/op:1"}) || vs[0].ReadErr != nil || !vs[0].Read() {
		t.Errorf("images after the content: %v (err %v)", vs[0].Images, vs[0].ReadErr)
	}
	vs[0].SetReadErr(errors.New("gone"))
	if !reflect.DeepEqual(vs[0].Images, []string{"r/one:1"}) || vs[0].Content != nil || !vs[0].Read() {
		t.Errorf("images after a read error: %v (content %v)", vs[0].Images, vs[0].Content)
	}
	if k := vs[2].Key(); k != (Key{"a", "1.1.0"}) {
		t.Errorf("key %v", k)
	}
	if w := vs[1].Where(); w != "packages/b/1.0.0/manifest.yaml:7" {
		t.Errorf("where %q", w)
	}
	g := Group(vs)
	if len(g) != 2 || g[0].Name != "a" || len(g[0].Versions) != 2 || g[0].Versions[1] != vs[2] || g[1].Name != "b" {
		t.Errorf("group: %+v", g)
	}
	vs[1].Changed = true
	if c := ChangedVersions(vs); len(c) != 1 || c[0] != vs[1] {
		t.Errorf("changed: %v", c)
	}
	if Input(nil) != nil {
		t.Error("Input(nil) is not nil")
	}
	var ie *InputError
	if !errors.As(Input(errors.New("x")), &ie) {
		t.Error("Input does not make an *InputError")
	}
}
