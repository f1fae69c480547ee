// Package prune finds what delisting left behind at the destination
// registries: the manifests that only delisted versions reference (their
// bundle and related images), from the catalog's own state files and
// history, and writes them as a plan to review (docs/prune.md). It never
// deletes anything while planning.
package prune

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/registry"
)

// SchemaVersion is the version of the plan's JSON format.
const SchemaVersion = 1

// DefaultOlderThan is --older-than's default: a version delisted less
// than 30 days ago is left, so that a quick relist needs no mirror again.
const DefaultOlderThan = 30 * 24 * time.Hour

// Options configures MakePlan.
type Options struct {
	// CatalogDir is a checkout of the catalog repo with its history (a
	// full clone: the history says since when a version is delisted).
	CatalogDir string
	// OlderThan: only what every cluster delisted at least this long
	// before Now is planned; the rest is listed as too recent.
	OlderThan time.Duration
	// Now is the time the plan is made at (injected for tests).
	Now time.Time
	// Parse parses an image reference as the command's registry client
	// does; Remote are the options of the HEAD requests that give each
	// manifest's size and whether it is still there (nil Remote: no
	// request is made, sizes are 0 and state "not checked").
	Parse  func(string) (name.Reference, error)
	Remote []remote.Option
	// OLMKept returns the bundle images (host/repo@sha256:...) that the
	// catalog image of an OLM cluster (its render key in the state, "olm
	// <image>") keeps deprecated for their deprecation period
	// (olm.Previous.Kept); a delisted version whose bundle is among them is
	// still in that cluster's catalog, and nothing of it is planned. nil:
	// a state with an OLM cluster is an error (prune cannot tell what the
	// catalog keeps).
	OLMKept func(ctx context.Context, catalogImage string) (map[string]bool, error)
}

// Entry is one manifest of the plan: a bundle or related image of
// delisted versions that no listed version references.
type Entry struct {
	// Repository is the destination repository (host/path); Digest the
	// manifest's digest; Tags the tags the state records for it there.
	Repository string   `json:"repository"`
	Digest     string   `json:"digest"`
	Tags       []string `json:"tags,omitempty"`
	// Size is the manifest's size in bytes as the registry answered (0
	// when not checked), MediaType its media type.
	Size      int64  `json:"size"`
	MediaType string `json:"mediaType,omitempty"`
	// At is what the destination said: present, missing (already gone) or
	// unknown (the registry would not say), "" when not checked.
	At string `json:"atDestination,omitempty"`
	// Children are the digests of the manifests an image index holds
	// (--lookup) that no listed image index of the repository holds too:
	// deleted with it, since the registry's garbage collection keeps a
	// manifest that is no longer any index's child.
	Children []string `json:"children,omitempty"`
	// Referrers are the signature, attestation and referrer manifests of
	// it that the destination has (--lookup) and the state did not record
	// (states written before it recorded them): deleted before it.
	Referrers []string `json:"referrers,omitempty"`
	// Versions are the delisted versions that reference it, as
	// "cluster: artifact version (bundle|related image SOURCE)".
	Versions []string `json:"versions"`
	// DelistedSince is when the last of those versions was delisted (the
	// catalog commit's time), Commit that commit ("" when the history does
	// not show it: then the time the plan was made).
	DelistedSince time.Time `json:"delistedSince"`
	Commit        string    `json:"commit"`
}

// Plan is the reviewed list of `publish prune --plan`.
type Plan struct {
	SchemaVersion int       `json:"schemaVersion"`
	Catalog       string    `json:"catalogCommit"` // the catalog HEAD it was made from
	Made          time.Time `json:"made"`
	OlderThan     string    `json:"olderThan"`
	// Entries are to delete; Recent were delisted too recently (kept for
	// now); Gone (with --lookup) are orphans the destination no longer has
	// (a prune applied before); Kept counts the manifests of delisted
	// versions that a listed version still references (never orphans);
	// Deprecated those of delisted versions that an OLM cluster's catalog
	// still holds for their deprecation period (docs/olm.md), planned once
	// a later catalog image no longer holds them.
	Entries    []Entry `json:"entries"`
	Recent     []Entry `json:"recent"`
	Gone       []Entry `json:"gone,omitempty"`
	Kept       int     `json:"kept"`
	Deprecated int     `json:"deprecated,omitempty"`
	// Truncated: the catalog history was cut (a shallow clone), so some
	// delisting times are only when the history starts.
	Truncated bool `json:"truncated,omitempty"`
}

// ref is a manifest at a destination: repository and digest.
type ref struct{ repo, digest string }

// use is one version's reference to a manifest.
type use struct {
	present bool
	// deprecated: delisted, but the OLM catalog of its cluster keeps its
	// bundle for the deprecation period (counted as present).
	deprecated bool
	what       string
	tag        string
	since      time.Time
	commit     string
	fromTime   bool
}

