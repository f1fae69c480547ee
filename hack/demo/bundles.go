package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/bundle"
)

// exampleBundle is one example operator version and, once staged, where its
// images went.
type exampleBundle struct {
	Dir     string // examples/operators/<package>/<version>
	CSVPath string // path of the CSV below Dir
	Package string // operators.operatorframework.io.bundle.package.v1
	Version string // CSV spec.version, without a leading v

	DisplayName string
	Description string // the CSV's short description annotation
	Icon        string // base64 of the first CSV icon
	Keywords    []string
	Links       []v1alpha1.AppLink

	// Images is every image the CSV deploys: container images, then
	// RELATED_IMAGE_* values, then spec.relatedImages, each once.
	Images []string

	// Set by stage.
	StandIns  map[string]string // original reference -> stand-in reference
	BundleRef string            // bundle image in the source registry
}

// StandInImages returns the stand-in references in the order of Images.
func (b *exampleBundle) StandInImages() []string {
	out := make([]string, 0, len(b.Images))
	for _, img := range b.Images {
		out = append(out, b.StandIns[img])
	}
	return out
}

// findBundles returns the bundle directories below root
// (<root>/<package>/<version>, each with a manifests/ directory), sorted.
func findBundles(root string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(root, "*", "*", "manifests"))
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			dirs = append(dirs, filepath.Dir(m))
		}
	}
	sort.Strings(dirs)
	return dirs, nil
}

// loadExampleBundle reads the package name from metadata/annotations.yaml and
// the facts the demo needs from the CSV in manifests/.
func loadExampleBundle(dir string) (*exampleBundle, error) {
	b := &exampleBundle{Dir: dir}

	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	annPath := filepath.Join(dir, "metadata", "annotations.yaml")
	data, err := os.ReadFile(annPath)
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, &ann); err != nil {
		return nil, fmt.Errorf("%s: %w", annPath, err)
	}
	b.Package = ann.Annotations["operators.operatorframework.io.bundle.package.v1"]
	if b.Package == "" {
		return nil, fmt.Errorf("%s: no operators.operatorframework.io.bundle.package.v1 annotation", annPath)
	}

	csv, csvPath, err := readCSV(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, err
	}
	b.CSVPath = csvPath
	b.Version = csv.Spec.Version.String()
	b.DisplayName = csv.Spec.DisplayName
	b.Description = csv.Annotations["description"]
	if len(csv.Spec.Icon) > 0 {
		b.Icon = csv.Spec.Icon[0].Data
	}
	b.Keywords = csv.Spec.Keywords
	b.Links = csv.Spec.Links
	b.Images = csvImages(csv)
	if len(b.Images) == 0 {
		return nil, fmt.Errorf("%s: the CSV deploys no image", csvPath)
	}
	return b, nil
}

// readCSV finds the one ClusterServiceVersion in a manifests/ directory.
func readCSV(manifests string) (*v1alpha1.ClusterServiceVersion, string, error) {
	entries, err := os.ReadDir(manifests)
	if err != nil {
		return nil, "", err
	}
	var found *v1alpha1.ClusterServiceVersion
	var foundPath string
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		p := filepath.Join(manifests, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &meta); err != nil {
			return nil, "", fmt.Errorf("%s: %w", p, err)
		}
		if meta.Kind != v1alpha1.ClusterServiceVersionKind {
			continue
		}
		if found != nil {
			return nil, "", fmt.Errorf("%s: more than one ClusterServiceVersion (%s, %s)", manifests, filepath.Base(foundPath), e.Name())
		}
		found = &v1alpha1.ClusterServiceVersion{}
		if err := yaml.Unmarshal(data, found); err != nil {
			return nil, "", fmt.Errorf("%s: %w", p, err)
		}
		foundPath = p
	}
	if found == nil {
		return nil, "", fmt.Errorf("%s: no ClusterServiceVersion", manifests)
	}
	return found, foundPath, nil
}

// csvImages lists every image a CSV deploys or declares: init and regular
// container images of the install deployments, RELATED_IMAGE_* environment
// values, and spec.relatedImages; each once, in that order.
func csvImages(csv *v1alpha1.ClusterServiceVersion) []string {
	var out []string
	seen := map[string]bool{}
	add := func(ref string) {
		if ref != "" && !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	var envImages []string
	env := func(name, value string) {
		if strings.HasPrefix(name, "RELATED_IMAGE_") && value != "" {
			envImages = append(envImages, value)
		}
	}
	for _, dep := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		pod := dep.Spec.Template.Spec
		for _, c := range pod.InitContainers {
			add(c.Image)
			for _, e := range c.Env {
				env(e.Name, e.Value)
			}
		}
		for _, c := range pod.Containers {
			add(c.Image)
			for _, e := range c.Env {
				env(e.Name, e.Value)
			}
		}
	}
	for _, ref := range envImages {
		add(ref)
	}
	for _, ri := range csv.Spec.RelatedImages {
		add(ri.Image)
	}
	return out
}

