package pipeline

import (
	"io"
	"log"

	"github.com/operator-publish/publish/internal/gitops"
)

func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func catalogOpts(url string) gitops.Options { return gitops.Options{URL: url} }
