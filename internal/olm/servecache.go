package olm

import (
	"archive/tar"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/scratch"
)

// RegistryModule is operator-registry's Go module: opm, and the library
// that writes the serve cache into the catalog image (pkg/cache).
const RegistryModule = "github.com/operator-framework/operator-registry"

// registryVersion is the operator-registry version of go.mod, for a
// binary without build information.
const registryVersion = "v1.73.0"

// CacheWriterVersion returns the operator-registry version this program
// is built with, which writes the serve cache (Layer): the module's
// version in the binary's build information, else registryVersion.
func CacheWriterVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == RegistryModule {
				if d.Replace != nil && d.Replace.Version != "" {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return registryVersion
}

// CacheDecision is whether a catalog image gets opm's serve cache, and why.
type CacheDecision struct {
	// Cache: the image holds /tmp/cache and its command is `serve /configs
	// --cache-dir=/tmp/cache`, which enforces the cache's integrity; else
	// it has no cache and its command is `serve /configs`, and opm builds
	// the cache when it starts.
	Cache bool
	// BaseOPM is the operator-registry version of the base image's opm
	// ("" when it was not read or has none), Writer CacheWriterVersion.
	BaseOPM, Writer string
	// Reason says why, for the run's log and the plan.
	Reason string
}

// DecideCache returns whether the catalog image built on the base image
// desc gets the serve cache this program writes: not with serveCache
// false (publish.yaml olm.serveCache); else only when the base image's
// opm (BaseOPMVersion) is the operator-registry version that writes the
// cache, CacheWriterVersion. A cache of another version may fail opm's
// integrity check at start ("cache requires rebuild"), which ends the
// catalog pod; without a cache, opm builds one when it starts (slower
// start, never stale). Reading the base image fails only on registry
// errors; a base without a readable opm gets no cache.
func DecideCache(desc *remote.Descriptor, serveCache *bool) (CacheDecision, error) {
	d := CacheDecision{Writer: CacheWriterVersion()}
	if serveCache != nil && !*serveCache {
		d.Reason = "serveCache is false: the catalog image has no serve cache; opm builds it when it starts"
		return d, nil
	}
	img, err := firstImage(desc)
	if err != nil {
		return d, err
	}
	v, err := BaseOPMVersion(img)
	var nf *noOPMError
	switch {
	case errors.As(err, &nf):
		d.Reason = fmt.Sprintf("the base image's opm version is unknown (%v): the catalog image has no serve cache; opm builds it when it starts", err)
		return d, nil
	case err != nil:
		return d, err
	}
	d.BaseOPM = v
	if v != d.Writer {
		d.Reason = fmt.Sprintf("the base image's opm is operator-registry %s, the serve cache would be written by %s: the catalog image has no serve cache; opm builds it when it starts", v, d.Writer)
		return d, nil
	}
	d.Cache = true
	d.Reason = fmt.Sprintf("the base image's opm is operator-registry %s, which wrote the serve cache", v)
	return d, nil
}

// firstImage returns desc's image, or the first runnable platform image of
// its index (the platforms of an opm release share its version).
func firstImage(desc *remote.Descriptor) (v1.Image, error) {
	if !desc.MediaType.IsIndex() {
		return desc.Image()
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, m := range im.Manifests {
		if registry.Runnable(m) {
			return idx.Image(m.Digest)
		}
	}
	return nil, errors.New("the base image index has no platform image")
}

// noOPMError says the base image has no opm binary whose version can be
// read.
type noOPMError struct{ msg string }

func (e *noOPMError) Error() string { return e.msg }

// BaseOPMVersion returns the operator-registry version of the opm binary
// of img: the binary its entrypoint names (default /bin/opm), taken from
// the topmost layer that holds it, and read, not run: its Go build
// information names operator-registry as the main module (a release,
// built from its repository, as `opm version` reports it) or as a
// dependency (hack/opm/build.sh's). The upstream opm images carry no
// version label (release/goreleaser.opm.Dockerfile). The error is a
// *noOPMError when there is no such binary or it has no version, another
// error when a layer cannot be read.
func BaseOPMVersion(img v1.Image) (string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	bin := Entrypoint[0]
	if len(cf.Config.Entrypoint) > 0 && strings.HasSuffix(cf.Config.Entrypoint[0], "/opm") {
		bin = cf.Config.Entrypoint[0]
	}
	want := strings.TrimPrefix(path.Clean(bin), "/")
	layers, err := img.Layers()
	if err != nil {
		return "", err
	}
	dir, err := scratch.MkdirTemp("", "olm-base-opm")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "opm")
	for i := len(layers) - 1; i >= 0; i-- {
		found, err := extractFile(layers[i], want, file)
		if err != nil {
			return "", fmt.Errorf("reading %s of the base image: %w", bin, err)
		}
		if !found {
			continue
		}
		bi, err := buildinfo.ReadFile(file)
		if err != nil {
			return "", &noOPMError{msg: fmt.Sprintf("%s has no Go build information: %v", bin, err)}
		}
		if bi.Main.Path == RegistryModule && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version, nil
		}
		for _, d := range bi.Deps {
			if d.Path == RegistryModule {
				return d.Version, nil
			}
		}
		return "", &noOPMError{msg: fmt.Sprintf("%s names no operator-registry version in its build information", bin)}
	}
	return "", &noOPMError{msg: fmt.Sprintf("the base image has no %s", bin)}
}

// extractFile copies the regular file name (no leading slash) of layer l
// to dst; false when l does not hold it.
func extractFile(l v1.Layer, name, dst string) (bool, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return false, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if path.Clean(strings.TrimPrefix(h.Name, "./")) != name || h.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.Create(dst)
		if err != nil {
			return false, err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err == nil, err
	}
}
