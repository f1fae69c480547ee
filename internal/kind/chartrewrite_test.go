package kind

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestRewriteChartImages: the image references of a chart's values
// (a plain reference, a registry/repository/tag block, a repository/tag
// block, a digest in a subchart's values, the helm.sh/images annotation)
// are rewritten to their destination and the chart packaged again with
// the Helm SDK as <version>+mirror.<id>; rendered by the Helm SDK's
// engine with its own values, every image is at the destination; a word
// and an image outside the mapping are left alone; the same input gives
// the same archive; a chart whose values name no image gives nil.
func TestRewriteChartImages(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tmpl := func(name, img string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n  selector: {matchLabels: {app: " + name + "}}\n  template:\n    metadata: {labels: {app: " + name + "}}\n    spec:\n      containers:\n      - name: c\n        image: " + img + "\n"
	}
	archive := testenv.ChartArchive(t, map[string]string{
		"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.2.3\nannotations:\n  helm.sh/images: |\n    - name: web\n      image: registry.example.com/src/web/nginx:1\n" +
			"dependencies:\n- name: db\n  version: 0.1.0\n",
		"app/values.yaml": "# the web server\nimage: registry.example.com/src/web/nginx:1\nsidecar:\n  image:\n    registry: registry.example.com\n    repository: src/web/proxy\n    tag: \"2\"\n" +
			"worker:\n  image:\n    repository: busybox\n    tag: \"1.36\"\nname: nginx\nother: quay.io/unrelated/app:1\n",
		"app/templates/web.yaml":          tmpl("web", "{{ .Values.image }}"),
		"app/templates/sidecar.yaml":      tmpl("sidecar", "{{ .Values.sidecar.image.registry }}/{{ .Values.sidecar.image.repository }}:{{ .Values.sidecar.image.tag }}"),
		"app/templates/worker.yaml":       tmpl("worker", "{{ .Values.worker.image.repository }}:{{ .Values.worker.image.tag }}"),
		"app/templates/other.yaml":        tmpl("other", "{{ .Values.other }}-{{ .Values.name }}"),
		"app/charts/db/Chart.yaml":        "apiVersion: v2\nname: db\nversion: 0.1.0\n",
		"app/charts/db/values.yaml":       "image: registry.example.com/src/db/pg@" + digest + "\n",
		"app/charts/db/templates/db.yaml": tmpl("db", "{{ .Values.image }}"),
	})
	repos := map[string]string{}
	for src, dst := range map[string]string{
		"registry.example.com/src/web/nginx": "mirror.example.com:5000/team/src/web/nginx",
		"registry.example.com/src/web/proxy": "mirror.example.com:5000/team/src/web/proxy",
		"busybox":                            "mirror.example.com:5000/team/library/busybox",
		"registry.example.com/src/db/pg":     "mirror.example.com:5000/team/src/db/pg",
	} {
		r, err := name.NewRepository(src)
		if err != nil {
			t.Fatal(err)
		}
		repos[r.Name()] = dst
	}
	rc, err := RewriteChartImages("app", archive, repos)
	if err != nil || rc == nil {
		t.Fatalf("rewrite: %+v, %v", rc, err)
	}
	if !strings.HasPrefix(rc.Version, "1.2.3+mirror.") || len(rc.Version) != len("1.2.3+mirror.")+12 || rc.Rewrites != 4 {
		t.Errorf("version %q, %d rewrites; want 1.2.3+mirror.<12 hex>, 4", rc.Version, rc.Rewrites)
	}
	if ChartTag(rc.Version) != strings.ReplaceAll(rc.Version, "+", "_") {
		t.Error("ChartTag")
	}
	c, err := loadChart("app", rc.Archive)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != rc.Version || !strings.Contains(c.Metadata.Annotations["helm.sh/images"], "mirror.example.com:5000/team/src/web/nginx:1") {
		t.Errorf("Chart.yaml: version %q, annotations %v", c.Metadata.Version, c.Metadata.Annotations)
	}
	r, err := renderChart(rc.Archive, "app", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mirror.example.com:5000/team/library/busybox:1.36",
		"mirror.example.com:5000/team/src/db/pg@" + digest,
		"mirror.example.com:5000/team/src/web/nginx:1",
		"mirror.example.com:5000/team/src/web/proxy:2",
		"quay.io/unrelated/app:1-nginx",
	}
	if strings.Join(r.images, " ") != strings.Join(want, " ") {
		t.Errorf("rendered images\n%v\nwant\n%v", r.images, want)
	}
	again, err := RewriteChartImages("app", archive, repos)
	if err != nil || again.Version != rc.Version || !bytes.Equal(again.Archive, rc.Archive) {
		t.Errorf("a second rewrite differs: %v", err)
	}
	if rc, err := RewriteChartImages("app", archive, map[string]string{"quay.io/other/x": "y/x"}); rc != nil || err != nil {
		t.Errorf("nothing to rewrite: %+v, %v", rc, err)
	}
}
