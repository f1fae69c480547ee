package testenv

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// backend answers every path with a 1000-byte body and an upload Location
// pointing at itself.
func backend(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://"+r.Host+"/v2/x/blobs/uploads/abc")
		w.Header().Set("X-Seen-Proto", r.Header.Get("X-Forwarded-Proto"))
		io.WriteString(w, strings.Repeat("x", 1000))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFaultProxyFaults(t *testing.T) {
	srv := backend(t)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(p *FaultProxy, method string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest(method, "http://"+p.Host+"/v2/x/blobs/sha256:1", nil)
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}
	one := func(f Fault) *FaultProxy {
		return StartFaultProxy(t, srv.URL, http.DefaultTransport, FaultOptions{Rates: map[Fault]float64{f: 1}, RetryAfter: 7})
	}

	t.Run("reset", func(t *testing.T) {
		_, _, err := get(one(FaultReset), http.MethodGet)
		if !errors.Is(err, syscall.ECONNRESET) && (err == nil || !strings.Contains(err.Error(), "EOF")) {
			t.Errorf("err = %v, want a connection reset", err)
		}
	})
	t.Run("429", func(t *testing.T) {
		resp, body, err := get(one(FaultTooMany), http.MethodGet)
		if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(string(body), "TOOMANYREQUESTS") {
			t.Errorf("got %v %v %q, want 429 with Retry-After 7", resp, err, body)
		}
	})
	t.Run("503", func(t *testing.T) {
		resp, _, err := get(one(FaultUnavailable), http.MethodGet)
		if err != nil || resp.StatusCode != 503 {
			t.Errorf("got %v %v, want 503", resp, err)
		}
	})
	t.Run("truncate", func(t *testing.T) {
		p := one(FaultTruncate)
		_, body, err := get(p, http.MethodGet)
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(body) != 500 {
			t.Errorf("read %d bytes, err %v; want 500 and unexpected EOF", len(body), err)
		}
		// Not a GET: forwarded whole.
		resp, _, err := get(p, http.MethodHead)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("HEAD: %v %v", resp, err)
		}
	})
	t.Run("forwarding", func(t *testing.T) {
		p := StartFaultProxy(t, srv.URL, http.DefaultTransport, FaultOptions{})
		resp, body, err := get(p, http.MethodGet)
		if err != nil || len(body) != 1000 {
			t.Fatalf("got %d bytes, %v", len(body), err)
		}
		if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "http://"+p.Host+"/") {
			t.Errorf("Location %q does not point at the proxy %s", loc, p.Host)
		}
		if resp.Header.Get("X-Seen-Proto") != "http" {
			t.Errorf("X-Forwarded-Proto not set")
		}
		if n := p.Count(http.MethodGet, "/blobs/"); n != 1 {
			t.Errorf("Count = %d, want 1", n)
		}
	})
	t.Run("recorded before the body", func(t *testing.T) {
		// A backend that sends half of its body and holds the rest until
		// released: the proxy has forwarded the headers and part of the
		// body, so the request must be recorded by then (a test reading
		// Count after the response must never see it missing).
		release := make(chan struct{})
		held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "2000")
			io.WriteString(w, strings.Repeat("x", 1000))
			w.(http.Flusher).Flush()
			<-release
			io.WriteString(w, strings.Repeat("x", 1000))
		}))
		t.Cleanup(held.Close)
		p := StartFaultProxy(t, held.URL, http.DefaultTransport, FaultOptions{})
		resp, err := client.Get("http://" + p.Host + "/v2/x/blobs/sha256:2")
		if err != nil {
			close(release)
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, c := p.Count(http.MethodGet, "/blobs/"), p.Requests()
		close(release)
		if n != 1 || c[0].Status != 200 {
			t.Errorf("with the response under way: Count = %d, requests %+v; want 1, status 200", n, c)
		}
		if body, err := io.ReadAll(resp.Body); err != nil || len(body) != 2000 {
			t.Errorf("read %d bytes, %v; want 2000", len(body), err)
		}
	})
	t.Run("stall counted when the client gives up", func(t *testing.T) {
		// The client's timeout ends the request while the proxy holds it:
		// the stall is counted by the time the client has its error, not
		// when the proxy notices the closed connection.
		p := StartFaultProxy(t, srv.URL, http.DefaultTransport, FaultOptions{Rates: map[Fault]float64{FaultStall: 1}, StallDelay: time.Hour})
		impatient := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 100 * time.Millisecond}
		resp, err := impatient.Get("http://" + p.Host + "/v2/x/blobs/sha256:3")
		if err == nil {
			resp.Body.Close()
			t.Fatalf("a stalled request answered %s", resp.Status)
		}
		if f, c := p.Faults(), p.Requests(); f[FaultStall] != 1 || len(c) != 1 || c[0].Status != 0 {
			t.Errorf("after the client gave up: faults %v, requests %+v; want one stall, status 0", f, c)
		}
	})
	t.Run("status and cap", func(t *testing.T) {
		p := StartFaultProxy(t, srv.URL, http.DefaultTransport, FaultOptions{
			Rates:     map[Fault]float64{FaultUnavailable: 1},
			MaxPerKey: 2,
			Status: func(r *http.Request) int {
				if strings.Contains(r.URL.Path, "/denied/") {
					return http.StatusForbidden
				}
				return 0
			},
		})
		for i, want := range []int{503, 503, 200} {
			resp, _, err := get(p, http.MethodGet)
			if err != nil || resp.StatusCode != want {
				t.Errorf("request %d: %v %v, want %d", i, resp, err, want)
			}
		}
		resp, err := client.Get("http://" + p.Host + "/v2/denied/manifests/x")
		if err != nil || resp.StatusCode != 403 {
			t.Errorf("denied path: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		if f := p.Faults(); f[FaultUnavailable] != 2 {
			t.Errorf("faults %v, want 2 503s", f)
		}
	})
}
