package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Catalog repo layout (docs/design.md#catalog-layout). GeneratedDir holds
// one kustomize base per cluster (GeneratedBase), since the objects differ
// per cluster (namespace, library, registry, the artifacts it gets).
const (
	GeneratedDir = "publish/generated"
	RenderedDir  = "rendered"
	ClustersDir  = "kustomize/clusters"
)

// GeneratedBase is the generated kustomize base of cluster:
// publish/generated/<cluster>, which its overlay
// (kustomize/clusters/<cluster>) names as ../../../publish/generated/<cluster>.
func GeneratedBase(cluster string) string { return GeneratedDir + "/" + cluster }

// GeneratedKustomization is the kustomization of the generated base of
// cluster, which lists every object file of GeneratedBase(cluster).
func GeneratedKustomization(cluster string) string {
	return GeneratedBase(cluster) + "/kustomization.yaml"
}

// Files maps slash-separated paths relative to the catalog root to content.
type Files map[string][]byte

// Generated returns the kustomize base of cluster under
// publish/generated/<cluster> (GeneratedBase): one file per object
// (<artifact>/<kind>_<name>.yaml) and a kustomization.yaml listing them in
// order.
func Generated(cluster string, cfg Config, arts []model.ArtifactRecord) (Files, error) {
	base := GeneratedBase(cluster)
	files := Files{}
	var resources []string
	for _, a := range arts {
		if a.Type == manifest.TypeChart && a.Present && cfg.ChartGitURL == "" && cfg.ChartRepo.URL == "" {
			return nil, fmt.Errorf("chart %s: its ChartRepo (type Git) needs the catalog repo's URL as the cluster clones it: set clusters.%s.chartGitURL in publish.yaml", a.Name, cluster)
		}
	}
	for _, obj := range ClusterObjects(cluster, cfg, arts) {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		md := obj["metadata"].(Object)
		art := ArtifactOf(obj)
		rel := path.Join(art, fileName(obj["kind"].(string), md["name"].(string)))
		if _, dup := files[path.Join(base, rel)]; dup {
			return nil, fmt.Errorf("two objects would be written to %s: two versions of %s have the same tag", rel, art)
		}
		files[path.Join(base, rel)] = data
		resources = append(resources, rel)
	}
	data, err := generatedKustomization(resources)
	if err != nil {
		return nil, err
	}
	files[GeneratedKustomization(cluster)] = data
	return files, nil
}

// generatedKustomization is the file GeneratedKustomization holding
// resources, in order.
func generatedKustomization(resources []string) ([]byte, error) {
	if resources == nil {
		resources = []string{}
	}
	k := Object{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  resources,
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Written by publish: do not edit. Customise in kustomize/clusters/<cluster>/.\n"), data...), nil
}

// SpliceGenerated returns the GeneratedKustomization of the whole catalog
// when only some artifacts were generated again: old is the file the last
// publish wrote, gen what Generated returned for the artifacts that
// changed (their records merged). The resources of those artifacts are
// replaced by gen's, the others kept; the result is byte for byte what
// Generated writes for every artifact, since it lists artifacts in name
// order and each artifact's files together. Errors: old does not parse or
// is not in that order (a hand edit: the caller renders everything).
func SpliceGenerated(cluster string, old []byte, gen Files) ([]byte, error) {
	kp := GeneratedKustomization(cluster)
	oldHead, oldRes, err := kustomizationResources(kp, old)
	if err != nil {
		return nil, err
	}
	_, newRes, err := kustomizationResources(kp, gen[kp])
	if err != nil {
		return nil, err
	}
	oldOrder, oldBy, err := groupResources(kp, oldRes)
	if err != nil {
		return nil, err
	}
	newOrder, newBy, err := groupResources(kp, newRes)
	if err != nil {
		return nil, err
	}
	for _, a := range newOrder {
		if oldBy[a] == nil {
			oldOrder = append(oldOrder, a)
		}
		oldBy[a] = newBy[a]
	}
	sort.Strings(oldOrder)
	var b bytes.Buffer
	b.Grow(len(old) + 4096)
	b.Write(oldHead)
	n := 0
	for _, a := range oldOrder {
		for _, r := range oldBy[a] {
			if n == 0 {
				b.WriteString("resources:\n")
			}
			n++
			b.WriteString("- ")
			b.WriteString(r)
			b.WriteByte('\n')
		}
	}
	if n == 0 {
		return generatedKustomization(nil)
	}
	return b.Bytes(), nil
}

// plainResource is a resource path YAML writes without quotes.
var plainResource = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*\.yaml$`)

// kustomizationResources splits a GeneratedKustomization as
// generatedKustomization writes it: the lines before its resources, and
// the resources, which end the file.
func kustomizationResources(kp string, data []byte) (head []byte, resources []string, err error) {
	bad := fmt.Errorf("%s is not in the form publish writes", kp)
	if i := bytes.Index(data, []byte("\nresources: []\n")); i >= 0 && i+len("\nresources: []\n") == len(data) {
		return data[:i+1], nil, nil
	}
	i := bytes.Index(data, []byte("\nresources:\n"))
	if i < 0 {
		return nil, nil, bad
	}
	head = data[:i+1]
	for _, l := range bytes.SplitAfter(data[i+len("\nresources:\n"):], []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		r, ok := bytes.CutPrefix(l, []byte("- "))
		r, nl := bytes.CutSuffix(r, []byte("\n"))
		if !ok || !nl || !plainResource.Match(r) {
			return nil, nil, bad
		}
		resources = append(resources, string(r))
	}
	return head, resources, nil
}

// groupResources groups resources by artifact directory, checking that
// the directories come in name order, each once.
func groupResources(kp string, rs []string) ([]string, map[string][]string, error) {
	var order []string
	by := map[string][]string{}
	for _, r := range rs {
		art, _, _ := strings.Cut(r, "/")
		if by[art] == nil {
			if n := len(order); n > 0 && order[n-1] >= art {
				return nil, nil, fmt.Errorf("%s: resources not in the order publish writes", kp)
			}
			order = append(order, art)
		}
		by[art] = append(by[art], r)
	}
	return order, by, nil
}

// ArtifactOf returns the artifact an object belongs to: the
// cpaas.io/artifact-version label of an ArtifactVersion, the selector of an
// Artifact, else its name, the name of a ChartRepo (its chart) (all
// survive overlays that move objects); "" for any other object (it
// belongs to the cluster). obj is the object as YAML decodes it.
func ArtifactOf(obj Object) string {
	md, _ := obj["metadata"].(Object)
	if labels, ok := md["labels"].(Object); ok {
		if s, ok := labels[LabelArtifactVersion].(string); ok && obj["kind"] == "ArtifactVersion" {
			return s
		}
	}
	if n, ok := md["name"].(string); ok && obj["kind"] == ChartRepoKind {
		return n
	}
	if spec, ok := obj["spec"].(Object); ok && obj["kind"] == "Artifact" {
		if sel, ok := spec["artifactVersionSelector"].(Object); ok {
			if ml, ok := sel["matchLabels"].(Object); ok {
				if s, ok := ml[LabelArtifactVersion].(string); ok {
					return s
				}
			}
		}
		if n, ok := md["name"].(string); ok {
			return n
		}
	}
	return ""
}

// OverlayError says that a cluster overlay is missing or does not build. It
// is an input error: the user owns kustomize/clusters/.
type OverlayError struct {
	Cluster string
	Err     error
}

func (e *OverlayError) Error() string {
	return fmt.Sprintf("cluster overlay %s/%s: %v", ClustersDir, e.Cluster, e.Err)
}
func (e *OverlayError) Unwrap() error { return e.Err }

// Build runs kustomize (krusty, in process) on kustomize/clusters/<cluster>
// of the catalog cat (in memory: render.Files) and returns the rendered files:
// rendered/<cluster>/<artifact>/<kind>_<name>.yaml, one object per file;
// objects that belong to no artifact (added by the overlay) go to
// rendered/<cluster>/_cluster/. The overlay normally has
// ../../../publish/generated/<cluster> among its resources.
//
// Errors are *OverlayError: a missing overlay, a kustomize failure, two
// objects with the same file name.
func Build(cat Files, cluster string) (Files, error) {
	return BuildOnly(cat, cluster, nil)
}

// BuildOnly is Build restricted to the artifacts in only (nil: all): the
// objects of other artifacts are neither read nor rendered. Objects the
// overlay adds by itself are rendered either way.
func BuildOnly(cat Files, cluster string, only map[string]bool) (Files, error) {
	if err := CheckOverlay(cat, cluster); err != nil {
		return nil, err
	}
	// kustomize checks every new resource against all earlier ones (its
	// resource map appends in linear time), so one build of N objects costs
	// N². The generated base is built in chunks of artifacts instead, each
	// through the same overlay, in an in-memory file system holding the
	// catalog: the cost grows linearly. Overlays transform objects one by
	// one (labels, patches, prefixes, namespaces), which chunking does not
	// change; what an overlay adds besides them comes out of every chunk
	// identically.
	mem, groups, err := loadCatalog(cat, cluster, only)
	if err != nil {
		return nil, &OverlayError{Cluster: cluster, Err: err}
	}
	files := Files{}
	for start := 0; start < len(groups) || start == 0; start += chunkArtifacts {
		end := min(start+chunkArtifacts, len(groups))
		var resources []string
		for _, g := range groups[start:end] {
			resources = append(resources, g.files...)
		}
		if err := writeChunkKustomization(mem, cluster, resources); err != nil {
			return nil, &OverlayError{Cluster: cluster, Err: err}
		}
		if err := buildChunk(mem, cluster, files); err != nil {
			return nil, err
		}
		if len(groups) == 0 {
			break
		}
	}
	return files, nil
}

// chunkArtifacts is how many artifacts one kustomize build renders.
const chunkArtifacts = 20

// memRoot is where the catalog sits in the in-memory file system.
const memRoot = "/catalog"

type artifactFiles struct {
	name  string
	files []string // relative to publish/generated/<cluster>
}

// loadCatalog puts the catalog cat into kustomize's in-memory file system,
// except rendered/ and the generated bases of other clusters, and refuses
// any kustomization in it that names a remote resource (CheckNoRemote),
// and any builtin plugin configuration that names a file by URL
// (CheckNoRemotePlugin): kustomize would fetch them, even from memory;
// the files of cluster's generated base are returned grouped by artifact
// directory (and also put there).
func loadCatalog(cat Files, cluster string, only map[string]bool) (filesys.FileSystem, []artifactFiles, error) {
	mem := filesys.MakeFsInMemory()
	byArtifact := map[string]*artifactFiles{}
	genPrefix := GeneratedBase(cluster) + "/"
	for _, rel := range cat.walkOrder() {
		data := cat[rel]
		top, _, _ := strings.Cut(rel, "/")
		if top == ".git" || top == RenderedDir {
			continue
		}
		if d, ok := strings.CutPrefix(rel, GeneratedDir+"/"); ok {
			if dir, _, nested := strings.Cut(d, "/"); nested && dir != cluster {
				continue // another cluster's base
			}
		}
		if KustomizationNames[path.Base(rel)] {
			if err := CheckNoRemote(rel, data); err != nil {
				return nil, nil, err
			}
		} else if err := CheckNoRemotePlugin(rel, data); err != nil {
			return nil, nil, err
		}
		if g, ok := strings.CutPrefix(rel, genPrefix); ok {
			dir, _, nested := strings.Cut(g, "/")
			if !nested {
				continue // the base's kustomization.yaml: replaced per chunk
			}
			if only != nil && !only[dir] {
				continue
			}
			if byArtifact[dir] == nil {
				byArtifact[dir] = &artifactFiles{name: dir}
			}
			byArtifact[dir].files = append(byArtifact[dir].files, g)
		}
		if err := mem.MkdirAll(path.Dir(path.Join(memRoot, rel))); err != nil {
			return nil, nil, err
		}
		if err := mem.WriteFile(path.Join(memRoot, rel), data); err != nil {
			return nil, nil, err
		}
	}
	groups := make([]artifactFiles, 0, len(byArtifact))
	for _, g := range byArtifact {
		sort.Strings(g.files)
		groups = append(groups, *g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].name < groups[j].name })
	return mem, groups, nil
}

func writeChunkKustomization(mem filesys.FileSystem, cluster string, resources []string) error {
	if resources == nil {
		resources = []string{}
	}
	data, err := yaml.Marshal(Object{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources})
	if err != nil {
		return err
	}
	if err := mem.MkdirAll(path.Join(memRoot, GeneratedBase(cluster))); err != nil {
		return err
	}
	return mem.WriteFile(path.Join(memRoot, GeneratedKustomization(cluster)), data)
}

// buildChunk runs the overlay once and adds its objects to files; an
// object the overlay adds by itself comes out of every chunk: identical
// copies are fine, different ones are an error.
func buildChunk(mem filesys.FileSystem, cluster string, files Files) error {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(mem, path.Join(memRoot, ClustersDir, cluster))
	if err != nil {
		// Name files as the user sees them in the catalog repo.
		msg := strings.ReplaceAll(err.Error(), memRoot+"/", "")
		return &OverlayError{Cluster: cluster, Err: fmt.Errorf("kustomize build: %s", msg)}
	}
	seen := map[string]bool{}
	for _, res := range rm.Resources() {
		p, err := renderedPath(cluster, res)
		if err != nil {
			return &OverlayError{Cluster: cluster, Err: err}
		}
		data, err := res.AsYAML()
		if err != nil {
			return &OverlayError{Cluster: cluster, Err: err}
		}
		if err := lint.CheckObjectSize(p, data); err != nil {
			return &OverlayError{Cluster: cluster, Err: err}
		}
		if seen[p] {
			return &OverlayError{Cluster: cluster, Err: fmt.Errorf("two objects render to %s", p)}
		}
		seen[p] = true
		if old, dup := files[p]; dup && !bytes.Equal(old, data) {
			return &OverlayError{Cluster: cluster, Err: fmt.Errorf("two different objects render to %s", p)}
		}
		files[p] = data
	}
	return nil
}

// CheckOverlay reports an *OverlayError when cluster is not a plain name,
// the catalog cat has no kustomize/clusters/<cluster>, or its kustomization
// names another cluster's generated base.
func CheckOverlay(cat Files, cluster string) error {
	if cluster == "" || strings.ContainsAny(cluster, `/\`) || cluster == "." || cluster == ".." {
		return &OverlayError{Cluster: cluster, Err: errors.New("cluster name must be a plain directory name")}
	}
	if !cat.HasDir(ClustersDir + "/" + cluster) {
		return &OverlayError{Cluster: cluster, Err: errors.New(MissingOverlayHelp(cluster))}
	}
	for _, k := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		p := path.Join(ClustersDir, cluster, k)
		data, ok := cat[p]
		if !ok {
			continue
		}
		for i, l := range strings.Split(string(data), "\n") {
			m := generatedRef.FindStringSubmatch(l)
			if m == nil || m[1] == cluster {
				continue
			}
			what := "the generated base of every cluster before bases per cluster"
			if m[1] != "" {
				what = "the generated base of cluster " + m[1]
			}
			return &OverlayError{Cluster: cluster, Err: fmt.Errorf("%s:%d names %s (%s): write ../../../%s", p, i+1, strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "-")), what, GeneratedBase(cluster))}
		}
	}
	return nil
}

// MissingOverlayHelp says how to create the overlay of a cluster the
// catalog has none for (a cluster new to a catalog others were published
// to: only a brand-new catalog's first publish seeds overlays): the file,
// the one resource it must name, and what to do next.
func MissingOverlayHelp(cluster string) string {
	return fmt.Sprintf("not found in the catalog repo (publish seeds overlays only in a brand-new catalog): "+
		"create %s/%s/kustomization.yaml holding\n  resources:\n  - ../../../%s\n"+
		"(plus the labels and patches the cluster needs), commit and push it to the catalog branch, and run again; or pass another --cluster",
		ClustersDir, cluster, GeneratedBase(cluster))
}

// generatedRef matches a resources entry of an overlay naming a generated
// base: ../../../publish/generated[/<cluster>] (group 1: the cluster, ""
// for the older shared base).
var generatedRef = regexp.MustCompile(`^\s*-\s*\.\./\.\./\.\./publish/generated(?:/([^/\s#]+))?/?\s*(?:#.*)?$`)

func renderedPath(cluster string, res *resource.Resource) (string, error) {
	m, err := res.Map()
	if err != nil {
		return "", err
	}
	obj := toObject(m)
	group := ArtifactOf(obj)
	if group == "" {
		group = "_cluster"
	}
	name := res.GetName()
	if ns := res.GetNamespace(); ns != "" && group == "_cluster" {
		name = ns + "." + name
	}
	if name == "" || strings.ContainsAny(name, `/\`) || strings.ContainsAny(group, `/\`) {
		return "", fmt.Errorf("object %s %q cannot name a file", res.GetKind(), name)
	}
	if group == "." || group == ".." {
		// The artifact names the directory of the file: rendered/<cluster>/<artifact>/.
		return "", fmt.Errorf("object %s %q: its artifact %q (label or selector %s) cannot name a directory of %s/%s", res.GetKind(), name, group, LabelArtifactVersion, RenderedDir, cluster)
	}
	return path.Join(RenderedDir, cluster, group, fileName(res.GetKind(), name)), nil
}

func toObject(m map[string]any) Object {
	out := Object{}
	for k, v := range m {
		if mm, ok := v.(map[string]any); ok {
			out[k] = toObject(mm)
		} else {
			out[k] = v
		}
	}
	return out
}

// Key identifies everything besides the artifacts that rendering depends
// on: every file of the catalog cat outside .git/, rendered/, publish/ and charts/ (the chart sources)
// (the overlays and whatever they reference), the cluster and cfg, hashed
// in the order a walk of a checkout visits them. When the key recorded at
// the last render is unchanged, only the artifacts whose generated objects
// changed need rendering again.
func Key(cat Files, cluster string, cfg Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "render-key/v1\x00%s\x00%s\x00%s\x00%s\x00", cluster, cfg.Namespace, cfg.Library, strings.Join(cfg.ImagePullSecrets, ","))
	for _, rel := range cat.walkOrder() {
		switch top, _, _ := strings.Cut(rel, "/"); top {
		case ".git", RenderedDir, "publish", ChartsDir: // charts/: the chart sources publish writes
			continue
		}
		data := cat[rel]
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ChangedArtifacts returns the artifacts whose files under
// publish/generated/<cluster> in gen differ from those of the catalog cat
// (added, changed or removed files).
func ChangedArtifacts(cat Files, cluster string, gen Files) map[string]bool {
	changed := map[string]bool{}
	prefix := GeneratedBase(cluster) + "/"
	for p, data := range gen {
		rest, ok := strings.CutPrefix(p, prefix)
		art, _, nested := strings.Cut(rest, "/")
		if !ok || !nested {
			continue
		}
		if old, ok := cat[p]; !ok || !bytes.Equal(old, data) {
			changed[art] = true
		}
	}
	for p := range cat {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		if _, ok := gen[p]; !ok {
			if art, _, nested := strings.Cut(rest, "/"); nested {
				changed[art] = true
			}
		}
	}
	return changed
}
