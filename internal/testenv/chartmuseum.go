package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ChartMuseumEnv names the environment variable holding the path of the
// chartmuseum binary that ChartMuseum starts:
// PUBLISH_CHARTMUSEUM="$(hack/chartmuseum/build.sh)".
const ChartMuseumEnv = "PUBLISH_CHARTMUSEUM"

// chartMuseumStartTimeout bounds the wait for the server's /health.
const chartMuseumStartTimeout = time.Minute

// ChartMuseumServer is a real ChartMuseum (the binary of
// hack/chartmuseum/build.sh) started by ChartMuseum on a loopback port
// with local storage, serving one chart repository per path (--depth 1,
// as Captain's ChartMuseum serves a repository per ChartRepo): the
// repository NAME is URL+"/NAME" (its index.yaml below it) and its API
// URL+"/api/NAME/charts".
type ChartMuseumServer struct {
	// URL is "http://127.0.0.1:PORT", without a trailing slash.
	URL string
	// Dir is the storage root.
	Dir string
}

// ChartMuseum starts a ChartMuseum server for the test and stops it in
// t.Cleanup; args are more of chartmuseum's flags (authentication:
// --basic-auth-user=U --basic-auth-pass=P, or --bearer-auth with
// --auth-realm, --auth-service and --auth-cert-path). Without PUBLISH_CHARTMUSEUM the test is skipped (or fails,
// see Require). ChartMuseum listens on a port it is given (it cannot
// report one the kernel chose): a free loopback port is picked, and
// another one when the server exits because someone took it meanwhile.
func ChartMuseum(t testing.TB, args ...string) *ChartMuseumServer {
	t.Helper()
	Short(t, "starts a ChartMuseum server")
	bin := os.Getenv(ChartMuseumEnv)
	if bin == "" {
		Skipf(t, "this test needs ChartMuseum: %s=\"$(hack/chartmuseum/build.sh)\" (builds chartmuseum from its Go module, cached by version)", ChartMuseumEnv)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("testenv: %s=%s is not an executable file (%v); run hack/chartmuseum/build.sh and set %s to the path it prints", ChartMuseumEnv, bin, err, ChartMuseumEnv)
	}
	dir := t.TempDir()
	var last string
	for attempt := 0; attempt < 5; attempt++ {
		s, out, inUse := startChartMuseum(t, bin, dir, args)
		if s != nil {
			return s
		}
		last = out
		if !inUse {
			break
		}
	}
	t.Fatalf("testenv: chartmuseum did not start:\n%s", last)
	return nil
}

// startChartMuseum starts one server on a free port: the server, or its
// output and whether it failed because the port was taken.
func startChartMuseum(t testing.TB, bin, dir string, args []string) (*ChartMuseumServer, string, bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var out syncBuffer
	cmd := exec.Command(bin, append([]string{"--listen-host=127.0.0.1", "--port=" + strconv.Itoa(port), "--storage=local",
		"--storage-local-rootdir=" + dir, "--depth=1", "--disable-metrics"}, args...)...)
	cmd.Env = environWithout("CHARTMUSEUM")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: starting chartmuseum: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s := &ChartMuseumServer{URL: "http://127.0.0.1:" + strconv.Itoa(port), Dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), chartMuseumStartTimeout)
	defer cancel()
	if err := s.waitReady(ctx, exited); err != nil {
		cmd.Process.Kill()
		<-exited
		text := out.String()
		return nil, fmt.Sprintf("%v\n%s", err, lastLines(text, 20)), strings.Contains(text, "address already in use")
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return s, "", false
}

// waitReady polls GET /health until it answers 200, the server exits or
// ctx ends.
func (s *ChartMuseumServer) waitReady(ctx context.Context, exited <-chan struct{}) error {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		resp, err := client.Get(s.URL + "/health")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /health: %s", resp.Status)
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("chartmuseum exited before it answered (last: %v)", last)
		case <-ctx.Done():
			return fmt.Errorf("chartmuseum did not answer within %v (last: %v)", chartMuseumStartTimeout, last)
		case <-tick.C:
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a process's
// stdout and stderr) and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
