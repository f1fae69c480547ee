package main

import (
	"fmt"
	"os"

	"github.com/operator-publish/publish/internal/shard"
	"github.com/spf13/pflag"
)

// shardFlags are --shard I/N and --shard-result FILE of the commands that
// split their mirror work over a CI matrix (docs/scale-out.md).
type shardFlags struct {
	part   shardValue
	result string
}

// shardValue is --shard: parsed when the flag is set, so that a bad value
// is a usage error before anything runs.
type shardValue struct{ s shard.Shard }

func (v *shardValue) String() string { return v.s.String() }
func (v *shardValue) Type() string   { return "I/N" }

// Set parses I/N (shard.Parse).
func (v *shardValue) Set(s string) error {
	p, err := shard.Parse(s)
	if err != nil {
		return err
	}
	v.s = p
	return nil
}

func (f *shardFlags) register(fs *pflag.FlagSet) {
	fs.Var(&f.part, "shard", "copy only part I of N of the mirror work, split by destination repository and balanced by bytes (default: from GitLab's CI_NODE_INDEX/CI_NODE_TOTAL, Buildkite's or CircleCI's parallel-job variables; docs/scale-out.md)")
	fs.StringVar(&f.result, "shard-result", "", "write this part's result (the image report with the plan digest, the part and its items, sealed by a sha256; docs/scale-out.md) as JSON to FILE, whatever the outcome; to shard-<I>-of-<N>.json in it when FILE is a directory. Without --shard (or the CI's variables) the run is part 1/1: it copies everything and commits nothing; merge-shards commits")
}

// get returns the part: --shard, else the CI's variables (shard.FromEnv),
// else the zero Shard. --shard-result alone makes a part of one (1/1), so
// that a matrix of one job writes a result too. Errors name the flag or
// the variables (a usage error).
func (f *shardFlags) get() (shard.Shard, error) {
	s := f.part.s
	if s.Total == 0 {
		var err error
		if s, err = shard.FromEnv(os.Getenv); err != nil {
			return shard.Shard{}, &usageError{fmt.Errorf("--shard: %w", err)}
		}
	}
	if s.Total == 0 && f.result != "" {
		s = shard.Shard{Index: 1, Total: 1}
	}
	return s, nil
}
