package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	semver "github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/bundle"
)

// CorpusDirEnv is the environment variable that, when set, names the corpus
// directory and takes precedence over the default location.
const CorpusDirEnv = "PUBLISH_CORPUS_DIR"

// corpusParallelism bounds the concurrent bundle preparations and pushes.
const corpusParallelism = 8

// CorpusDir returns the directory of the shared test corpus and whether it
// exists. The environment variable PUBLISH_CORPUS_DIR is honoured first;
// otherwise $PUBLISH_SHARED_DIR/corpus when that is set, else
// <module root>/../shared/corpus, the module root
// being found by walking up from the working directory (and, failing that,
// from this source file) to the go.mod of this module.
func CorpusDir() (string, bool) {
	if d := os.Getenv(CorpusDirEnv); d != "" {
		return d, corpusIsDir(d)
	}
	if d := os.Getenv("PUBLISH_SHARED_DIR"); d != "" {
		d = filepath.Join(d, "corpus")
		return d, corpusIsDir(d)
	}
	root, ok := corpusModuleRoot()
	if !ok {
		return "", false
	}
	d := filepath.Clean(filepath.Join(root, "..", "shared", "corpus"))
	return d, corpusIsDir(d)
}

func corpusIsDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// corpusModuleRoot finds the directory holding this module's go.mod.
func corpusModuleRoot() (string, bool) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for {
			data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err == nil && bytes.Contains(data, []byte("module github.com/operator-publish/publish")) {
				return dir, true
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", false
}

// Corpus is the result of BuildCorpus: one entry per bundle of the corpus
// that was built and pushed, sorted by package then version.
type Corpus struct {
	Packages []CorpusPackage
}

// CorpusPackage describes one bundle of the corpus as published by
// BuildCorpus.
type CorpusPackage struct {
	// Package is the OLM package name (annotations.yaml package.v1, or
	// packageName of the package-manifest format's package.yaml).
	Package string
	// Version is the CSV spec.version, without a leading "v".
	Version string
	// BundleRef is <srcHost>/bundles/<Package>:v<Version>.
	BundleRef string
	// BundleDigest is the digest of the bundle image pushed to BundleRef.
	BundleDigest string
	// RelatedImages are the stand-in references (on srcHost) that replaced
	// the CSV's image references, sorted and unique.
	RelatedImages []string
	// ManifestPath is the written <packagesRoot>/<Package>/<Version>/manifest.yaml.
	ManifestPath string
	// Dir is the bundle directory in the corpus this entry was built from.
	Dir string
}

// BundleError is a failure to build or publish one bundle of the corpus.
type BundleError struct {
	// Dir is the bundle directory in the corpus.
	Dir string
	Err error
}

func (e *BundleError) Error() string { return fmt.Sprintf("corpus bundle %s: %v", e.Dir, e.Err) }

// Unwrap returns the underlying error.
func (e *BundleError) Unwrap() error { return e.Err }

// DuplicateBundleError reports bundles of the corpus that have the same
// package and CSV version; none of them is built.
type DuplicateBundleError struct {
	Package, Version string
	// Dirs are the bundle directories in the corpus, sorted.
	Dirs []string
}

func (e *DuplicateBundleError) Error() string {
	return fmt.Sprintf("corpus: package %s version %s is defined by several bundles: %s",
		e.Package, e.Version, strings.Join(e.Dirs, ", "))
}

// CorpusBundleDirs lists the bundle directories of the corpus, sorted: every
// corpusDir/community-operators/<package>/<version>/ holding a manifests/
// directory (bundle format) and every corpusDir/packagemanifests/<package>/<version>/
// directory next to a *package.yaml (package-manifest format).
func CorpusBundleDirs(corpusDir string) ([]string, error) {
	bs, err := corpusFindBundles(corpusDir)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(bs))
	for i, b := range bs {
		dirs[i] = b.dir
	}
	return dirs, nil
}

