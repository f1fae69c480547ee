package olm

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/scratch"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/sirupsen/logrus"
)

// Catalog image facts, as `opm generate dockerfile` writes them for an
// upstream catalog image (operator-registry pkg/containertools/dockerfilegenerator.go).
const (
	// ConfigsLabel names the directory of the file-based catalog; OLM and
	// opm find the catalog through it.
	ConfigsLabel = "operators.operatorframework.io.index.configs.v1"
	// CacheDir is the serve cache, built at image build time (`opm serve
	// /configs --cache-dir=/tmp/cache --cache-only`) and checked at start.
	CacheDir = "/tmp/cache"
)

// Entrypoint and Cmd are the catalog image's entrypoint and command;
// CmdNoCache the command of a catalog image without a serve cache
// (DecideCache), with which opm builds the cache when it starts.
var (
	Entrypoint = []string{"/bin/opm"}
	Cmd        = []string{"serve", "/" + ConfigsDir, "--cache-dir=" + CacheDir}
	CmdNoCache = []string{"serve", "/" + ConfigsDir}
)

// epoch is the modification time of every file in the catalog layer and
// the creation time of its history entry: the same catalog gives the same
// layer digest.
var epoch = time.Unix(0, 0).UTC()

// Layer returns the catalog layer for a base image running as uid: files
// (Files' output) under /configs, NotesFile when files has it, and, with
// cache, the serve cache of that catalog under
// /tmp/cache, built in process with operator-registry's pkg/cache (JSON
// format) exactly as `opm serve --cache-only` would build it in a
// Dockerfile, owned by uid so that opm can read it. Times are fixed and
// entries sorted: the same files give the same digest.
func Layer(ctx context.Context, files map[string][]byte, uid int, cache bool) (v1.Layer, error) {
	dir, err := scratch.MkdirTemp("", "olm-catalog")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	// An empty catalog (every package delisted) is still a valid image.
	if err := os.MkdirAll(filepath.Join(root, ConfigsDir), 0o755); err != nil {
		return nil, err
	}
	for _, p := range sortedKeys(files) {
		if (!strings.HasPrefix(p, ConfigsDir+"/") && p != NotesFile) || strings.Contains(p, "..") {
			return nil, fmt.Errorf("catalog file %q is not below %s/ nor %s", p, ConfigsDir, NotesFile)
		}
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return nil, err
		}
	}
	// Modes are part of the cache digest: make them independent of umask.
	if err := filepath.WalkDir(filepath.Join(root, ConfigsDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	}); err != nil {
		return nil, err
	}
	if _, ok := files[NotesFile]; ok {
		notes := filepath.Join(root, filepath.FromSlash(NotesFile))
		if err := os.Chmod(filepath.Dir(notes), 0o755); err != nil {
			return nil, err
		}
		if err := os.Chmod(notes, 0o644); err != nil {
			return nil, err
		}
	}
	if cache {
		if err := buildCache(ctx, filepath.Join(root, ConfigsDir), filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(CacheDir, "/")))); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// /tmp is where opm writes; it stays world-writable and sticky.
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	tops := []string{ConfigsDir}
	if cache {
		tops = append(tops, strings.TrimPrefix(CacheDir, "/"))
	}
	if _, ok := files[NotesFile]; ok {
		tops = append(tops, path.Dir(NotesFile))
	}
	for _, top := range tops {
		owner := 0
		if strings.HasPrefix(top, "tmp/") {
			owner = uid
		}
		if err := tarTree(tw, root, top, owner); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

// buildCache builds opm's serve cache of the catalog in configs into dir.
func buildCache(ctx context.Context, configs, dir string) error {
	log := logrus.New()
	log.SetOutput(io.Discard)
	c, err := cache.New(dir, cache.WithFormat("json"), cache.WithLog(logrus.NewEntry(log)))
	if err != nil {
		return fmt.Errorf("opm serve cache: %w", err)
	}
	defer c.Close()
	if err := c.Build(ctx, os.DirFS(configs)); err != nil {
		return fmt.Errorf("opm serve cache: %w", err)
	}
	return nil
}

// tarTree writes root/top and everything below it, in lexical order, with
// the modes found on disk, fixed times and owner uid.
func tarTree(tw *tar.Writer, root, top string, uid int) error {
	return filepath.WalkDir(filepath.Join(root, filepath.FromSlash(top)), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		h := &tar.Header{
			Name: filepath.ToSlash(rel), Mode: int64(info.Mode().Perm()), ModTime: epoch,
			Uid: uid, Gid: uid, Format: tar.FormatPAX,
		}
		if d.IsDir() {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			return tw.WriteHeader(h)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("catalog layer: %s is not a regular file", rel)
		}
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
}

// Image returns base with layer appended and the catalog image
// configuration: the ConfigsLabel label, Entrypoint and Cmd (CmdNoCache
// without cache, for a layer without one). The base's other settings
// (user, environment, creation time) are kept.
//
// The catalog layer and the config take the media types of the base's
// manifest kind: a Docker v2 manifest gets a Docker layer and config, an
// OCI manifest an OCI layer and config (a manifest mixing them is refused
// by strict registries and runtimes).
func Image(base v1.Image, layer v1.Layer, cache bool) (v1.Image, error) {
	mt, err := base.MediaType()
	if err != nil {
		return nil, err
	}
	layerType, configType, err := manifestTypes(mt)
	if err != nil {
		return nil, err
	}
	what := "operator-publish: file-based catalog in /" + ConfigsDir + " and its serve cache in " + CacheDir
	cmd := Cmd
	if !cache {
		what, cmd = "operator-publish: file-based catalog in /"+ConfigsDir+" (no serve cache: opm builds it at start)", CmdNoCache
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: layerType,
		History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: what, Comment: "operator-publish"},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, configType)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels[ConfigsLabel] = "/" + ConfigsDir
	cf.Config.Entrypoint = append([]string(nil), Entrypoint...)
	cf.Config.Cmd = append([]string(nil), cmd...)
	return mutate.ConfigFile(img, cf)
}

// manifestTypes returns the media types of a gzip layer and of the image
// config in an image manifest of media type mt.
func manifestTypes(mt types.MediaType) (layer, config types.MediaType, err error) {
	switch mt {
	case types.OCIManifestSchema1:
		return types.OCILayer, types.OCIConfigJSON, nil
	case types.DockerManifestSchema2:
		return types.DockerLayer, types.DockerConfigJSON, nil
	}
	return "", "", fmt.Errorf("catalog base image: manifest media type %q: want %s or %s", mt, types.OCIManifestSchema1, types.DockerManifestSchema2)
}

// userID is the numeric user an image runs as (0 when unset or a name).
func userID(img v1.Image) int {
	cf, err := img.ConfigFile()
	if err != nil {
		return 0
	}
	u, _, _ := strings.Cut(cf.Config.User, ":")
	n, err := strconv.Atoi(u)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Built is a catalog image: an image, or an image index when the base was
// one (one catalog image per platform of the base).
type Built struct {
	Image v1.Image
	Index v1.ImageIndex
}

// Digest returns the manifest digest of the image or index.
func (b *Built) Digest() (v1.Hash, error) {
	if b.Index != nil {
		return b.Index.Digest()
	}
	return b.Image.Digest()
}

// BuildImage puts files (Files' output) on the base image desc: a single image,
// or an image index, whose every platform image gets the catalog layer
// (entries of platform unknown, such as attestations, are dropped), with
// the serve cache when cache is set (DecideCache).
func BuildImage(ctx context.Context, desc *remote.Descriptor, files map[string][]byte, cache bool) (*Built, error) {
	layers := map[int]v1.Layer{}
	onto := func(base v1.Image) (v1.Image, error) {
		uid := userID(base)
		if layers[uid] == nil {
			l, err := Layer(ctx, files, uid, cache)
			if err != nil {
				return nil, err
			}
			layers[uid] = l
		}
		return Image(base, layers[uid], cache)
	}
	if !desc.MediaType.IsIndex() {
		base, err := desc.Image()
		if err != nil {
			return nil, err
		}
		img, err := onto(base)
		if err != nil {
			return nil, err
		}
		return &Built{Image: img}, nil
	}
	baseIdx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := baseIdx.IndexManifest()
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, desc.MediaType)
	n := 0
	for _, m := range im.Manifests {
		if !registry.Runnable(m) {
			continue
		}
		base, err := baseIdx.Image(m.Digest)
		if err != nil {
			return nil, err
		}
		img, err := onto(base)
		if err != nil {
			return nil, err
		}
		mt, err := img.MediaType()
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: mt, Platform: m.Platform}})
		n++
	}
	if n == 0 {
		return nil, errors.New("the base image index has no platform image")
	}
	return &Built{Index: idx}, nil
}

