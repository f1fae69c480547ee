package lint

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestParallelStopsAtContext: once the context is cancelled no more work
// starts; the calls running finish.
func TestParallelStopsAtContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	const n = 10000
	parallel(ctx, n, func(i int) {
		if calls.Add(1) == 3 {
			cancel()
		}
	})
	if got := calls.Load(); got >= n {
		t.Fatalf("%d of %d calls after the cancel at the third", got, n)
	}
}

// TestRunCancelled: an interrupted lint returns no findings (the caller
// sees ctx.Err()), and runs no validator: the corpus, which has findings,
// gives none.
func TestRunCancelled(t *testing.T) {
	in, _ := corpusInput(t)
	in.Files = in.Files[:min(len(in.Files), 6)]
	if fs := Run(context.Background(), Config{}, in); len(fs) == 0 {
		t.Fatal("the corpus has no findings: the test proves nothing")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if fs := Run(ctx, Config{}, in); fs != nil {
		t.Errorf("cancelled lint: %d findings, want nil", len(fs))
	}
}