// BuildCorpus publishes every bundle of the corpus at corpusDir (see
// CorpusBundleDirs for the two layouts) to the registry srcHost and writes a
// PackageManifest for each under packagesRoot.
//
// For each bundle it loads the CSV with operator-framework/api and collects
// the images it references (deployment containers and initContainers, their
// RELATED_IMAGE_* env values, spec.relatedImages and the containerImage
// annotation). Each unique image is replaced by a small deterministic
// linux/amd64 stand-in image pushed to srcHost/<original repository path> with
// the original tag (latest when the original had none); the CSV is rewritten
// (in a copy) to srcHost/<path>:<tag>, or srcHost/<path>@<stand-in digest>
// when the original was pinned by digest. The rewritten bundle is built with
// bundle.Build and pushed to srcHost/bundles/<package>:v<version>, and
// packagesRoot/<package>/<version>/manifest.yaml is written.
//
// The CSV rewrite replaces whole references only (a reference is not
// replaced inside a longer one). Originals that map to the same
// srcHost/<path>:<tag> (same path on two hosts, or several digests that all
// get tag latest) get the tag deterministically: a tag-only original first,
// else the smallest reference; other digest-pinned ones are pushed by digest
// only.
//
// Everything is deterministic: rerunning gives the same digests. opts are
// passed to every registry call (auth, transport); plain HTTP is allowed.
//
// Failing bundles do not stop the others: the returned error joins one
// *BundleError per failing bundle and one *DuplicateBundleError per group of
// bundles sharing a package and version (those are all left out), and the
// returned Corpus (never nil) holds the bundles that succeeded.
func BuildCorpus(ctx context.Context, corpusDir, srcHost string, packagesRoot string, opts ...remote.Option) (*Corpus, error) {
	result := &Corpus{}
	if srcHost == "" || strings.Contains(srcHost, "/") {
		return result, fmt.Errorf("BuildCorpus: srcHost %q must be a registry host[:port]", srcHost)
	}
	if _, err := name.NewRegistry(srcHost, name.Insecure); err != nil {
		return result, fmt.Errorf("BuildCorpus: srcHost: %w", err)
	}
	if packagesRoot == "" {
		return result, errors.New("BuildCorpus: empty packagesRoot")
	}
	bundles, err := corpusFindBundles(corpusDir)
	if err != nil {
		return result, err
	}
	if len(bundles) == 0 {
		return result, fmt.Errorf("BuildCorpus: no bundle found in %s", corpusDir)
	}
	work, err := os.MkdirTemp("", "publish-corpus-")
	if err != nil {
		return result, err
	}
	defer os.RemoveAll(work)
	ropts := append(append([]remote.Option{}, opts...), remote.WithContext(ctx))

	// 1. Copy (converting package manifests) and load every bundle.
	corpusParallel(len(bundles), func(i int) {
		b := bundles[i]
		b.work = filepath.Join(work, fmt.Sprintf("%03d", i))
		if err := b.prepare(); err != nil {
			b.err = err
		}
	})

	// 2. Duplicate package versions: the corpus has real ones (two
	// directories whose CSVs both say 0.4.0). The directory name is the
	// version a package repo would carry, so a bundle whose directory names
	// another valid version takes that one (its CSV then disagrees, which
	// lint reports); duplicates that remain are left out with an error.
	var errs []error
	byPV := map[[2]string][]*corpusBundle{}
	for _, b := range bundles {
		if b.err == nil {
			k := [2]string{b.pkg, b.version}
			byPV[k] = append(byPV[k], b)
		}
	}
	for k, group := range byPV {
		if len(group) < 2 {
			continue
		}
		delete(byPV, k)
		for _, b := range group {
			v := b.version
			if dv, err := semver.Parse(strings.TrimPrefix(filepath.Base(b.dir), "v")); err == nil && dv.String() != b.version {
				v = dv.String()
			}
			b.version = v
			nk := [2]string{b.pkg, v}
			byPV[nk] = append(byPV[nk], b)
		}
	}
	for k, group := range byPV {
		if len(group) < 2 {
			continue
		}
		dup := &DuplicateBundleError{Package: k[0], Version: k[1]}
		for _, b := range group {
			dup.Dirs = append(dup.Dirs, b.dir)
			b.skip = true
		}
		sort.Strings(dup.Dirs)
		errs = append(errs, dup)
	}

	// 3. Stand-in images, pushed once each.
	standIns := map[string]*corpusStandIn{}
	for _, b := range bundles {
		if b.err != nil || b.skip {
			continue
		}
		for _, orig := range b.images {
			if _, ok := standIns[orig]; ok {
				continue
			}
			s, err := newCorpusStandIn(orig, srcHost)
			if err != nil {
				s = &corpusStandIn{orig: orig, err: err}
			}
			standIns[orig] = s
		}
	}
	corpusPushStandIns(ctx, standIns, ropts)

	// 4. Rewrite, build and push the bundles, write the package manifests.
	corpusParallel(len(bundles), func(i int) {
		b := bundles[i]
		if b.err != nil || b.skip {
			return
		}
		if err := ctx.Err(); err != nil {
			b.err = err
			return
		}
		b.err = b.publish(srcHost, packagesRoot, standIns, ropts)
	})

	for _, b := range bundles {
		if b.skip {
			continue
		}
		if b.err != nil {
			errs = append(errs, &BundleError{Dir: b.dir, Err: b.err})
			continue
		}
		result.Packages = append(result.Packages, b.result)
	}
	sort.Slice(result.Packages, func(i, j int) bool {
		a, c := result.Packages[i], result.Packages[j]
		if a.Package != c.Package {
			return a.Package < c.Package
		}
		if a.Version != c.Version {
			return corpusVersionLess(a.Version, c.Version)
		}
		return a.Dir < c.Dir
	})
	sort.SliceStable(errs, func(i, j int) bool { return corpusErrKey(errs[i]) < corpusErrKey(errs[j]) })
	return result, errors.Join(errs...)
}