// Push reads the base image baseRef, decides whether the catalog image
// gets the serve cache (DecideCache, serveCache as there), builds the
// catalog image of files on it (BuildImage) and pushes it to dst (a tag).
// It returns dst's repository with the pushed digest
// (host/repo@sha256:...), the reference a CatalogSource should use, and
// the cache decision. opts are the remote options of the registry holding
// both (normally the destination).
func Push(ctx context.Context, baseRef, dst name.Reference, files map[string][]byte, serveCache *bool, opts ...remote.Option) (name.Digest, CacheDecision, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	desc, err := remote.Get(baseRef, opts...)
	if err != nil {
		return name.Digest{}, CacheDecision{}, fmt.Errorf("reading the catalog base image %s: %w", baseRef, err)
	}
	dec, err := DecideCache(desc, serveCache)
	if err != nil {
		return name.Digest{}, CacheDecision{}, fmt.Errorf("reading the opm of the catalog base image %s: %w", baseRef, err)
	}
	d, err := push(ctx, desc, baseRef, dst, files, dec.Cache, opts)
	return d, dec, err
}

// push builds the catalog image of files on the base image desc (read
// from baseRef), with the serve cache or not, and pushes it to dst.
func push(ctx context.Context, desc *remote.Descriptor, baseRef, dst name.Reference, files map[string][]byte, cache bool, opts []remote.Option) (name.Digest, error) {
	built, err := BuildImage(ctx, desc, files, cache)
	if err != nil {
		return name.Digest{}, fmt.Errorf("building the catalog image on %s: %w", baseRef, err)
	}
	if built.Index != nil {
		err = remote.WriteIndex(dst, built.Index, opts...)
	} else {
		err = remote.Write(dst, built.Image, opts...)
	}
	if err != nil {
		return name.Digest{}, fmt.Errorf("pushing the catalog image %s: %w", dst, err)
	}
	d, err := built.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return dst.Context().Digest(d.String()), nil
}
