// Command chartbench measures `publish lint` on 50 chart versions (the
// test charts of internal/pipeline/testdata/charts, renamed) side by side
// with `helm template` of the same charts run one by one, in one run
// against one registry. See bench/charts/run.sh.
//
//	go run ./bench/charts -registry 127.0.0.1:PORT -publish bin/publish -helm /path/to/helm -n 50
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	"sigs.k8s.io/yaml"
)

// shapes are the test charts and the images each renders with its own
// values (its spec.relatedImages), REGISTRY standing for the registry.
var shapes = map[string][]string{
	"shop":    {"REGISTRY/shop/web:1", "REGISTRY/shop/init:1"},
	"widgets": {"REGISTRY/widgets/controller:0.3"},
	"backup":  {"REGISTRY/backup/job:2", "REGISTRY/backup/restore:2"},
}

func main() {
	reg := flag.String("registry", "", "plain-HTTP registry host:port (required)")
	publish := flag.String("publish", "bin/publish", "publish binary")
	helm := flag.String("helm", "", "helm binary (optional: without it only publish is timed)")
	n := flag.Int("n", 50, "chart versions to lint")
	flag.Parse()
	if *reg == "" {
		fmt.Fprintln(os.Stderr, "chartbench: -registry is required")
		os.Exit(2)
	}
	work, err := os.MkdirTemp("", "chartbench-")
	check(err)
	defer os.RemoveAll(work)
	names := []string{"backup", "shop", "widgets"}
	var refs []string
	for i := 0; i < *n; i++ {
		shape := names[i%len(names)]
		chart := fmt.Sprintf("%s-%02d", shape, i)
		archive, err := pack(filepath.Join("internal/pipeline/testdata/charts", shape), shape, chart, fmt.Sprintf("1.0.%d", i), *reg)
		check(err)
		ref := fmt.Sprintf("%s/charts/%s:1.0.%d", *reg, chart, i)
		check(push(ref, archive))
		refs = append(refs, ref)
		var images []string
		for _, img := range shapes[shape] {
			images = append(images, strings.ReplaceAll(img, "REGISTRY", *reg))
		}
		m := map[string]any{
			"apiVersion": "app.alauda.cn/v1beta1", "kind": "PackageManifest",
			"metadata": map[string]any{"name": fmt.Sprintf("%s.v1.0.%d", chart, i)},
			"spec": map[string]any{"type": "chart", "artifact": "oci://" + ref, "version": fmt.Sprintf("1.0.%d", i),
				"info": map[string]any{"displayName": chart}, "relatedImages": images},
		}
		data, err := yaml.Marshal(m)
		check(err)
		dir := filepath.Join(work, "repo/packages", chart, fmt.Sprintf("1.0.%d", i))
		check(os.MkdirAll(dir, 0o755))
		check(os.WriteFile(filepath.Join(dir, "manifest.yaml"), data, 0o644))
	}
	fmt.Printf("%d chart versions at %s\n\n", len(refs), *reg)
	fmt.Println("| tool | what | wall time |")
	fmt.Println("|---|---|---|")
	t := time.Now()
	// --no-image-check: the images are discovered and compared with
	// spec.relatedImages, not looked up (helm template does neither).
	cmd := exec.Command(*publish, "lint", "--source", filepath.Join(work, "repo"), "--no-image-check", "--format", "json", "--plain-http")
	out, err := cmd.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chartbench: publish lint: %v\n%s\n", err, out)
		os.Exit(1)
	}
	fmt.Printf("| publish lint | %d manifests and charts: pull, Helm's checks, render, images, every rule (4 at a time) | %s |\n", len(refs), time.Since(t).Round(10*time.Millisecond))
	if *helm == "" {
		return
	}
	t = time.Now()
	for _, ref := range refs {
		repo, tag := ref[:strings.LastIndex(ref, ":")], ref[strings.LastIndex(ref, ":")+1:]
		cmd := exec.Command(*helm, "template", "oci://"+repo, "--version", tag, "--plain-http")
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(work, "helm-cache"), "HELM_CONFIG_HOME="+filepath.Join(work, "helm-config"))
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "chartbench: helm template %s: %v\n%s\n", ref, err, out)
			os.Exit(1)
		}
	}
	fmt.Printf("| helm template | the same %d charts, one by one: pull and render, no lint | %s |\n", len(refs), time.Since(t).Round(10*time.Millisecond))
}

// pack packs the chart directory dir (named shape) as `helm package`
// does, renamed chart at version, REGISTRY replaced by reg.
func pack(dir, shape, chart, version, reg string) ([]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		text := strings.ReplaceAll(string(data), "REGISTRY", reg)
		if rel == "Chart.yaml" {
			text = strings.Replace(text, "name: "+shape+"\n", "name: "+chart+"\n", 1)
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "version: ") {
					text = strings.Replace(text, line, "version: "+version, 1)
				}
			}
		}
		files[filepath.ToSlash(rel)] = []byte(text)
		return nil
	})
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, p := range paths {
		if err := tw.WriteHeader(&tar.Header{Name: chart + "/" + p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		tw.Write(files[p])
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// push pushes a chart archive to ref as `helm push` lays it out.
func push(ref string, archive []byte) error {
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(archive, helmregistry.ChartLayerMediaType)})
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), helmregistry.ConfigMediaType)
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	return remote.Write(r, img)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartbench:", err)
		os.Exit(1)
	}
}
