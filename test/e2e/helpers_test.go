package e2e

import (
	"io"
	"log"
	"testing"

	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/operator-publish/publish/internal/testenv"
)

func memStorage() *memory.Storage { return memory.NewStorage() }

func nopLog() *log.Logger { return log.New(io.Discard, "", 0) }

func testingShort(t *testing.T) {
	testenv.Short(t, "end-to-end test")
}
