package shard

import (
	"fmt"
	"strings"
	"testing"
)

// TestParse: I/N is checked when the flag is read: 0, I > N, a missing
// part and words are refused with what to give.
func TestParse(t *testing.T) {
	for in, want := range map[string]Shard{"1/1": {1, 1}, "2/5": {2, 5}, " 7/7 ": {7, 7}, "256/256": {256, 256}} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":        "give I/N",
		"3":       "give I/N",
		"3/":      "give I/N",
		"/3":      "give I/N",
		"a/3":     "whole numbers",
		"0/3":     "I counts from 1",
		"4/3":     "I is larger than N",
		"1/0":     "N must be at least 1",
		"1/257":   "N is at most 256",
		"-1/3":    "I counts from 1",
		"1.5/3":   "whole numbers",
		"1/3/5":   "whole numbers",
		"one/two": "whole numbers",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want an error saying %q", in, err, want)
		}
	}
}

// TestFromEnv: GitLab's variables count from 1, Buildkite's and
// CircleCI's from 0; a job declared one of several without an index
// refuses to do everything.
func TestFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for name, tc := range map[string]struct {
		get  func(string) string
		want Shard
		err  string
	}{
		"none":               {env(), Shard{}, ""},
		"gitlab":             {env("CI_NODE_INDEX", "3", "CI_NODE_TOTAL", "4"), Shard{3, 4}, ""},
		"buildkite":          {env("BUILDKITE_PARALLEL_JOB", "0", "BUILDKITE_PARALLEL_JOB_COUNT", "4"), Shard{1, 4}, ""},
		"circleci":           {env("CIRCLE_NODE_INDEX", "3", "CIRCLE_NODE_TOTAL", "4"), Shard{4, 4}, ""},
		"one job":            {env("CI_NODE_TOTAL", "1"), Shard{}, ""},
		"gitlab no index":    {env("CI_NODE_TOTAL", "4"), Shard{}, "has no index: refusing"},
		"buildkite no index": {env("BUILDKITE_PARALLEL_JOB_COUNT", "2"), Shard{}, "set BUILDKITE_PARALLEL_JOB"},
		"gitlab zero":        {env("CI_NODE_INDEX", "0", "CI_NODE_TOTAL", "4"), Shard{}, "I counts from 1"},
		"circleci past end":  {env("CIRCLE_NODE_INDEX", "4", "CIRCLE_NODE_TOTAL", "4"), Shard{}, "I is larger than N"},
		"words":              {env("CI_NODE_INDEX", "x", "CI_NODE_TOTAL", "4"), Shard{}, "CI_NODE_INDEX is not a number"},
	} {
		got, err := FromEnv(tc.get)
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, %v; want %v, error %q", name, got, err, tc.want, tc.err)
		}
	}
}

// TestAssign: for N = 1 to 9 parts, every repository goes to exactly one
// part, the parts cover the plan, the assignment depends on the plan alone
// (not on the order of the items), parts beyond the repositories are
// empty, and the parts' bytes are balanced as the greedy method promises
// (no part exceeds the lightest by more than the largest repository).
func TestAssign(t *testing.T) {
	var items []Item
	for r := range 12 {
		for i := range r%3 + 1 {
			items = append(items, Item{Source: fmt.Sprintf("src.example.com/r%d:v%d", r, i), Repository: fmt.Sprintf("dst.example.com/m/r%d", r), Bytes: int64((r*7919)%1000+1) * 1000})
		}
	}
	p := NewPlan(items)
	rev := make([]Item, len(items))
	for i, it := range items {
		rev[len(items)-1-i] = it
	}
	if q := NewPlan(append(rev, items[0])); q.Digest != p.Digest {
		t.Errorf("the plan depends on the order of its items or on duplicates: %s, %s", p.Digest, q.Digest)
	}
	repoBytes := map[string]int64{}
	var largest int64
	for _, it := range p.Items {
		repoBytes[it.Repository] += it.Bytes
	}
	for _, b := range repoBytes {
		largest = max(largest, b)
	}
	for n := 1; n <= 15; n++ {
		seen := map[string]int{}
		var loads []int64
		count := 0
		for i := 1; i <= n; i++ {
			part := p.Part(Shard{i, n})
			count += len(part)
			loads = append(loads, Bytes(part))
			for _, r := range Repositories(part) {
				if o, ok := seen[r]; ok {
					t.Errorf("N=%d: %s in parts %d and %d", n, r, o, i)
				}
				seen[r] = i
			}
		}
		if count != len(p.Items) || len(seen) != len(repoBytes) {
			t.Errorf("N=%d: the parts hold %d items of %d repositories, the plan %d of %d", n, count, len(seen), len(p.Items), len(repoBytes))
		}
		lo, hi := loads[0], loads[0]
		for _, l := range loads {
			lo, hi = min(lo, l), max(hi, l)
		}
		if hi-lo > largest {
			t.Errorf("N=%d: loads %v: the heaviest exceeds the lightest by more than the largest repository (%d)", n, loads, largest)
		}
		if n > len(repoBytes) && lo != 0 {
			t.Errorf("N=%d: more parts than repositories, yet no part is empty: %v", n, loads)
		}
	}
	if got := p.String(Shard{2, 3}); !strings.HasPrefix(got, "shard 2/3: ") || !strings.Contains(got, Method) {
		t.Errorf("String: %s", got)
	}
}

// TestMatrix: the parts are capped at the CI system's limit and at the
// destination repositories, and printed in the shape each CI system reads.
func TestMatrix(t *testing.T) {
	for _, c := range []struct {
		want, repos int
		format      string
		n           int
	}{{8, 0, FormatGitHub, 8}, {300, 0, FormatGitHub, 256}, {300, 0, FormatGitLab, 200}, {8, 3, FormatTekton, 3}, {0, 5, FormatArgo, 1}} {
		if n, err := MatrixParts(c.want, c.repos, c.format); err != nil || n != c.n {
			t.Errorf("MatrixParts(%d, %d, %s) = %d, %v; want %d", c.want, c.repos, c.format, n, err, c.n)
		}
	}
	if _, err := MatrixParts(2, 0, "jenkins"); err == nil || !strings.Contains(err.Error(), "--matrix-format") {
		t.Errorf("an unknown format: %v", err)
	}
	for format, want := range map[string]string{
		FormatGitHub: `{"shard":["1/2","2/2"]}`,
		FormatTekton: `[{"name":"shard","value":["1/2","2/2"]}]`,
		FormatArgo:   `["1/2","2/2"]`,
		FormatGitLab: `2`,
	} {
		if got, err := Matrix(2, format); err != nil || got != want {
			t.Errorf("Matrix(2, %s) = %s, %v; want %s", format, got, err, want)
		}
	}
}
