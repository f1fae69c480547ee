package manifest

import "strings"

// oursKind reports whether a file named manifest.yaml with this kind and
// apiVersion is meant as a PackageManifest: its kind is PackageManifest in
// any case or a misspelling of it (at most 3 edits away: PackageManfest,
// PackageManifests), or its apiVersion is in the PackageManifest's group
// (app.alauda.cn). Such a file that is wrong is an error (Parse says
// why), never skipped: a skipped version is delisted without a word.
// Files of other kinds (a ConfigMap) are not ours.
func oursKind(kind, apiVersion string) bool {
	if strings.EqualFold(kind, Kind) || EditDistance(strings.ToLower(kind), strings.ToLower(Kind)) <= 3 {
		return true
	}
	group, _, _ := strings.Cut(APIVersion, "/")
	g, _, ok := strings.Cut(apiVersion, "/")
	return ok && strings.EqualFold(g, group)
}

// EditDistance is the Levenshtein distance of a and b, in bytes, for
// "did you mean" suggestions; strings over 64 bytes are 64 apart (nothing
// that long is a misspelling worth suggesting).
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
