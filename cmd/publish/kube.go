package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// defaultKubeTimeout is --kube-timeout's default.
const defaultKubeTimeout = 30 * time.Second

// kubeFlags are how adopt, import and status reach the cluster:
// --kubeconfig, --context and --kube-timeout.
type kubeFlags struct {
	kubeconfig, context string
	timeout             time.Duration
}

func (k *kubeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
	fs.StringVar(&k.context, "context", "", "kubeconfig context (default: the current one)")
	fs.DurationVar(&k.timeout, "kube-timeout", defaultKubeTimeout, "give up on a request when the Kubernetes API server has not begun to answer it within this long (a watch, once answered, may last)")
}

// client returns the dynamic client of --kubeconfig (or $KUBECONFIG,
// ~/.kube/config), else of the pod's service account, with agent as its
// User-Agent. Every request must begin to be answered (status line and
// headers) within --kube-timeout, else it fails with *kubeTimeoutError; a
// request still unanswered after a fifth of that (at most 5 s) prints
// one waiting line to stderr. Errors: a usage error naming the flags when
// there is no cluster to talk to or --kube-timeout is not positive.
func (k *kubeFlags) client(agent string, stderr io.Writer) (dynamic.Interface, error) {
	if k.timeout <= 0 {
		return nil, usagef("--kube-timeout %s: want a positive duration such as 30s", k.timeout)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context}).ClientConfig()
	if err != nil {
		return nil, &usageError{fmt.Errorf("no cluster to talk to: %w (pass --kubeconfig, set KUBECONFIG, or run in a pod with a service account)", err)}
	}
	cfg.UserAgent = agent
	w := &answerWithin{timeout: k.timeout, notice: min(k.timeout/5, 5*time.Second), host: cfg.Host, stderr: stderr}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { w.next = rt; return w })
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, &usageError{err}
	}
	return client, nil
}

// kubeTimeoutError says the API server did not begin to answer a request
// within --kube-timeout.
type kubeTimeoutError struct {
	host    string
	timeout time.Duration
}

func (e *kubeTimeoutError) Error() string {
	return fmt.Sprintf("the Kubernetes API server %s did not answer within %s (--kube-timeout): check --kubeconfig and --context, and that the cluster is reachable from here", e.host, e.timeout)
}

// Timeout marks the error as a timeout (net.Error's convention).
func (e *kubeTimeoutError) Timeout() bool { return true }

// answerWithin is an http.RoundTripper that fails a request whose response
// has not begun within timeout, and says once, after notice, that it is
// waiting. The time runs until the status line and headers arrive, not
// until the body ends, so that a watch the server answered may last as
// long as its own timeout says.
type answerWithin struct {
	next            http.RoundTripper
	timeout, notice time.Duration
	host            string
	stderr          io.Writer
	said            sync.Once
}

func (a *answerWithin) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	expired := &kubeTimeoutError{host: a.host, timeout: a.timeout}
	said := make(chan struct{})
	notice := time.AfterFunc(a.notice, func() {
		defer close(said)
		a.said.Do(func() {
			fmt.Fprintf(a.stderr, "waiting for the Kubernetes API server %s (up to %s, --kube-timeout)\n", a.host, a.timeout)
		})
	})
	deadline := time.AfterFunc(a.timeout, func() { cancel(expired) })
	resp, err := a.next.RoundTrip(req.WithContext(ctx))
	if !notice.Stop() {
		<-said // the line is written before the request returns
	}
	if !deadline.Stop() {
		// The deadline fired: whatever came back is the timeout.
		if resp != nil {
			resp.Body.Close()
		}
		cancel(nil)
		return nil, expired
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

// cancelOnClose releases the request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
