package catalog

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/operator-publish/publish/internal/gitops"
)

// Remote is where PushCommit sends a commit.
type Remote struct {
	// URL is the endpoint go-git connects to (gitops.Options.Endpoint: an
	// absolute path for a local catalog).
	URL string
	// Display is the URL as the user gave it (--catalog), for errors; the
	// password is redacted when printed. Default URL.
	Display string
	// Branch is the branch to update (a name, not a ref).
	Branch string
	// Auth and CABundle are the credentials and extra PEM CAs.
	Auth     transport.AuthMethod
	CABundle []byte
	// Timeout bounds the push (default 5 minutes).
	Timeout time.Duration
}

// RejectedError says the remote branch was not where the commit was
// written on: another publish (or a person) pushed in between. Nothing was
// changed on the remote. It unwraps to git.ErrNonFastForwardUpdate, and
// PushCommit returns it inside a *gitops.UnreachableError, so that
// gitops.IsRejected recognises it.
type RejectedError struct {
	Branch string
	// Expected is the commit the new one was written on ("" for a new
	// branch); Found the branch's commit on the remote ("" when the
	// server only said that it refused the update).
	Expected, Found string
	// Reason is the server's status for the ref, when it refused it.
	Reason string
}

func (e *RejectedError) Error() string {
	switch {
	case e.Reason != "":
		return fmt.Sprintf("branch %s: %s (non-fast-forward: expected it at %s)", e.Branch, e.Reason, orNone(e.Expected))
	default:
		return fmt.Sprintf("branch %s moved on: it is at %s, the commit was written on %s (non-fast-forward)", e.Branch, orNone(e.Found), orNone(e.Expected))
	}
}

// Unwrap makes errors.Is(err, git.ErrNonFastForwardUpdate) true.
func (e *RejectedError) Unwrap() error { return git.ErrNonFastForwardUpdate }

func orNone(h string) string {
	if h == "" {
		return "no commit"
	}
	return h
}

// PushStats is what a push sent.
type PushStats struct {
	// Objects is the number of objects in the pack; Bytes the pack's size.
	Objects int
	Bytes   int64
}

// PushCommit sends w (from WriteCommit) to r.Branch with compare-and-swap
// semantics: the remote branch must be at w.Parent (absent when Parent is
// zero), else nothing changes and the error wraps *RejectedError. The
// objects sent are exactly w.Objects, read from s, in one pack without
// deltas: nothing is walked, so the cost grows with the change, not with
// the repo's history or tree (go-git's Remote.Push walks every object
// reachable from the remote refs to work out what to send). The server
// checks the old value itself (the command carries w.Parent as the old
// hash), so a push racing ours is refused too.
//
// Errors: *gitops.UnreachableError (network, credentials, a refusal by the
// server), wrapping *RejectedError for a branch that moved on.
func PushCommit(ctx context.Context, r Remote, s storer.EncodedObjectStorer, w *Written) (*PushStats, error) {
	if w.Commit.IsZero() {
		return &PushStats{}, nil
	}
	parent := w.Parent
	return pushRef(ctx, r, s, refUpdate{branch: r.Branch, new: w.Commit, objects: w.Objects, expect: &parent})
}

// PushBranch sends w (from WriteCommit) to branch of r's repository (not
// r.Branch), replacing whatever commit branch is at: the rolling branch
// of a pull request, which every run writes again on the current catalog
// branch (never merged as text). The old value of the update is the one
// the server advertised, so a push that races ours between the
// advertisement and the update is refused all the same (*RejectedError).
// It returns the commit the branch was at ("" when it did not exist).
// The remote must have w.Parent (it is a commit of r.Branch). Errors are
// PushCommit's.
func PushBranch(ctx context.Context, r Remote, s storer.EncodedObjectStorer, w *Written, branch string) (string, *PushStats, error) {
	if w.Commit.IsZero() {
		return "", &PushStats{}, nil
	}
	var was plumbing.Hash
	st, err := pushRef(ctx, r, s, refUpdate{branch: branch, new: w.Commit, objects: w.Objects, found: &was})
	return hashOrEmpty(was), st, err
}

// DeleteBranch removes branch from r's repository (the rolling branch of
// a pull request that was closed). A branch that does not exist is not an
// error. Errors are PushCommit's.
func DeleteBranch(ctx context.Context, r Remote, branch string) error {
	_, err := pushRef(ctx, r, nil, refUpdate{branch: branch})
	return err
}

