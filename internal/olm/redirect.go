package olm

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/model"
	"sigs.k8s.io/yaml"
)

// Redirection kinds (publish.yaml clusters.<cluster>.olm.imageRedirection):
// how a cluster's nodes are told to pull the CSVs' source image references
// from the destination registry. The CSVs keep their source references, as
// `opm render` does; these files point the container runtime at the
// mirrors.
const (
	// RedirectIDMS is OpenShift's ImageDigestMirrorSet (config.openshift.io/v1).
	RedirectIDMS = "ImageDigestMirrorSet"
	// RedirectITMS is OpenShift's ImageTagMirrorSet (config.openshift.io/v1).
	RedirectITMS = "ImageTagMirrorSet"
	// RedirectContainerd is a containerd hosts.toml per source host
	// (a node file, /etc/containerd/certs.d/<host>/hosts.toml).
	RedirectContainerd = "containerd"
	// RedirectCRIO is a CRI-O (containers-registries.conf) drop-in (a node
	// file, /etc/containers/registries.conf.d/).
	RedirectCRIO = "CRI-O"
)

// RedirectKinds lists the redirection kinds, in documentation order.
var RedirectKinds = []string{RedirectIDMS, RedirectITMS, RedirectContainerd, RedirectCRIO}

// Mirror is one mirrored source repository: where its images went, and
// whether the published versions name them by digest, by tag or both.
type Mirror struct {
	Source      string // host/repository as the CSVs name it ("docker.io/library/nginx")
	Destination string // host/repository at the destination
	ByDigest    bool
	ByTag       bool
}

