// Package shard splits the mirror work of one publish over the jobs of a
// CI matrix (docs/scale-out.md): which part a job is (Shard, from --shard
// I/N or the CI's own variables), and which destination repositories each
// part copies (Assign), decided from the plan alone so that every job of
// the matrix, computing the same plan, takes a disjoint part and the parts
// cover it.
package shard

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one part of a split: Index of Total, 1-based (1 <= Index <=
// Total). The zero Shard is no split: the job does everything.
type Shard struct {
	Index, Total int
}

// Split reports whether s is a part of a split into more than one.
func (s Shard) Split() bool { return s.Total > 1 }

// String is "I/N", the form --shard takes; "" for the zero Shard.
func (s Shard) String() string {
	if s.Total == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Total)
}

// MaxTotal bounds N: more parts than the largest CI matrix (GitHub Actions
// and Tekton take 256 jobs) is a typo.
const MaxTotal = 256

// Parse reads "I/N" (1 <= I <= N <= MaxTotal, both decimal). Errors say
// what is wrong and the form to give, for --shard's usage error.
func Parse(s string) (Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || i == "" || n == "" {
		return Shard{}, fmt.Errorf("%q: give I/N, the part I (from 1) of N parts, like 2/5", s)
	}
	idx, err1 := strconv.Atoi(i)
	total, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("%q: I and N must be whole numbers, like 2/5", s)
	}
	return check(idx, total, s)
}

func check(idx, total int, what string) (Shard, error) {
	switch {
	case total < 1:
		return Shard{}, fmt.Errorf("%s: N must be at least 1", what)
	case total > MaxTotal:
		return Shard{}, fmt.Errorf("%s: N is at most %d (the largest CI matrix)", what, MaxTotal)
	case idx < 1:
		return Shard{}, fmt.Errorf("%s: I counts from 1", what)
	case idx > total:
		return Shard{}, fmt.Errorf("%s: I is larger than N", what)
	}
	return Shard{Index: idx, Total: total}, nil
}

// ciVars are the parallel-job variables of the CI systems that set them:
// the index variable, the total variable, and whether the index counts
// from 0.
var ciVars = []struct {
	ci, index, total string
	zeroBased        bool
}{
	// GitLab CI `parallel:` (docs.gitlab.com, predefined variables).
	{"GitLab CI", "CI_NODE_INDEX", "CI_NODE_TOTAL", false},
	// Buildkite `parallelism:` (buildkite.com/docs, environment variables).
	{"Buildkite", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", true},
	// CircleCI `parallelism:` (circleci.com/docs, built-in variables).
	{"CircleCI", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", true},
}

// FromEnv reads the part of the job from the CI's own variables through
// getenv (os.Getenv): GitLab's CI_NODE_INDEX/CI_NODE_TOTAL (1-based),
// Buildkite's BUILDKITE_PARALLEL_JOB/_COUNT and CircleCI's
// CIRCLE_NODE_INDEX/_TOTAL (0-based). It returns the zero Shard when no CI
// declares a split. Errors: a total above 1 without its index (the job
// would do everything, and every other job of the matrix too), and values
// that are not numbers or out of range, each naming the variables.
func FromEnv(getenv func(string) string) (Shard, error) {
	for _, v := range ciVars {
		t, i := getenv(v.total), getenv(v.index)
		if t == "" && i == "" {
			continue
		}
		what := fmt.Sprintf("%s %s=%q %s=%q", v.ci, v.index, i, v.total, t)
		total, err := strconv.Atoi(t)
		if err != nil {
			return Shard{}, fmt.Errorf("%s: %s is not a number", what, v.total)
		}
		if i == "" {
			if total > 1 {
				return Shard{}, fmt.Errorf("%s: the job is one of %d but has no index: refusing to do the work of every part (set %s, or give --shard I/N)", what, total, v.index)
			}
			return Shard{}, nil
		}
		idx, err := strconv.Atoi(i)
		if err != nil {
			return Shard{}, fmt.Errorf("%s: %s is not a number", what, v.index)
		}
		if v.zeroBased {
			idx++
		}
		s, err := check(idx, total, what)
		if err != nil || !s.Split() {
			return Shard{}, err
		}
		return s, nil
	}
	return Shard{}, nil
}