// refUpdate is one reference update of pushRef.
type refUpdate struct {
	branch string
	// new is the commit to set; zero deletes the branch.
	new     plumbing.Hash
	objects []plumbing.Hash
	// expect, when set, is where the branch must be (zero: absent), else
	// *RejectedError; nil: wherever the server says it is.
	expect *plumbing.Hash
	// found, when set, receives where the server said the branch was.
	found *plumbing.Hash
}

// pushRef is one receive-pack session that updates one branch.
func pushRef(ctx context.Context, r Remote, s storer.EncodedObjectStorer, u refUpdate) (*PushStats, error) {
	st := &PushStats{}
	if r.Display == "" {
		r.Display = r.URL
	}
	if r.Timeout == 0 {
		r.Timeout = 5 * time.Minute
	}
	fail := func(err error) (*PushStats, error) {
		return st, &gitops.UnreachableError{URL: r.Display, Op: "push to " + u.branch, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	ep, err := transport.NewEndpoint(r.URL)
	if err != nil {
		return fail(err)
	}
	ep.CaBundle = r.CABundle
	c, err := client.NewClient(ep)
	if err != nil {
		return fail(err)
	}
	sess, err := c.NewReceivePackSession(ep, r.Auth)
	if err != nil {
		return fail(err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return fail(err)
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return fail(err)
	}
	name := plumbing.NewBranchReferenceName(u.branch)
	var found plumbing.Hash
	if ref, ok := refs[name]; ok {
		found = ref.Hash()
	}
	if u.found != nil {
		*u.found = found
	}
	old := found
	if u.expect != nil {
		old = *u.expect
		if found != old && checkAdvertised {
			return fail(&RejectedError{Branch: u.branch, Expected: hashOrEmpty(old), Found: hashOrEmpty(found)})
		}
	}
	if u.new.IsZero() && old.IsZero() {
		return st, nil // nothing to delete
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: name, Old: old, New: u.new}}
	said := listenRemote(req, ar.Capabilities)
	done := make(chan error, 1)
	if !u.new.IsZero() {
		pr, pw := io.Pipe()
		req.Packfile = pr
		go func() {
			cw := &countWriter{w: pw}
			_, err := packfile.NewEncoder(cw, s, !ar.Capabilities.Supports(capability.OFSDelta)).Encode(u.objects, 0)
			st.Bytes = cw.n
			done <- pw.CloseWithError(err)
		}()
		defer func() { pr.Close() }()
	} else {
		done <- nil
	}
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil && rs == nil {
		if p, ok := req.Packfile.(*io.PipeReader); ok {
			p.CloseWithError(err)
		}
		<-done
		return fail(err)
	}
	if err := <-done; err != nil {
		return fail(fmt.Errorf("writing the pack: %w", err))
	}
	st.Objects = len(u.objects)
	if rs != nil {
		if rs.UnpackStatus != "ok" && !(u.new.IsZero() && rs.UnpackStatus == "") {
			return fail(fmt.Errorf("the server could not unpack the objects: %s%s", rs.UnpackStatus, said.reason()))
		}
		for _, cs := range rs.CommandStatuses {
			if cs.Status == "ok" {
				continue
			}
			if movedOn(cs.Status) {
				return fail(&RejectedError{Branch: u.branch, Expected: hashOrEmpty(old), Reason: cs.Status})
			}
			return fail(&RefusedError{Ref: cs.ReferenceName.String(), Status: cs.Status, Remote: said.lines()})
		}
	}
	if err != nil {
		if r := said.reason(); r != "" {
			err = fmt.Errorf("%w%s", err, r)
		}
		return fail(err)
	}
	return st, nil
}

// checkAdvertised is false only in the test that shows the server's own
// compare-and-swap.
var checkAdvertised = true

// movedOn reports whether a ref status from the server says that the ref
// was not at the old value: git's "failed to update ref" (its log says
// "cannot lock ref ... is at X but expected Y"), GitLab's "incorrect old
// value provided", "stale info", "fetch first", "non-fast-forward". Other
// refusals (a hook, a protected branch) are not retried.
func movedOn(status string) bool {
	for _, s := range []string{"non-fast-forward", "fetch first", "cannot lock ref", "incorrect old value provided", "failed to update ref", "stale info", "failed to lock"} {
		if strings.Contains(status, s) {
			return true
		}
	}
	return false
}

func hashOrEmpty(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