// standInRef maps an image reference to the same repository path and tag in
// the registry at host: quay.io/example/a:v1 -> HOST/example/a:v1.
func standInRef(host, ref string) (string, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("image %q: the demo needs a reference with a tag: %w", ref, err)
	}
	return fmt.Sprintf("%s/%s:%s", host, tag.RepositoryStr(), tag.TagStr()), nil
}

// bundleRef is where the bundle of package at version goes in the registry
// at host.
func bundleRef(host, pkg, version string) string {
	return fmt.Sprintf("%s/example/%s-bundle:v%s", host, pkg, version)
}

// stageBundles is step 2: load every example, push its stand-in images and
// its rewritten bundle to the source registry.
func (d *demo) stageBundles(ctx context.Context) error {
	dirs, err := findBundles(d.examples)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return fmt.Errorf("no bundles under %s (expected <package>/<version>/manifests)", d.examples)
	}
	pushed := map[string]string{} // stand-in ref -> digest, to push shared images once
	for _, dir := range dirs {
		b, err := loadExampleBundle(dir)
		if err != nil {
			return err
		}
		if err := d.stage(ctx, b, pushed); err != nil {
			return fmt.Errorf("%s %s: %w", b.Package, b.Version, err)
		}
		d.bundles = append(d.bundles, b)
	}
	return nil
}

// stage pushes the stand-ins of b, writes a copy of the bundle with the CSV
// pointing at them below $WORK/bundles, builds it with bundle.Build and
// pushes it.
func (d *demo) stage(ctx context.Context, b *exampleBundle, pushed map[string]string) error {
	fmt.Fprintf(d.out, "%s %s\n", b.Package, b.Version)
	b.StandIns = map[string]string{}
	for _, img := range b.Images {
		si, err := standInRef(d.src.Host, img)
		if err != nil {
			return err
		}
		b.StandIns[img] = si
		digest, ok := pushed[si]
		if !ok {
			image, err := standInImage(img)
			if err != nil {
				return err
			}
			if digest, err = push(ctx, si, image); err != nil {
				return err
			}
			pushed[si] = digest
		}
		fmt.Fprintf(d.out, "  image   %-42s -> %s  %s\n", img, si, short(digest))
	}

	copyDir := filepath.Join(d.work, "bundles", b.Package, b.Version)
	if err := copyTree(b.Dir, copyDir); err != nil {
		return err
	}
	rel, err := filepath.Rel(b.Dir, b.CSVPath)
	if err != nil {
		return err
	}
	csvCopy := filepath.Join(copyDir, rel)
	if err := rewriteImages(csvCopy, b.StandIns); err != nil {
		return err
	}
	img, err := bundle.Build(copyDir)
	if err != nil {
		return err
	}
	b.BundleRef = bundleRef(d.src.Host, b.Package, b.Version)
	digest, err := push(ctx, b.BundleRef, img)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  bundle  %-42s -> %s  %s\n", d.display(copyDir), b.BundleRef, short(digest))
	return nil
}

// rewriteImages replaces every original reference in the file with its
// stand-in (longest references first, so no reference is cut short by a
// shorter one it starts with), then checks that no original is left.
func rewriteImages(path string, standIns map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	origs := make([]string, 0, len(standIns))
	for o := range standIns {
		origs = append(origs, o)
	}
	sort.Slice(origs, func(i, j int) bool {
		if len(origs[i]) != len(origs[j]) {
			return len(origs[i]) > len(origs[j])
		}
		return origs[i] < origs[j]
	})
	pairs := make([]string, 0, 2*len(origs))
	for _, o := range origs {
		pairs = append(pairs, o, standIns[o])
	}
	out := strings.NewReplacer(pairs...).Replace(string(data))

	var csv v1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal([]byte(out), &csv); err != nil {
		return fmt.Errorf("%s after rewriting images: %w", path, err)
	}
	for _, img := range csvImages(&csv) {
		if _, isOriginal := standIns[img]; isOriginal {
			return fmt.Errorf("%s: image %s was not rewritten", path, img)
		}
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// standInImage makes a tiny linux/amd64 OCI image standing in for ref: one
// layer with a text file naming ref. The same ref always gives the same
// digest.
func standInImage(ref string) (v1.Image, error) {
	content := []byte(fmt.Sprintf("Stand-in for %s, pushed by the publish demo (hack/demo).\n", ref))
	return bundle.LayerImage(map[string][]byte{"demo/stand-in.txt": content},
		map[string]string{"org.opencontainers.image.description": "stand-in for " + ref})
}

// push writes img to ref over plain HTTP and returns its digest.
func push(ctx context.Context, ref string, img v1.Image) (string, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return digest.String(), nil
}

// short abbreviates a digest for display.
func short(digest string) string {
	if i := strings.IndexByte(digest, ':'); i >= 0 && len(digest) > i+13 {
		return digest[:i+13]
	}
	return digest
}

// copyTree copies the regular files below src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(target, 0o755)
		case e.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
		return nil
	})
}