// corpusBundle is one bundle of the corpus being processed.
type corpusBundle struct {
	dir     string // bundle directory in the corpus
	pkgFile string // package.yaml of the package-manifest format, "" for bundle format
	work    string // temporary bundle directory (copy, rewritten)

	pkg, version string
	csvFiles     []string // CSV files in work/manifests
	images       []string // original image references, sorted, unique

	skip   bool // left out (duplicate package version)
	err    error
	result CorpusPackage
}

// corpusFindBundles lists the bundles of both layouts, sorted by directory.
func corpusFindBundles(corpusDir string) ([]*corpusBundle, error) {
	var out []*corpusBundle
	subdirs := func(dir string) ([]string, error) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		var ds []string
		for _, e := range ents {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				ds = append(ds, filepath.Join(dir, e.Name()))
			}
		}
		return ds, nil
	}
	found := false
	// Bundle format.
	if co := filepath.Join(corpusDir, "community-operators"); corpusIsDir(co) {
		found = true
		pkgs, err := subdirs(co)
		if err != nil {
			return nil, err
		}
		for _, p := range pkgs {
			vers, err := subdirs(p)
			if err != nil {
				return nil, err
			}
			for _, v := range vers {
				if corpusIsDir(filepath.Join(v, "manifests")) {
					out = append(out, &corpusBundle{dir: v})
				}
			}
		}
	}
	// Package-manifest format.
	if pm := filepath.Join(corpusDir, "packagemanifests"); corpusIsDir(pm) {
		found = true
		pkgs, err := subdirs(pm)
		if err != nil {
			return nil, err
		}
		for _, p := range pkgs {
			ents, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			pkgFile := ""
			for _, e := range ents {
				if !e.IsDir() && strings.HasSuffix(e.Name(), "package.yaml") {
					if pkgFile != "" {
						return nil, fmt.Errorf("corpus package %s: several package.yaml files", p)
					}
					pkgFile = filepath.Join(p, e.Name())
				}
			}
			if pkgFile == "" {
				return nil, fmt.Errorf("corpus package %s: no <package>.package.yaml", p)
			}
			vers, err := subdirs(p)
			if err != nil {
				return nil, err
			}
			for _, v := range vers {
				out = append(out, &corpusBundle{dir: v, pkgFile: pkgFile})
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("corpus %s: neither community-operators/ nor packagemanifests/ found", corpusDir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out, nil
}

// prepare copies the bundle to b.work (converting the package-manifest
// format to the bundle format), loads it and collects its images.
func (b *corpusBundle) prepare() error {
	manDir := filepath.Join(b.work, "manifests")
	if b.pkgFile == "" {
		if err := corpusCopyTree(filepath.Join(b.dir, "manifests"), manDir); err != nil {
			return err
		}
		if md := filepath.Join(b.dir, "metadata"); corpusIsDir(md) {
			if err := corpusCopyTree(md, filepath.Join(b.work, "metadata")); err != nil {
				return err
			}
		}
	} else {
		// Only the version directory's files: they are the bundle manifests.
		if err := corpusCopyTree(b.dir, manDir); err != nil {
			return err
		}
	}

	candidates, err := corpusCSVFiles(manDir)
	if err != nil {
		return err
	}
	var csv *v1alpha1.ClusterServiceVersion
	var names []string
	for _, f := range candidates {
		c, err := corpusLoadCSV(f)
		if err != nil {
			return err
		}
		if c == nil {
			continue // not a CSV after all
		}
		csv = c
		b.csvFiles = append(b.csvFiles, f)
		rel, _ := filepath.Rel(b.work, f)
		names = append(names, rel)
	}
	switch len(b.csvFiles) {
	case 0:
		return errors.New("no ClusterServiceVersion in manifests/")
	case 1:
	default:
		return fmt.Errorf("several ClusterServiceVersions: %s", strings.Join(names, ", "))
	}
	b.version = csv.Spec.Version.String()

	if b.pkgFile == "" {
		ann, err := os.ReadFile(filepath.Join(b.work, "metadata", "annotations.yaml"))
		if err != nil {
			return err
		}
		var af manifests.AnnotationsFile
		if err := yaml.Unmarshal(ann, &af); err != nil {
			return fmt.Errorf("metadata/annotations.yaml: %w", err)
		}
		if b.pkg = af.Annotations.PackageName; b.pkg == "" {
			return errors.New("metadata/annotations.yaml has no operators.operatorframework.io.bundle.package.v1")
		}
	} else if err := b.writeAnnotations(csv.Name); err != nil {
		return err
	}
	b.images = corpusCSVImages(csv)
	return nil
}

// corpusLoadCSV decodes the CSV file p (its first YAML or JSON document)
// into the operator-framework type; spec.version is required. It returns nil
// if the document is not a ClusterServiceVersion.
func corpusLoadCSV(p string) (*v1alpha1.ClusterServiceVersion, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var raw json.RawMessage
	if err := utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	var csv v1alpha1.ClusterServiceVersion
	if err := json.Unmarshal(raw, &csv); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	if csv.Kind != v1alpha1.ClusterServiceVersionKind {
		return nil, nil
	}
	var probe struct {
		Spec struct {
			Version *string `json:"version"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil || probe.Spec.Version == nil || *probe.Spec.Version == "" {
		return nil, fmt.Errorf("%s: CSV %s has no spec.version", filepath.Base(p), csv.Name)
	}
	return &csv, nil
}

// writeAnnotations writes metadata/annotations.yaml for a bundle converted
// from the package-manifest format whose CSV is named csvName.
func (b *corpusBundle) writeAnnotations(csvName string) error {
	data, err := os.ReadFile(b.pkgFile)
	if err != nil {
		return err
	}
	var pf manifests.PackageManifest
	if err := yaml.Unmarshal(data, &pf); err != nil {
		return fmt.Errorf("%s: %w", b.pkgFile, err)
	}
	if pf.PackageName == "" {
		return fmt.Errorf("%s: no packageName", b.pkgFile)
	}
	if len(pf.Channels) == 0 {
		return fmt.Errorf("%s: no channels", b.pkgFile)
	}
	b.pkg = pf.PackageName
	var current, all []string
	for _, c := range pf.Channels {
		all = append(all, c.Name)
		if c.CurrentCSVName == csvName {
			current = append(current, c.Name)
		}
	}
	channels := current
	if len(channels) == 0 {
		channels = all
	}
	ann := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
		"operators.operatorframework.io.bundle.package.v1":   pf.PackageName,
		"operators.operatorframework.io.bundle.channels.v1":  strings.Join(channels, ","),
	}
	def := pf.DefaultChannelName
	if def == "" && len(pf.Channels) == 1 {
		// A package with a single channel has it as implicit default.
		def = pf.Channels[0].Name
	}
	if def != "" {
		ann["operators.operatorframework.io.bundle.channel.default.v1"] = def
	}
	out, err := yaml.Marshal(map[string]interface{}{"annotations": ann})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(b.work, "metadata"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.work, "metadata", "annotations.yaml"), out, 0o644)
}

// corpusCSVKind matches the top-level kind line of a CSV in YAML or JSON.
var corpusCSVKind = regexp.MustCompile(`(?m)^kind:\s*["']?ClusterServiceVersion["']?\s*(#.*)?$|"kind"\s*:\s*"ClusterServiceVersion"`)

// corpusCSVFiles returns the files under dir that may hold a CSV: those with
// a top-level "kind: ClusterServiceVersion" (decoding every large CRD would
// be slow). corpusLoadCSV confirms them.
func corpusCSVFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if corpusCSVKind.Match(data) {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// corpusCSVImages returns the image references a CSV uses, sorted and
// unique: the image of every container and init container of the install
// strategy's deployments, the values of their RELATED_IMAGE_* environment
// variables, spec.relatedImages[].image and the containerImage annotation.
// Empty values are skipped; values are trimmed of surrounding space.
func corpusCSVImages(csv *v1alpha1.ClusterServiceVersion) []string {
	set := map[string]bool{}
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			set[s] = true
		}
	}
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		pod := d.Spec.Template.Spec
		for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
			for _, c := range cs {
				add(c.Image)
				for _, e := range c.Env {
					if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
						add(e.Value)
					}
				}
			}
		}
	}
	for _, ri := range csv.Spec.RelatedImages {
		add(ri.Image)
	}
	add(csv.GetAnnotations()["containerImage"])
	return corpusSortedKeys(set)
}

func corpusSortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// corpusStandIn is the stand-in image of one original image reference.
type corpusStandIn struct {
	orig   string
	path   string // repository path on srcHost
	tag    string
	pinned bool // the original was pinned by digest
	img    v1.Image
	digest v1.Hash
	ref    string // the stand-in reference written into CSVs
	err    error
}

func newCorpusStandIn(orig, srcHost string) (*corpusStandIn, error) {
	path, tag, pinned, err := corpusParseImageRef(orig)
	if err != nil {
		return nil, err
	}
	if _, err := name.NewTag(srcHost+"/"+path+":"+tag, name.Insecure, name.StrictValidation); err != nil {
		return nil, fmt.Errorf("image %q: stand-in name: %w", orig, err)
	}
	img, err := corpusStandInImage(orig)
	if err != nil {
		return nil, err
	}
	dg, err := img.Digest()
	if err != nil {
		return nil, err
	}
	s := &corpusStandIn{orig: orig, path: path, tag: tag, pinned: pinned, img: img, digest: dg}
	if pinned {
		s.ref = srcHost + "/" + path + "@" + dg.String()
	} else {
		s.ref = srcHost + "/" + path + ":" + tag
	}
	return s, nil
}

// corpusParseImageRef splits an image reference into the repository path
// (without registry host; lowercase and valid for distribution; docker.io
// short names under library/), the tag (latest if none) and whether it is
// pinned by a valid digest. A malformed digest ("repo@") is ignored.
func corpusParseImageRef(ref string) (path, tag string, pinned bool, err error) {
	s := ref
	for _, scheme := range []string{"docker://", "oci://"} {
		s = strings.TrimPrefix(s, scheme)
	}
	if s == "" || strings.ContainsAny(s, " \t\r\n\"'`$") {
		return "", "", false, fmt.Errorf("image %q: not an image reference", ref)
	}
	if i := strings.IndexByte(s, '@'); i >= 0 {
		if _, err := v1.NewHash(s[i+1:]); err == nil {
			pinned = true
		}
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		tag = s[i+1:]
		s = s[:i]
	}
	parts := strings.Split(s, "/")
	host := "docker.io"
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		host = strings.ToLower(parts[0])
		parts = parts[1:]
	}
	var clean []string
	for _, p := range parts {
		if c := corpusCleanComponent(p); c != "" {
			clean = append(clean, c)
		}
	}
	if len(clean) == 0 {
		return "", "", false, fmt.Errorf("image %q: no repository path", ref)
	}
	switch host {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		if len(clean) == 1 {
			clean = append([]string{"library"}, clean...)
		}
	}
	if tag = corpusCleanTag(tag); tag == "" {
		tag = "latest"
	}
	return strings.Join(clean, "/"), tag, pinned, nil
}

// corpusCleanComponent makes p a valid lowercase distribution path component
// ([a-z0-9]+ joined by ".", "_", "__" or runs of "-"), mapping anything else
// to "-".
func corpusCleanComponent(p string) string {
	p = strings.ToLower(p)
	var b strings.Builder
	var sep []byte
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if len(sep) > 0 && b.Len() > 0 {
				s := string(sep)
				if s != "." && s != "_" && s != "__" && strings.Trim(s, "-") != "" {
					s = "-"
				}
				b.WriteString(s)
			}
			sep = sep[:0]
			b.WriteByte(c)
		} else {
			sep = append(sep, c)
		}
	}
	return b.String()
}

