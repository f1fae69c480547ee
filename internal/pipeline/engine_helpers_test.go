package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/report"
)

// syncBuffer is a log sink safe for the goroutines of a run.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fullReadLine is what the engine logs when it takes the full read.
const fullReadLine = "catalog: reading the whole package repo and catalog: "

// tookFullRead returns the reason the engine logged for the full read, ""
// when it went the incremental way.
func tookFullRead(log string) string {
	_, reason, ok := strings.Cut(log, fullReadLine)
	if !ok {
		return ""
	}
	reason, _, _ = strings.Cut(reason, "\n")
	return reason
}

// planIncremental is PlanRun that must go the incremental way: the full
// read is returned as *catalog.FullReadRequiredError.
func planIncremental(ctx context.Context, o PlanOptions) (*report.Plan, error) {
	var buf syncBuffer
	o.Log = slog.New(slog.NewTextHandler(&buf, nil))
	p, err := PlanRun(ctx, o)
	if r := tookFullRead(buf.String()); r != "" {
		return nil, &catalog.FullReadRequiredError{Reason: r}
	}
	return p, err
}

// planFull is PlanRun forced the full way.
func planFull(ctx context.Context, o PlanOptions) (*report.Plan, error) {
	o.fullRead = true
	return PlanRun(ctx, o)
}