// MakePlan reads the state of every cluster at the catalog checkout's
// HEAD and, from its history, since when each delisted version is
// delisted; it plans every manifest (by repository and digest) that
// delisted versions reference and no listed version of any cluster does.
// Errors: the checkout is not a Git repository, a state file or the
// history does not parse.
func MakePlan(ctx context.Context, o Options) (*Plan, error) {
	c, err := readCatalog(ctx, o.CatalogDir, o.OLMKept)
	if err != nil {
		return nil, err
	}
	p := &Plan{SchemaVersion: SchemaVersion, Catalog: c.head, Made: o.Now.UTC(), OlderThan: o.OlderThan.String(), Entries: []Entry{}, Recent: []Entry{}, Truncated: c.truncated}
	for r, us := range c.uses {
		e, orphan := entryOf(r, us, o.Now.UTC())
		switch {
		case !orphan:
			if keptDeprecated(us) {
				p.Deprecated++
			} else if usedByDelisted(us) {
				p.Kept++
			}
		case o.Now.Sub(e.DelistedSince) >= o.OlderThan:
			p.Entries = append(p.Entries, e)
		default:
			p.Recent = append(p.Recent, e)
		}
	}
	sortEntries(p.Entries)
	sortEntries(p.Recent)
	if o.Remote != nil {
		look(ctx, o, p.Entries)
		p.Entries, p.Gone = splitGone(p.Entries)
		listed := c.listed()
		children(ctx, o, p.Entries, listed)
		referrers(ctx, o, p.Entries, listed)
	}
	return p, nil
}

// keptDeprecated reports whether us are all delisted versions, one of
// them kept in an OLM catalog for its deprecation period.
func keptDeprecated(us []use) bool {
	kept := false
	for _, u := range us {
		if u.present && !u.deprecated {
			return false
		}
		kept = kept || u.deprecated
	}
	return kept
}

// usedByDelisted reports whether a delisted version is among us.
func usedByDelisted(us []use) bool {
	for _, u := range us {
		if !u.present || u.deprecated {
			return true
		}
	}
	return false
}

// splitGone moves the entries the destination no longer has (a prune
// applied before: the tombstones stay) out of es.
func splitGone(es []Entry) (left, gone []Entry) {
	left, gone = []Entry{}, []Entry{}
	for _, e := range es {
		if e.At == "missing" {
			gone = append(gone, e)
		} else {
			left = append(left, e)
		}
	}
	return left, gone
}

// catalogUses is what readCatalog read: every version's references, by
// destination manifest, at the checkout's HEAD.
type catalogUses struct {
	head      string
	truncated bool
	uses      map[ref][]use
}

// listed returns the manifests a listed version references.
func (c *catalogUses) listed() map[ref]bool {
	out := map[ref]bool{}
	for r, us := range c.uses {
		for _, u := range us {
			if u.present {
				out[r] = true
				break
			}
		}
	}
	return out
}

// readCatalog reads the state of every cluster at the HEAD of the catalog
// checkout dir, and the history of each (since when a version is
// delisted), and, of an OLM cluster, the bundles its catalog image keeps
// deprecated (olmKept). Errors: dir is not in a Git repository or has no
// commit, a state file or the history does not parse, an OLM catalog image
// cannot be read.
func readCatalog(ctx context.Context, catalogDir string, olmKept func(context.Context, string) (map[string]bool, error)) (*catalogUses, error) {
	dir, err := filepath.Abs(catalogDir)
	if err != nil {
		return nil, err
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("--catalog-dir %s: not in a Git repository (prune reads the catalog's history: clone it whole): %w", catalogDir, err)
	}
	headRef, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("--catalog-dir %s: no commit: %w", catalogDir, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	prefix, err := filepath.Rel(wt.Filesystem.Root(), dir)
	if err != nil {
		return nil, err
	}
	if prefix = filepath.ToSlash(prefix); prefix == "." {
		prefix = ""
	}
	d, err := catalog.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	files, err := d.Files(gitops.StateDir, nil)
	if err != nil {
		return nil, err
	}
	c := &catalogUses{head: headRef.Hash().String(), uses: map[ref][]use{}}
	var paths []string
	for path := range files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		cl, ok := gitops.StateCluster(path)
		if !ok {
			continue
		}
		s, err := gitops.ParseState(path, files[path])
		if err != nil {
			return nil, err
		}
		h, err := catalog.ReadHistory(ctx, repo.Storer, headRef.Hash(), prefix, cl)
		if err != nil {
			return nil, err
		}
		c.truncated = c.truncated || h.Truncated
		kept, err := keptOf(ctx, cl, s, olmKept)
		if err != nil {
			return nil, err
		}
		addUses(c.uses, cl, s, h, kept)
	}
	return c, nil
}