// corpusCleanTag makes t a valid tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}),
// mapping invalid characters to "_"; "" stays "".
func corpusCleanTag(t string) string {
	b := []byte(t)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
		if i > 0 && (c == '.' || c == '-') {
			ok = true
		}
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

// corpusStandInImage is a tiny deterministic linux/amd64 image whose only
// layer holds the original reference in /stand-in/original-reference.
func corpusStandInImage(orig string) (v1.Image, error) {
	content := []byte(orig + "\n")
	return bundle.LayerImage(map[string][]byte{"stand-in/original-reference": content},
		map[string]string{"io.github.operator-publish.testenv.original-reference": orig})
}

// corpusPushStandIns pushes every stand-in once. Several originals may map to
// the same srcHost/<path>:<tag> (different hosts, or digests pushed under the
// same tag); the tag then goes, deterministically, to the first of them in
// (tag-only before digest-pinned, then by reference) order, the other pinned
// ones are pushed by digest only, and the other tag-only ones share the tag.
func corpusPushStandIns(ctx context.Context, standIns map[string]*corpusStandIn, ropts []remote.Option) {
	groups := map[string][]*corpusStandIn{}
	for _, s := range standIns {
		if s.err == nil {
			k := s.path + ":" + s.tag
			groups[k] = append(groups[k], s)
		}
	}
	type job struct {
		s   *corpusStandIn
		ref name.Reference
	}
	var jobs []job
	sharing := map[*corpusStandIn]*corpusStandIn{}
	for _, g := range groups {
		sort.Slice(g, func(i, j int) bool {
			if g[i].pinned != g[j].pinned {
				return !g[i].pinned
			}
			return g[i].orig < g[j].orig
		})
		winner := g[0]
		host := strings.SplitN(winner.ref, "/", 2)[0]
		for _, s := range g {
			var ref name.Reference
			var err error
			switch {
			case s == winner:
				ref, err = name.NewTag(host+"/"+s.path+":"+s.tag, name.Insecure)
			case s.pinned:
				ref, err = name.NewDigest(host+"/"+s.path+"@"+s.digest.String(), name.Insecure)
			default:
				sharing[s] = winner
				continue
			}
			if err != nil {
				s.err = err
				continue
			}
			jobs = append(jobs, job{s, ref})
		}
	}
	corpusParallel(len(jobs), func(i int) {
		j := jobs[i]
		if err := ctx.Err(); err != nil {
			j.s.err = err
			return
		}
		if err := remote.Write(j.ref, j.s.img, ropts...); err != nil {
			j.s.err = fmt.Errorf("pushing stand-in %s for %q: %w", j.ref, j.s.orig, err)
		}
	})
	for s, w := range sharing {
		s.err = w.err
	}
}

// publish rewrites the CSV copy, builds and pushes the bundle image and
// writes the package manifest.
func (b *corpusBundle) publish(srcHost, packagesRoot string, standIns map[string]*corpusStandIn, ropts []remote.Option) error {
	repl := map[string]string{}
	related := map[string]bool{}
	for _, orig := range b.images {
		s := standIns[orig]
		if s.err != nil {
			return fmt.Errorf("stand-in for image %q: %w", orig, s.err)
		}
		repl[orig] = s.ref
		related[s.ref] = true
	}
	found := map[string]bool{}
	for _, f := range b.csvFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		out, hits := corpusReplaceRefs(data, repl)
		for k := range hits {
			found[k] = true
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			return err
		}
	}
	for _, orig := range b.images {
		if !found[orig] {
			return fmt.Errorf("image %q: not found verbatim in the CSV, cannot rewrite it", orig)
		}
	}

	img, err := bundle.Build(b.work)
	if err != nil {
		return err
	}
	bundleRef := srcHost + "/bundles/" + b.pkg + ":" + corpusCleanTag("v"+b.version)
	ref, err := name.NewTag(bundleRef, name.Insecure)
	if err != nil {
		return fmt.Errorf("bundle reference: %w", err)
	}
	if err := remote.Write(ref, img, ropts...); err != nil {
		return fmt.Errorf("pushing bundle %s: %w", bundleRef, err)
	}
	dg, err := img.Digest()
	if err != nil {
		return err
	}

	csvData, err := os.ReadFile(b.csvFiles[0])
	if err != nil {
		return err
	}
	var csv v1alpha1.ClusterServiceVersion
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(csvData), 4096).Decode(&csv); err != nil {
		return fmt.Errorf("rewritten CSV: %w", err)
	}
	relatedList := corpusSortedKeys(related)
	pm := corpusPackageManifest{APIVersion: "app.alauda.cn/v1beta1", Kind: "PackageManifest"}
	pm.Metadata.Name = b.pkg + ".v" + b.version
	pm.Spec = corpusPackageManifestSpec{
		Type:          "bundle",
		Artifact:      bundleRef,
		Version:       "v" + b.version,
		Arch:          []string{"linux/amd64"},
		RelatedImages: relatedList,
	}
	info := &pm.Spec.Info
	info.DisplayName = csv.Spec.DisplayName
	if info.DisplayName == "" {
		info.DisplayName = b.pkg
	}
	if len(csv.Spec.Icon) > 0 {
		info.Icon = csv.Spec.Icon[0].Data
	}
	for _, k := range csv.Spec.Keywords {
		if k != "" {
			info.Keywords = append(info.Keywords, k)
		}
	}
	for _, l := range csv.Spec.Links {
		info.Links = append(info.Links, corpusLink{Name: l.Name, URL: l.URL})
	}
	out, err := yaml.Marshal(pm)
	if err != nil {
		return err
	}
	dir := filepath.Join(packagesRoot, b.pkg, b.version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	manifestPath := filepath.Join(dir, "manifest.yaml")
	if err := os.WriteFile(manifestPath, out, 0o644); err != nil {
		return err
	}
	b.result = CorpusPackage{
		Package:       b.pkg,
		Version:       b.version,
		BundleRef:     bundleRef,
		BundleDigest:  dg.String(),
		RelatedImages: relatedList,
		ManifestPath:  manifestPath,
		Dir:           b.dir,
	}
	return nil
}

