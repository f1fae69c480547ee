package e2e

import "github.com/go-git/go-git/v5/storage/memory"

func memStorage() *memory.Storage { return memory.NewStorage() }
