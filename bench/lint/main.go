// Command lintbench measures `publish lint` on 1,000 bundle versions (the
// corpus bundles, re-tagged) side by side with `opm render` of the same
// bundle images, in one run against one registry. See bench/lint/run.sh.
//
//	go run ./bench/lint -registry 127.0.0.1:PORT -publish bin/publish -opm /path/to/opm -n 1000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/testenv"
	"sigs.k8s.io/yaml"
)

func main() {
	reg := flag.String("registry", "", "plain-HTTP registry host:port (required)")
	publish := flag.String("publish", "bin/publish", "publish binary")
	opm := flag.String("opm", "", "opm binary (optional: without it only publish is timed)")
	n := flag.Int("n", 1000, "bundle versions to lint")
	flag.Parse()
	if *reg == "" {
		fmt.Fprintln(os.Stderr, "lintbench: -registry is required")
		os.Exit(2)
	}
	corpusDir, ok := testenv.CorpusDir()
	if !ok {
		fmt.Fprintln(os.Stderr, "lintbench: corpus not found (../shared/corpus or PUBLISH_CORPUS_DIR)")
		os.Exit(2)
	}
	work, err := os.MkdirTemp("", "lintbench-")
	check(err)
	defer os.RemoveAll(work)
	ctx := context.Background()
	c, err := testenv.BuildCorpus(ctx, corpusDir, *reg, filepath.Join(work, "seed"))
	if err != nil && len(c.Packages) == 0 {
		check(err)
	}
	// Re-tag the corpus bundles until there are n versions, each under an
	// artifact of its own so that no repo rule fires.
	var refs []string
	for i := 0; len(refs) < *n; i++ {
		p := c.Packages[i%len(c.Packages)]
		round := i / len(c.Packages)
		src, err := name.ParseReference(p.BundleRef)
		check(err)
		desc, err := remote.Get(src)
		check(err)
		tag := fmt.Sprintf("v%s-r%d", p.Version, round)
		dst := src.Context().Tag(tag)
		check(remote.Tag(dst, desc))
		refs = append(refs, dst.String())
		art := fmt.Sprintf("%s-r%d", p.Package, round)
		m := map[string]any{
			"apiVersion": "app.alauda.cn/v1beta1", "kind": "PackageManifest",
			"metadata": map[string]any{"name": art + ".v" + p.Version},
			"spec": map[string]any{"type": "bundle", "artifact": dst.String(), "version": "v" + p.Version,
				"arch": []string{"linux/amd64"}, "info": map[string]any{"displayName": p.Package}, "relatedImages": p.RelatedImages},
		}
		data, err := yaml.Marshal(m)
		check(err)
		dir := filepath.Join(work, "repo/packages", art, p.Version)
		check(os.MkdirAll(dir, 0o755))
		check(os.WriteFile(filepath.Join(dir, "manifest.yaml"), data, 0o644))
	}
	fmt.Printf("%d bundle versions at %s\n\n", len(refs), *reg)
	fmt.Println("| tool | what | wall time |")
	fmt.Println("|---|---|---|")
	t := time.Now()
	cmd := exec.Command(*publish, "lint", "--source", filepath.Join(work, "repo"), "--no-image-check", "--format", "json", "--plain-http")
	cmd.Stdout = nil
	_ = cmd.Run() // findings are expected: the corpus is real
	fmt.Printf("| publish lint | %d manifests + bundles, every rule and validator | %s |\n", len(refs), time.Since(t).Round(10*time.Millisecond))
	if *opm != "" {
		t = time.Now()
		// opm pulls with containers/image, which wants a signature policy:
		// accept anything, in a HOME of its own.
		home := filepath.Join(work, "opm-home")
		check(os.MkdirAll(filepath.Join(home, ".config/containers"), 0o755))
		check(os.WriteFile(filepath.Join(home, ".config/containers/policy.json"), []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o644))
		args := append([]string{"render", "--use-http", "-o", "json"}, refs...)
		opmCmd := exec.Command(*opm, args...)
		opmCmd.Env = append(os.Environ(), "HOME="+home)
		opmCmd.Dir = work
		out, err := opmCmd.CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "opm render: %v\n%s\n", err, tail(out))
		}
		fmt.Printf("| opm render | the same %d bundle images, no validation | %s |\n", len(refs), time.Since(t).Round(10*time.Millisecond))
	}
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "lintbench:", err)
		os.Exit(2)
	}
}
