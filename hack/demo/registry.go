package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// localRegistry is an in-process OCI registry (go-containerregistry
// pkg/registry, blobs in memory) serving plain HTTP on a free loopback port.
type localRegistry struct {
	Name string // "source" or "destination", for messages
	Host string // 127.0.0.1:PORT

	srv  *http.Server
	done chan error

	closeOnce sync.Once
	closeErr  error
}

// startRegistry listens on 127.0.0.1:0 and serves a fresh, empty registry.
func startRegistry(name string) (*localRegistry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s registry: %w", name, err)
	}
	r := &localRegistry{
		Name: name,
		Host: ln.Addr().String(),
		srv: &http.Server{
			Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
			ReadHeaderTimeout: 30 * time.Second,
		},
		done: make(chan error, 1),
	}
	go func() { r.done <- r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the registry, waiting briefly for requests in flight. Calls
// after the first return its result.
func (r *localRegistry) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.close() })
	return r.closeErr
}

func (r *localRegistry) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// A connection dialled but never used (go-containerregistry probes
		// loopback registries over HTTPS and HTTP at once) keeps Shutdown
		// waiting; nothing is in flight that matters: close it.
		err = r.srv.Close()
	}
	if serveErr := <-r.done; serveErr != http.ErrServerClosed && err == nil {
		err = serveErr
	}
	return err
}
