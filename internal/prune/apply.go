package prune

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/registry"
)

// ApplyOptions configures Apply.
type ApplyOptions struct {
	// CatalogDir is the catalog checkout, read again at its HEAD: what a
	// listed version references now is never deleted.
	CatalogDir string
	// Parse and Remote as in Options; Remote needs delete rights.
	Parse  func(string) (name.Reference, error)
	Remote []remote.Option
	// Logf reports each deletion and skip; nil discards.
	Logf func(format string, args ...any)
	// States, when set, returns the state files (by path, as
	// publish/state/<cluster>.yaml) of the catalog branch's tip (--catalog):
	// what is listed now is read from there, not from CatalogDir.
	States func(ctx context.Context) (map[string][]byte, error)
	// OLMKept as in Options: what an OLM cluster's catalog keeps
	// deprecated is not deleted.
	OLMKept func(ctx context.Context, catalogImage string) (map[string]bool, error)
}

// Result is what Apply did to each entry of the plan: Deleted (its tags,
// the manifest and its children), Relisted (a listed version references
// it again since the plan was made: left), Gone (the registry no longer
// had it), each as REPOSITORY@DIGEST.
type Result struct {
	Deleted, Relisted, Gone []string
}

// RefusedError says the registry refuses deletes (405 Method Not Allowed
// or the UNSUPPORTED code: distribution without storage.delete.enabled,
// a read-only mirror). Done lists what was deleted before it refused,
// each manifest whole.
type RefusedError struct {
	Ref  string
	Done []string
	Err  error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: the registry refuses deletes (%v): enable them (distribution: storage.delete.enabled: true; Harbor: the robot account needs the delete permission) and apply the plan again; %d manifests were deleted before, each whole", e.Ref, e.Err, len(e.Done))
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Apply deletes exactly the entries of p that no listed version of the
// catalog at CatalogDir's HEAD references (read again now), each through
// the registry API: its tags that still point at its digest first, where
// the registry can delete a tag (distribution 3; distribution 2.8 refuses
// and removes a manifest's tags with it), after its referrers the plan
// found, then the manifest by digest, then its children. Blobs are left to the registry's garbage
// collection. Errors: the plan's schema version, the catalog, a registry
// that refuses deletes (*RefusedError, before any half-done manifest), or
// another registry failure (what was done before is in the result).
func Apply(ctx context.Context, p *Plan, o ApplyOptions) (*Result, error) {
	if p.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("the plan has schemaVersion %d, this publish reads %d: make it again with publish prune --plan", p.SchemaVersion, SchemaVersion)
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	listed, err := listedNow(ctx, o, logf)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	opts := append(append([]remote.Option{}, o.Remote...), remote.WithContext(ctx))
	for _, e := range p.Entries {
		id := e.Repository + "@" + e.Digest
		if listed[ref{e.Repository, e.Digest}] {
			res.Relisted = append(res.Relisted, id)
			logf("prune: %s is listed again since the plan (%s): left", id, short(p.Catalog))
			continue
		}
		r, err := o.Parse(id)
		if err != nil {
			return res, err
		}
		if _, err := remote.Head(r, opts...); registry.IsNotFound(err) {
			res.Gone = append(res.Gone, id)
			continue
		} else if err != nil {
			return res, fmt.Errorf("%s: %w", id, err)
		}
		for _, k := range e.Referrers {
			if listed[ref{e.Repository, k}] {
				continue
			}
			if err := remote.Delete(r.Context().Digest(k), opts...); err != nil && !registry.IsNotFound(err) {
				if refused(err) {
					return res, &RefusedError{Ref: id, Done: res.Deleted, Err: err}
				}
				return res, fmt.Errorf("deleting %s@%s, a referrer of %s: %w", e.Repository, k, id, err)
			}
		}
		for _, tag := range e.Tags {
			deleteTag(r.Context().Tag(tag), e.Digest, opts, logf)
		}
		if err := remote.Delete(r, opts...); err != nil {
			if refused(err) {
				return res, &RefusedError{Ref: id, Done: res.Deleted, Err: err}
			}
			return res, fmt.Errorf("deleting %s: %w", id, err)
		}
		for _, k := range e.Children {
			if listed[ref{e.Repository, k}] {
				continue
			}
			if err := remote.Delete(r.Context().Digest(k), opts...); err != nil && !registry.IsNotFound(err) {
				return res, fmt.Errorf("deleting %s@%s, a child of %s: %w", e.Repository, k, id, err)
			}
		}
		res.Deleted = append(res.Deleted, id)
		logf("prune: deleted %s (%d children)", id, len(e.Children))
	}
	return res, nil
}

// listedNow returns the manifests a listed version references now: from
// the catalog branch's tip (o.States), else from the checkout, after
// checking that it is not behind its origin (checkFresh: a stale one is
// an error; an origin that does not answer is a warning).
func listedNow(ctx context.Context, o ApplyOptions, logf func(string, ...any)) (map[ref]bool, error) {
	if o.States != nil {
		files, err := o.States(ctx)
		if err != nil {
			return nil, err
		}
		return listedIn(ctx, files, o.OLMKept)
	}
	if err := checkFresh(ctx, o.CatalogDir); err != nil {
		var se *StaleError
		if errors.As(err, &se) {
			return nil, err
		}
		logf("prune: could not tell whether --catalog-dir %s is current (%v): pull it before --apply, or give --catalog", o.CatalogDir, err)
	}
	c, err := readCatalog(ctx, o.CatalogDir, o.OLMKept)
	if err != nil {
		return nil, err
	}
	return c.listed(), nil
}

// listedIn returns the manifests the listed versions of the state files
// reference, and the versions OLM catalogs keep deprecated (olmKept).
func listedIn(ctx context.Context, files map[string][]byte, olmKept func(context.Context, string) (map[string]bool, error)) (map[ref]bool, error) {
	c := &catalogUses{uses: map[ref][]use{}}
	for path, data := range files {
		cl, ok := gitops.StateCluster(path)
		if !ok {
			continue
		}
		s, err := gitops.ParseState(path, data)
		if err != nil {
			return nil, err
		}
		kept, err := keptOf(ctx, cl, s, olmKept)
		if err != nil {
			return nil, err
		}
		addUses(c.uses, cl, s, &catalog.History{}, kept)
	}
	return c.listed(), nil
}

// deleteTag deletes tag when it still points at digest and the registry
// can delete a tag; a refusal is no error (the delete by digest removes
// the tag where tags cannot be deleted alone).
func deleteTag(tag name.Tag, digest string, opts []remote.Option, logf func(string, ...any)) {
	desc, err := remote.Head(tag, opts...)
	if err != nil || desc.Digest.String() != digest {
		return // gone, or moved to another manifest: not ours to delete
	}
	if err := remote.Delete(tag, opts...); err != nil && !refused(err) && !tagUndeletable(err) {
		logf("prune: deleting tag %s: %v (the manifest is deleted by digest)", tag, err)
	}
}

// refused reports a registry that does not delete: 405, or the
// UNSUPPORTED code.
func refused(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusMethodNotAllowed {
		return true
	}
	for _, d := range te.Errors {
		if d.Code == transport.UnsupportedErrorCode {
			return true
		}
	}
	return false
}

// tagUndeletable reports distribution 2.8's answer to a DELETE by tag
// (DIGEST_INVALID: it takes a digest only); the delete by digest removes
// the tag there.
func tagUndeletable(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		for _, d := range te.Errors {
			if d.Code == transport.DigestInvalidErrorCode {
				return true
			}
		}
	}
	return false
}
