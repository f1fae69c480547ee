package catalog

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"

	"github.com/operator-publish/publish/internal/logging"
)

// RefusedError says the Git server refused a reference update for a reason
// other than the branch having moved on: a pre-receive or update hook, a
// protected branch, a missing permission. Status is the ref status of the
// server's report (git's "pre-receive hook declined", GitLab's "You are not
// allowed to push code to protected branches"); Remote holds what the server
// printed on the progress side band during the push (the lines git prints
// as "remote: ..."), where hooks and forges give the reason, cleaned of
// control characters and credentials, at most remoteMaxLines lines. Nothing
// was updated; retrying does not help.
type RefusedError struct {
	Ref    string
	Status string
	Remote []string
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("the server refused the update of %s: %s", e.Ref, e.Status)
	if len(e.Remote) > 0 {
		msg += "; the server said: " + strings.Join(e.Remote, " | ")
	}
	return msg
}

// Hint says what to do, for gitops.UnreachableError's message.
func (e *RefusedError) Hint() string {
	return "the catalog repo does not let this account update " + e.Ref + " (a hook, a protected branch or a permission: see what the server said): let the account of --catalog-username or --catalog-ssh-key push there, or deliver through a pull request (--delivery pull-request)"
}

// remoteMaxLines and remoteMaxBytes bound what is kept of the server's
// side-band messages: a hook may print a lot, the reason is in the first
// lines.
const (
	remoteMaxLines = 20
	remoteMaxBytes = 4 << 10
)

// remoteSaid collects the server's side-band progress messages of one
// push (sideband.Progress): bounded, safe for the demuxer's goroutine.
type remoteSaid struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// listenRemote asks the server for its messages on the side band (when it
// advertises side-band-64k or side-band, with quiet so that only hooks and
// the forge speak, not the unpack progress) and returns where they go.
func listenRemote(req *packp.ReferenceUpdateRequest, adv *capability.List) *remoteSaid {
	said := &remoteSaid{}
	switch {
	case adv.Supports(capability.Sideband64k):
		_ = req.Capabilities.Set(capability.Sideband64k)
	case adv.Supports(capability.Sideband):
		_ = req.Capabilities.Set(capability.Sideband)
	default:
		return said
	}
	if adv.Supports(capability.Quiet) {
		_ = req.Capabilities.Set(capability.Quiet)
	}
	req.Progress = said
	return said
}

// Write keeps the first remoteMaxBytes bytes of p; it never fails.
func (r *remoteSaid) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if room := remoteMaxBytes - r.buf.Len(); room > 0 {
		r.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// lines returns the non-empty lines the server printed, each cleaned of
// control characters and credentials (logging.Clean), at most
// remoteMaxLines; nil for none.
func (r *remoteSaid) lines() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	text := r.buf.String()
	r.mu.Unlock()
	var out []string
	for _, l := range strings.FieldsFunc(text, func(c rune) bool { return c == '\n' || c == '\r' }) {
		l = strings.TrimSpace(logging.Clean(l))
		if l == "" {
			continue
		}
		if len(out) == remoteMaxLines {
			out = append(out, "…")
			break
		}
		out = append(out, l)
	}
	return out
}

// reason returns "; the server said: ..." for the lines, "" for none.
func (r *remoteSaid) reason() string {
	ls := r.lines()
	if len(ls) == 0 {
		return ""
	}
	return "; the server said: " + strings.Join(ls, " | ")
}
