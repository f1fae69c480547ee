package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/mirror"
)

// TestFirstRunLog: the first publish says once why every version counts as
// changed, and no "0 added, 0 modified, 0 removed" after it.
func TestFirstRunLog(t *testing.T) {
	f := newFixture(t)
	var log bytes.Buffer
	_, err := Run(context.Background(), Options{
		Source:  f.source,
		Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog: catalogOpts(f.catalog),
		Log:     slog.New(slog.NewTextHandler(&log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if !strings.Contains(out, "every version counts as changed") || strings.Contains(out, "0 added, 0 modified, 0 removed") {
		t.Errorf("first run log:\n%s", out)
	}
}
