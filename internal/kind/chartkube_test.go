package kind_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestChartKindKubeVersion: a chart whose Chart.yaml kubeVersion
// (>=1.30.0-0) excludes one of two clusters is a chart/kube-version
// error on that cluster only, at the manifest's spec.artifact line,
// naming the cluster and its version; the templates see each cluster's
// own version as .Capabilities.KubeVersion (an image tag made of it); and
// a cluster without a version renders for the fixed one with nothing
// checked.
func TestChartKindKubeVersion(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	testenv.PushChart(t, host+"/charts/kv:1.0.0", testenv.ChartArchive(t, map[string]string{
		"kv/Chart.yaml": "apiVersion: v2\nname: kv\nversion: 1.0.0\nkubeVersion: \">=1.30.0-0\"\n",
		"kv/templates/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kv\nspec:\n  containers:\n  - name: kv\n" +
			"    image: registry.example.com/kv/agent:k8s-{{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }}\n",
	}), nil)
	mc, err := mirror.New(mirror.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{"east": "v1.31.2", "west": "1.29", "north": ""}
	want := map[string]string{"east": "registry.example.com/kv/agent:k8s-1.31", "west": "registry.example.com/kv/agent:k8s-1.29", "north": "registry.example.com/kv/agent:k8s-1.33"}
	for _, cluster := range []string{"east", "west", "north"} {
		m, f := chartPM(t, "kv", "1.0.0", "oci://"+host+"/charts/kv:1.0.0", want[cluster])
		vs := model.NewVersions([]*manifest.PackageManifest{m})
		env := kind.Env{Client: mc, Cluster: cluster, KubeVersion: versions[cluster]}
		if err := kind.NewCache().Read(context.Background(), env, vs); err != nil {
			t.Fatal(err)
		}
		c := kind.ChartOf(vs[0])
		if c == nil || !reflect.DeepEqual(c.Images, []string{want[cluster]}) {
			t.Fatalf("%s: chart %+v, want image %s", cluster, c, want[cluster])
		}
		in := lint.Input{Files: []manifest.File{f}}
		kind.Lint(&in, env, vs)
		var got []string
		for _, x := range lint.Run(context.Background(), lint.Config{}, in) {
			if strings.HasPrefix(x.Rule, "chart/") {
				got = append(got, x.String())
			}
		}
		switch cluster {
		case "west":
			if len(got) != 1 || !strings.Contains(got[0], "packages/kv/1.0.0/manifest.yaml:7") || !strings.Contains(got[0], "chart/kube-version") ||
				!strings.Contains(got[0], `needs kubeVersion ">=1.30.0-0" (Chart.yaml), which excludes Kubernetes v1.29 of cluster west (publish.yaml clusters.west.kubernetesVersion)`) {
				t.Errorf("west (Kubernetes 1.29): findings %q, want one chart/kube-version naming the cluster", got)
			}
		default:
			if len(got) != 0 {
				t.Errorf("%s: findings %q, want none", cluster, got)
			}
		}
	}
}
