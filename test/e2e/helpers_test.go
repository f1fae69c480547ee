package e2e

import (
	"io"
	"log"
	"testing"

	"github.com/go-git/go-git/v5/storage/memory"
)

func memStorage() *memory.Storage { return memory.NewStorage() }

func nopLog() *log.Logger { return log.New(io.Discard, "", 0) }

func testingShort(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
}