// corpusPackageManifest is the PackageManifest file BuildCorpus writes.
type corpusPackageManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec corpusPackageManifestSpec `json:"spec"`
}

type corpusPackageManifestSpec struct {
	Type          string            `json:"type"`
	Artifact      string            `json:"artifact"`
	Version       string            `json:"version"`
	Arch          []string          `json:"arch"`
	Info          corpusPackageInfo `json:"info"`
	RelatedImages []string          `json:"relatedImages"`
}

type corpusPackageInfo struct {
	DisplayName string       `json:"displayName"`
	Icon        string       `json:"icon,omitempty"`
	Keywords    []string     `json:"keywords,omitempty"`
	Links       []corpusLink `json:"links,omitempty"`
}

type corpusLink struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// corpusIsRefChar reports whether c can be part of an image reference.
func corpusIsRefChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '/' || c == ':' || c == '@'
}

// corpusReplaceRefs replaces, in one pass, every whole occurrence of a key of
// repl in data by its value. An occurrence is whole when it is neither
// preceded nor followed by a character that can continue a reference (a
// trailing "." followed by a non-reference character, as at the end of a
// sentence, still ends it), so "quay.io/a/b" is not replaced inside
// "quay.io/a/b-c:v1" or "x/quay.io/a/b"; at a position the longest key wins.
// It returns the new data and the keys that were found.
func corpusReplaceRefs(data []byte, repl map[string]string) ([]byte, map[string]bool) {
	keys := make([]string, 0, len(repl))
	for k := range repl {
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
	hits := map[string]bool{}
	var out bytes.Buffer
	i := 0
	for i < len(data) {
		if i > 0 && corpusIsRefChar(data[i-1]) {
			out.WriteByte(data[i])
			i++
			continue
		}
		matched := ""
		for _, k := range keys {
			if !bytes.HasPrefix(data[i:], []byte(k)) {
				continue
			}
			j := i + len(k)
			if j < len(data) && corpusIsRefChar(data[j]) &&
				!(data[j] == '.' && (j+1 == len(data) || !corpusIsRefChar(data[j+1]))) {
				continue
			}
			matched = k
			break
		}
		if matched == "" {
			out.WriteByte(data[i])
			i++
			continue
		}
		hits[matched] = true
		out.WriteString(repl[matched])
		i += len(matched)
	}
	return out.Bytes(), hits
}

// corpusCopyTree copies the regular files under src to dst.
func corpusCopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// corpusParallel runs f(0..n-1) with at most corpusParallelism at a time.
func corpusParallel(n int, f func(i int)) {
	sem := make(chan struct{}, corpusParallelism)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

// corpusVersionLess orders semantic versions, falling back to strings.
func corpusVersionLess(a, b string) bool {
	va, errA := semver.Parse(a)
	vb, errB := semver.Parse(b)
	if errA == nil && errB == nil {
		if c := va.Compare(vb); c != 0 {
			return c < 0
		}
	}
	return a < b
}

func corpusErrKey(err error) string {
	var be *BundleError
	if errors.As(err, &be) {
		return be.Dir
	}
	var de *DuplicateBundleError
	if errors.As(err, &de) && len(de.Dirs) > 0 {
		return de.Dirs[0]
	}
	return err.Error()
}