// Mirrors returns the mirrored source repositories the present versions
// of arts need (their related images as recorded in publish/state.yaml),
// one per source repository, sorted by source: a delisted version's
// images leave the list when no present version names them. Docker Hub
// references are written as docker.io/..., as the runtimes match them.
func Mirrors(arts []model.ArtifactRecord) ([]Mirror, error) {
	by := map[string]*Mirror{}
	for _, a := range arts {
		if !a.Present {
			continue
		}
		for _, v := range a.Versions {
			if !v.Present {
				continue
			}
			for _, img := range v.Images {
				src, err := name.ParseReference(img.Source)
				if err != nil {
					return nil, fmt.Errorf("%s %s: image %q in publish/state.yaml: %w", a.Name, v.Version, img.Source, err)
				}
				dst, err := name.ParseReference(img.Destination, name.Insecure)
				if err != nil {
					return nil, fmt.Errorf("%s %s: image %q in publish/state.yaml: %w", a.Name, v.Version, img.Destination, err)
				}
				s := hostName(src.Context().RegistryStr()) + "/" + src.Context().RepositoryStr()
				d := dst.Context().RegistryStr() + "/" + dst.Context().RepositoryStr()
				m := by[s]
				if m == nil {
					m = &Mirror{Source: s, Destination: d}
					by[s] = m
				} else if m.Destination != d {
					return nil, fmt.Errorf("source repository %s was mirrored to both %s and %s: one redirection cannot name both", s, m.Destination, d)
				}
				if _, ok := src.(name.Digest); ok {
					m.ByDigest = true
				} else {
					m.ByTag = true
				}
			}
		}
	}
	out := make([]Mirror, 0, len(by))
	for _, m := range by {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out, nil
}

// hostName is the registry host as container runtimes and OpenShift write
// it: Docker Hub is docker.io.
func hostName(h string) string {
	if h == name.DefaultRegistry {
		return "docker.io"
	}
	return h
}

// MirrorSet returns the ImageDigestMirrorSet (kind RedirectIDMS: the
// mirrors named by digest) or ImageTagMirrorSet (RedirectITMS: by tag)
// named setName for ms, nil when no mirror is named that way (nothing to
// render). One entry per source repository, never a broader prefix.
func MirrorSet(kind, setName string, ms []Mirror) ([]byte, error) {
	field := map[string]string{RedirectIDMS: "imageDigestMirrors", RedirectITMS: "imageTagMirrors"}[kind]
	if field == "" {
		return nil, fmt.Errorf("mirror set kind %q: want %s or %s", kind, RedirectIDMS, RedirectITMS)
	}
	var entries []any
	for _, m := range ms {
		if (kind == RedirectIDMS && m.ByDigest) || (kind == RedirectITMS && m.ByTag) {
			entries = append(entries, map[string]any{"source": m.Source, "mirrors": []string{m.Destination}})
		}
	}
	if len(entries) == 0 {
		return nil, nil
	}
	return yaml.Marshal(map[string]any{
		"apiVersion": "config.openshift.io/v1",
		"kind":       kind,
		"metadata":   map[string]any{"name": setName},
		"spec":       map[string]any{field: entries},
	})
}

// ContainerdHosts returns the containerd hosts.toml of every source host
// of ms (containerd's registry host configuration,
// docs/hosts.md of containerd), keyed by the host directory name below
// certs.d/. containerd mirrors a whole host: the mirror is the
// destination registry with the path prefix the source repositories were
// mirrored below (override_path), for pull and resolve; a repository that
// was not mirrored is not found there and is pulled from the source host
// (server), which containerd tries last. plainHTTP says the destination
// speaks plain HTTP. A host whose repositories were mirrored under
// different prefixes is an error (one mirror path per host).
func ContainerdHosts(ms []Mirror, plainHTTP bool) (map[string][]byte, error) {
	scheme := "https"
	if plainHTTP {
		scheme = "http"
	}
	type host struct{ mirror string }
	hosts := map[string]*host{}
	var order []string
	for _, m := range ms {
		srcHost, srcRepo, _ := strings.Cut(m.Source, "/")
		dstHost, dstRepo, _ := strings.Cut(m.Destination, "/")
		prefix, ok := strings.CutSuffix(dstRepo, srcRepo)
		if !ok {
			return nil, fmt.Errorf("containerd: %s was mirrored to %s, not below a prefix of its path: containerd mirrors whole hosts", m.Source, m.Destination)
		}
		mirror := scheme + "://" + dstHost + "/v2/" + strings.TrimSuffix(prefix, "/")
		mirror = strings.TrimSuffix(mirror, "/")
		h := hosts[srcHost]
		if h == nil {
			hosts[srcHost] = &host{mirror: mirror}
			order = append(order, srcHost)
		} else if h.mirror != mirror {
			return nil, fmt.Errorf("containerd: the repositories of %s were mirrored below %s and %s: containerd takes one mirror path per host", srcHost, h.mirror, mirror)
		}
	}
	out := map[string][]byte{}
	for _, srcHost := range order {
		server := "https://" + srcHost
		if srcHost == "docker.io" {
			server = "https://registry-1.docker.io"
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "# Written by operator-publish: pull what was mirrored from the destination registry.\n")
		fmt.Fprintf(&b, "server = %q\n\n", server)
		fmt.Fprintf(&b, "[host.%q]\n", hosts[srcHost].mirror)
		fmt.Fprintf(&b, "  capabilities = [\"pull\", \"resolve\"]\n")
		fmt.Fprintf(&b, "  override_path = true\n")
		out[srcHost] = b.Bytes()
	}
	return out, nil
}

// RegistriesConf returns a containers-registries.conf(5) drop-in for
// CRI-O (and podman) with one [[registry]] per source repository of ms
// and its destination as the mirror: pull-from-mirror digest-only,
// tag-only or all, as the published versions name the images. plainHTTP
// marks the mirrors insecure.
func RegistriesConf(ms []Mirror, plainHTTP bool) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by operator-publish: pull what was mirrored from the destination registry.\n")
	for _, m := range ms {
		pull := "all"
		switch {
		case m.ByDigest && !m.ByTag:
			pull = "digest-only"
		case m.ByTag && !m.ByDigest:
			pull = "tag-only"
		}
		fmt.Fprintf(&b, "\n[[registry]]\nprefix = %q\nlocation = %q\n\n[[registry.mirror]]\nlocation = %q\npull-from-mirror = %q\n", m.Source, m.Source, m.Destination, pull)
		if plainHTTP {
			b.WriteString("insecure = true\n")
		}
	}
	return b.Bytes()
}

// Resolve returns the references a node pulls ref (a source reference, as
// a CSV keeps it) from through the redirection rendered from ms, in the
// order the runtime tries them and before the source itself: the
// destination repository of ref's source repository with ref's digest
// when ms names that repository by digest (the ImageDigestMirrorSet entry;
// containerd's and CRI-O's files send the same pull there), with ref's tag
// when by tag (the ImageTagMirrorSet entry). nil means the redirection
// does not cover ref and the node pulls it from its source. Errors: ref
// is not an image reference. This is how the tests check that every
// related image of a served catalog resolves at the destination
// (docs/olm.md, "Image redirection").
func Resolve(ref string, ms []Mirror) ([]string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", ref, err)
	}
	src := hostName(r.Context().RegistryStr()) + "/" + r.Context().RepositoryStr()
	i := sort.Search(len(ms), func(i int) bool { return ms[i].Source >= src })
	var out []string
	for ; i < len(ms) && ms[i].Source == src; i++ {
		switch r := r.(type) {
		case name.Digest:
			if ms[i].ByDigest {
				out = append(out, ms[i].Destination+"@"+r.DigestStr())
			}
		case name.Tag:
			if ms[i].ByTag {
				out = append(out, ms[i].Destination+":"+r.TagStr())
			}
		}
	}
	return out, nil
}