// keptOf returns the bundle images the OLM catalog image of cluster cl
// keeps deprecated (olmKept of the image its state s records), nil for a
// cluster of another target. The error names the cluster and the image.
func keptOf(ctx context.Context, cl string, s *gitops.State, olmKept func(context.Context, string) (map[string]bool, error)) (map[string]bool, error) {
	image, ok := strings.CutPrefix(s.Rendered[cl], olm.RenderKeyPrefix)
	if !ok {
		return nil, nil
	}
	if olmKept == nil {
		return nil, fmt.Errorf("cluster %s is published to OLM (catalog image %s): prune needs to read what its catalog keeps deprecated", cl, image)
	}
	kept, err := olmKept(ctx, image)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: reading its OLM catalog image %s, which may keep delisted bundles for their deprecation period: %w", cl, image, err)
	}
	return kept, nil
}

// addUses adds every version of s (cluster cl, with its history h) to
// uses: its bundle and its related images, listed or delisted; a delisted
// version whose bundle image is in kept (the cluster's OLM catalog keeps
// it, deprecated) counts as present.
func addUses(uses map[ref][]use, cl string, s *gitops.State, h *catalog.History, kept map[string]bool) {
	for _, a := range s.Artifacts {
		for _, v := range a.Versions {
			u := use{present: a.Present && v.Present, what: fmt.Sprintf("%s: %s %s", cl, a.Name, v.Version)}
			if !u.present && v.BundleDigest != "" && kept[a.Registry+"/"+a.Repository+"@"+v.BundleDigest] {
				u.present, u.deprecated = true, true
				u.what += " (kept deprecated in the OLM catalog)"
			}
			if !u.present {
				if ev, ok := h.Since(a.Name, v.Version); ok && !ev.Present {
					u.since, u.commit, u.fromTime = ev.Time, ev.Commit, true
				}
			}
			if a.Registry != "" && a.Repository != "" && v.BundleDigest != "" {
				bu := u
				bu.what += " (bundle)"
				bu.tag = v.Tag
				r := ref{repo: a.Registry + "/" + a.Repository, digest: v.BundleDigest}
				uses[r] = append(uses[r], bu)
				addSignatures(uses, u, r.repo, "the bundle", v.BundleSignatures)
			}
			for _, img := range v.Images {
				if img.Digest == "" || img.Destination == "" {
					continue
				}
				repo, tag := img.RepositoryTag()
				iu := u
				iu.what += " (related image " + img.Source + ")"
				iu.tag = tag
				r := ref{repo: repo, digest: img.Digest}
				uses[r] = append(uses[r], iu)
				addSignatures(uses, u, repo, "related image "+img.Source, img.Signatures)
			}
		}
	}
}

// addSignatures adds the signature, attestation and referrer manifests a
// version's bundle or image has in repo (as the state records them) to
// uses, as used by the version u: they go with their image.
func addSignatures(uses map[ref][]use, u use, repo, of string, digests []string) {
	for _, d := range digests {
		su := u
		su.what += " (a signature of " + of + ")"
		r := ref{repo: repo, digest: d}
		uses[r] = append(uses[r], su)
	}
}

// entryOf makes the entry of r from its uses; orphan is false when a
// listed version uses it. The entry is delisted since the latest
// delisting of its versions; a version whose delisting the history does
// not show counts as delisted at now, so it is never planned early.
func entryOf(r ref, us []use, now time.Time) (Entry, bool) {
	e := Entry{Repository: r.repo, Digest: r.digest}
	tags := map[string]bool{}
	for i, u := range us {
		if u.present {
			return e, false
		}
		e.Versions = append(e.Versions, u.what)
		if u.tag != "" {
			tags[u.tag] = true
		}
		since, commit := u.since, u.commit
		if !u.fromTime {
			since, commit = now, ""
		}
		if i == 0 || since.After(e.DelistedSince) {
			e.DelistedSince, e.Commit = since, commit
		}
	}
	for t := range tags {
		e.Tags = append(e.Tags, t)
	}
	sort.Strings(e.Tags)
	sort.Strings(e.Versions)
	return e, true
}

func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].Repository != es[j].Repository {
			return es[i].Repository < es[j].Repository
		}
		return es[i].Digest < es[j].Digest
	})
}

// look asks the destination for each entry's size, media type and
// whether it is still there (one HEAD each, registry.CheckPresence).
func look(ctx context.Context, o Options, es []Entry) {
	var wants []registry.Want
	idx := make([]int, 0, len(es))
	for i, e := range es {
		r, err := o.Parse(e.Repository + "@" + e.Digest)
		h, herr := v1.NewHash(e.Digest)
		if err != nil || herr != nil {
			es[i].At = "unknown"
			continue
		}
		wants = append(wants, registry.Want{Ref: r, Digest: h})
		idx = append(idx, i)
	}
	for k, f := range registry.CheckPresence(ctx, wants, 0, o.Remote...) {
		e := &es[idx[k]]
		switch f.State {
		case registry.Present:
			e.At, e.Size, e.MediaType = "present", f.Size, string(f.MediaType)
		case registry.Missing:
			e.At = "missing"
		default:
			e.At = "unknown"
		}
	}
}
