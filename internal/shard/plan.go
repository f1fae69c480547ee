package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// Method names the assignment Assign makes, recorded in every result so
// that a merge of results made by another assignment is refused:
// destination repositories, largest first (by bytes, then by name), each
// to the part with the fewest bytes so far (the lowest index on a tie).
// A repository is never split: blobs are stored per repository, so two
// parts copying into one would copy its shared layers twice.
const Method = "repository-bytes-greedy/v1"

// Item is one image of the mirror work: its source reference, the
// destination repository it is copied to (host/path, no tag or digest),
// and its size in bytes (the manifests', config's and layers' sizes as the
// source's manifests declare them, every platform of an index).
type Item struct {
	Source     string `json:"source"`
	Repository string `json:"repository"`
	Bytes      int64  `json:"bytes"`
}

// Plan is the mirror work of a publish, the same in every part that
// computes it from the same inputs: its items sorted by repository then
// source, and their digest.
type Plan struct {
	Items []Item
	// Digest is "sha256:" and the hex SHA-256 of the items, one line per
	// item, "repository\tsource\tbytes\n", in order.
	Digest string
}

// NewPlan returns the plan of items (one per source and repository; a
// duplicate is kept once), sorted and digested.
func NewPlan(items []Item) Plan {
	seen := map[[2]string]bool{}
	var out []Item
	for _, it := range items {
		k := [2]string{it.Repository, it.Source}
		if !seen[k] {
			seen[k] = true
			out = append(out, it)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Repository != out[j].Repository {
			return out[i].Repository < out[j].Repository
		}
		return out[i].Source < out[j].Source
	})
	h := sha256.New()
	for _, it := range out {
		fmt.Fprintf(h, "%s\t%s\t%d\n", it.Repository, it.Source, it.Bytes)
	}
	return Plan{Items: out, Digest: "sha256:" + hex.EncodeToString(h.Sum(nil))}
}

// Assign returns the part (1 to n) of every destination repository of p,
// by Method. n < 1 counts as 1.
func (p Plan) Assign(n int) map[string]int {
	n = max(n, 1)
	bytes := map[string]int64{}
	for _, it := range p.Items {
		bytes[it.Repository] += it.Bytes
	}
	repos := make([]string, 0, len(bytes))
	for r := range bytes {
		repos = append(repos, r)
	}
	sort.Slice(repos, func(i, j int) bool {
		if bytes[repos[i]] != bytes[repos[j]] {
			return bytes[repos[i]] > bytes[repos[j]]
		}
		return repos[i] < repos[j]
	})
	load := make([]int64, n)
	out := map[string]int{}
	for _, r := range repos {
		least := 0
		for i := 1; i < n; i++ {
			if load[i] < load[least] {
				least = i
			}
		}
		load[least] += bytes[r]
		out[r] = least + 1
	}
	return out
}

// Part returns the items of p that part s copies (every item for the zero
// Shard), in plan order.
func (p Plan) Part(s Shard) []Item {
	if !s.Split() {
		return p.Items
	}
	at := p.Assign(s.Total)
	var out []Item
	for _, it := range p.Items {
		if at[it.Repository] == s.Index {
			out = append(out, it)
		}
	}
	return out
}

// Bytes sums the sizes of items.
func Bytes(items []Item) (n int64) {
	for _, it := range items {
		n += it.Bytes
	}
	return n
}

// Repositories returns the distinct repositories of items, sorted.
func Repositories(items []Item) []string {
	seen := map[string]bool{}
	var out []string
	for _, it := range items {
		if !seen[it.Repository] {
			seen[it.Repository] = true
			out = append(out, it.Repository)
		}
	}
	sort.Strings(out)
	return out
}

// String is a one-line account of the part s of p, for the log: "shard
// 2/5: 14 images in 6 repositories, 1.2 GB of 5.9 GB (plan sha256:…)".
func (p Plan) String(s Shard) string {
	part := p.Part(s)
	d := p.Digest
	if len(d) > 19 {
		d = d[:19]
	}
	return fmt.Sprintf("shard %s: %d images in %d repositories, %s of %s (plan %s, %s)", s, len(part), len(Repositories(part)), size(Bytes(part)), size(Bytes(p.Items)), d, Method)
}

func size(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	f, u := float64(n), 0
	for f >= 1000 && u < len(units)-1 {
		f /= 1000
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0") + " " + units[u]
}
