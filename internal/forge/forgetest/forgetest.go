// Package forgetest has contract fakes of the GitHub and GitLab REST APIs
// for tests of code that opens pull requests through package forge.
//
// Each fake is an httptest server on 127.0.0.1 that serves exactly the
// endpoints forge calls, checks every request against the forge's
// documented shape (method, path, authentication, GitHub's Accept and
// X-GitHub-Api-Version headers, required JSON fields and their types) and
// answers with the documented response shape and status codes, including
// the error answers a real forge gives (GitHub 422 for a duplicate pull
// request or a body over 65,536 characters, GitLab 409 for a duplicate
// merge request, 403 for a token that may only read). A request outside the
// contract fails the test with t.Errorf naming the request, and gets the
// forge's error shape back.
//
// The fakes keep their state (pull requests, comments, labels, auto-merge)
// for tests to assert on, and let a test act as a person would in the web
// UI (Merge, Close).
package forgetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Option changes how a fake behaves.
type Option func(*config)

type config struct {
	readOnly    bool
	noAutoMerge bool
	mergeable   bool
	checking    int
}

// ReadOnly makes the fake's token one that may read the repository but not
// write: GitHub answers writes 403 "Resource not accessible by personal
// access token" with X-Accepted-GitHub-Permissions, and reports
// permissions.push false; GitLab gives the token's user the Reporter role
// (access level 20) and answers writes 403 "403 Forbidden".
func ReadOnly() Option { return func(c *config) { c.readOnly = true } }

// NoAutoMerge makes the GitHub repository one whose "Allow auto-merge"
// setting is off: enablePullRequestAutoMerge answers the GraphQL error
// "Pull request Auto merge is not allowed for this repository".
func NoAutoMerge() Option { return func(c *config) { c.noAutoMerge = true } }

// Mergeable makes GitHub's pull requests mergeable at once (no required
// check pending): enablePullRequestAutoMerge answers "Pull request is in
// clean status", as GitHub does, and the merge endpoint merges.
func Mergeable() Option { return func(c *config) { c.mergeable = true } }

// MergeStatusChecking makes GitLab answer the first n merge requests
// (PUT …/merge) of each MR with 405 while its detailed_merge_status is
// "checking", as GitLab does while it computes mergeability after an MR is
// created or its branch pushed.
func MergeStatusChecking(n int) Option { return func(c *config) { c.checking = n } }

// Request is one request a fake received.
type Request struct {
	Method string
	Path   string // unescaped path, without the API prefix's host
	Query  string // raw query
	Body   string
	Header http.Header
}

// String is "METHOD PATH[?QUERY]".
func (r Request) String() string {
	if r.Query != "" {
		return r.Method + " " + r.Path + "?" + r.Query
	}
	return r.Method + " " + r.Path
}

// server is what both fakes share: the listener, the log, the lock.
type server struct {
	t     testing.TB
	srv   *httptest.Server
	token string
	cfg   config

	mu       sync.Mutex
	requests []Request
	comments map[int][]string
}

func newServer(t testing.TB, h http.Handler, opts []Option) *server {
	t.Helper()
	s := &server{t: t, token: randomToken(t), comments: map[int][]string{}}
	for _, o := range opts {
		o(&s.cfg)
	}
	s.srv = httptest.NewServer(h) // binds 127.0.0.1:0
	t.Cleanup(s.srv.Close)
	return s
}

func randomToken(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "fake-" + hex.EncodeToString(b)
}

type bodyKey struct{}

// withBody logs r with its body and keeps the body in r's context for
// report.
func (s *server) withBody(r *http.Request, body []byte) *http.Request {
	s.log(r, body)
	return r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
}

// report fails the test for request r, outside the contract: the message
// names the fake, the request line and its body (cut at 300 bytes).
func (s *server) report(fake string, r *http.Request, msg string) {
	body, _ := r.Context().Value(bodyKey{}).([]byte)
	if len(body) > 300 {
		body = append(body[:300:300], "…"...)
	}
	s.t.Errorf("forgetest: %s fake: %s %s: %s (body: %s)", fake, r.Method, r.URL.RequestURI(), msg, body)
}

func (s *server) log(r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body), Header: r.Header.Clone()})
}

// Token is the token the fake accepts; any other is answered 401.
func (s *server) Token() string { return s.token }

// Requests returns the requests received so far, in order.
func (s *server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Comments returns the bodies of the comments on PR number, in order.
func (s *server) Comments(number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.comments[number]...)
}

// fakeSHA is the head commit the fakes report for a branch that the test
// did not set with SetHead.
func fakeSHA(branch string, n int) string {
	h := strings.Repeat("0", 40)
	x := hex.EncodeToString([]byte(branch))
	if len(x) > 32 {
		x = x[:32]
	}
	s := x + h[len(x):]
	return s[:38] + hex.EncodeToString([]byte{byte(n)})[:2]
}
