package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// mapFunc is a Mapper from a function.
type mapFunc func(string) (string, string, error)

func (f mapFunc) MapRepository(src string) (string, string, error) { return f(src) }

func parseManifest(t *testing.T, path, artifact, version string, related ...string) *manifest.PackageManifest {
	t.Helper()
	doc := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: " + artifact + ".v" + version +
		"\nspec:\n  type: bundle\n  artifact: src.example.com/team/" + artifact + "-bundle:v" + version + "\n  version: v" + version + "\n  arch: [linux/amd64]\n"
	if len(related) > 0 {
		doc += "  relatedImages:\n"
		for _, r := range related {
			doc += "  - " + r + "\n"
		}
	}
	m, err := manifest.Parse(path, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestArtifactsMapper: Artifacts needs only the mapping of a bundle
// reference to its destination registry and repository, takes the
// version's images once (relatedImages and the CSV's), and names the
// manifest line of a reference the mapper rejects. Without a destination
// registry the registry is UnmappedRegistry.
func TestArtifactsMapper(t *testing.T) {
	vs := model.NewVersions([]*manifest.PackageManifest{
		parseManifest(t, "packages/a/1.0.0/manifest.yaml", "a", "1.0.0", "src.example.com/team/op:1"),
		parseManifest(t, "packages/a/1.1.0/manifest.yaml", "a", "1.1.0", "src.example.com/team/op:2"),
		parseManifest(t, "packages/b/1.0.0/manifest.yaml", "b", "1.0.0"),
	})
	vs[1].SetContent(kind.BundleContent(&bundle.Bundle{Images: []string{"src.example.com/team/op:2", "src.example.com/team/extra:2"}, DisplayName: "A from the CSV"}))
	rep := &mirror.Report{Images: []mirror.Result{
		{Source: "src.example.com/team/op:2", Destination: "dst/op:2", Digest: "sha256:1"},
		{Source: "src.example.com/team/extra:2", Destination: "dst/extra:2", Digest: "sha256:2"},
		{Source: vs[1].Ref(), Destination: "dst/a-bundle:v1.1.0", Digest: "sha256:3"},
	}}
	var asked []string
	m := mapFunc(func(src string) (string, string, error) {
		asked = append(asked, src)
		return "dst.example.com", "mirror/" + strings.TrimPrefix(src, "src.example.com/"), nil
	})
	arts, err := Artifacts(m, vs, rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 2 || arts[0].Name != "a" || arts[0].Registry != "dst.example.com" || arts[0].Repository != "mirror/team/a-bundle:v1.0.0" || len(arts[0].Versions) != 2 {
		t.Fatalf("artifacts: %+v", arts)
	}
	if len(asked) != 3 {
		t.Errorf("mapper asked %v, want each version's bundle", asked)
	}
	v := arts[0].Versions[1]
	if v.BundleDigest != "sha256:3" || len(v.Images) != 2 || v.Images[0].Source != "src.example.com/team/extra:2" || arts[0].DisplayName != "A from the CSV" {
		t.Errorf("version 1.1.0: %+v (%q)", v, arts[0].DisplayName)
	}

	bad := mapFunc(func(string) (string, string, error) { return "", "", errors.New("no") })
	if _, err := Artifacts(bad, vs, nil); err == nil || !strings.HasPrefix(err.Error(), "packages/a/1.0.0/manifest.yaml:") {
		t.Errorf("rejected reference: %v, want the manifest line", err)
	}

	arts, err = Artifacts(DestinationOf(nil), vs, nil)
	if err != nil || arts[1].Registry != UnmappedRegistry || arts[1].Repository != "team/b-bundle" {
		t.Errorf("unmapped: %+v %v", arts, err)
	}
}

// chartKind is a kind of package made for TestArtifactsOfAnotherKind: every
// artifact deploys the image nginx:1 of its registry.
type chartKind struct{}

func (chartKind) Name() string                               { return "fakechart" }
func (chartKind) Key(_ kind.Env, v *model.Version) string    { return v.Ref() }
func (chartKind) Lint(*lint.Input, kind.Env, *model.Version) {}
func (chartKind) Read(_ context.Context, _ kind.Env, vs []*model.Version) error {
	for _, v := range vs {
		v.SetContent(chartContent{})
	}
	return nil
}

type chartContent struct{}

func (chartContent) Images() []string       { return []string{"src.example.com/nginx:1"} }
func (chartContent) ImagesFrom() string     { return "the chart's templates" }
func (chartContent) Info() (string, string) { return "Web", "A web server" }

// TestArtifactsOfAnotherKind: a kind of package registered beside the
// bundles is read (readVersions), mirrored (mirrorTargets, namedBy),
// recorded (Artifacts) and verified (verifyTargets) by the stages as they
// are: they ask the version's content, never for a bundle.
func TestArtifactsOfAnotherKind(t *testing.T) {
	defer kind.Register(chartKind{})()
	m := parseManifest(t, "packages/web/2.0.0/manifest.yaml", "web", "2.0.0", "src.example.com/sidecar:1")
	m.Spec.Type = "fakechart"
	vs := model.NewVersions([]*manifest.PackageManifest{m})
	vs[0].Changed = true
	if err := readVersions(context.Background(), kind.Env{}, vs); err != nil {
		t.Fatal(err)
	}
	related, artifacts := mirrorTargets(vs, nil)
	if len(related) != 2 || related[1].Ref != "src.example.com/nginx:1" || len(artifacts) != 1 || artifacts[0].Ref != m.Spec.Artifact {
		t.Errorf("mirror targets %v, %v", related, artifacts)
	}
	if w := namedBy(vs)["src.example.com/nginx:1"]; len(w) != 1 || !strings.HasSuffix(w[0], "(deployed by the chart's templates)") {
		t.Errorf("named by %v", w)
	}
	rep := &mirror.Report{Images: []mirror.Result{{Source: "src.example.com/nginx:1", Destination: "dst/nginx:1", Digest: "sha256:1"}}}
	arts, err := Artifacts(DestinationOf(nil), vs, rep)
	if err != nil || len(arts) != 1 || arts[0].DisplayName != "Web" || arts[0].Description != "A web server" || len(arts[0].Versions[0].Images) != 1 {
		t.Errorf("records %+v, %v", arts, err)
	}
	vt := verifyTargets(vs)
	if len(vt) != 3 || vt[0].what != "fakechart" || vt[2].what != "image the chart's templates deploys" {
		t.Errorf("verify targets %+v", vt)
	}
}
