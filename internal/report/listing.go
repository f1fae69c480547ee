package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/rollout"
)

// Listing states of a version on a cluster (Listing).
const (
	Listed   = "listed"   // present: the cluster's catalog offers it
	Delisted = "delisted" // present: false (a tombstone): installed copies keep running
	// Waiting: not listed on the cluster, held by its gates
	// (publish.yaml clusters.<name>.after; ListedVersion.Waiting says why).
	Waiting = "waiting"
)

// Listing is what the catalog lists where (`publish list`), from the
// catalog repo alone: every artifact and version any cluster's state
// records, and on each cluster whether it is listed or delisted (absent:
// never published there). The JSON format is documented in
// docs/commands.md.
type Listing struct {
	// Commit is the catalog commit read.
	Commit string `json:"commit"`
	// Clusters are the clusters listed, sorted.
	Clusters  []string         `json:"clusters"`
	Artifacts []ListedArtifact `json:"artifacts"`
}

// ListedArtifact is one artifact of a Listing, its versions oldest first.
type ListedArtifact struct {
	Name     string          `json:"name"`
	Versions []ListedVersion `json:"versions"`
}

// ListedVersion is one version of a Listing and its state on each cluster
// that recorded it (Listed or Delisted).
type ListedVersion struct {
	Version  string            `json:"version"`
	Clusters map[string]string `json:"clusters"`
	// Waiting says, by cluster, why a version Waiting there is held:
	// the upstream cluster, when it may list, the reason.
	Waiting map[string]rollout.Wait `json:"waiting,omitempty"`
}

// NewListing builds the Listing of commit from the records of each
// cluster's state (states: cluster -> its records). A version is listed on
// a cluster when both it and its artifact are present there.
func NewListing(commit string, states map[string][]model.ArtifactRecord) *Listing {
	l := &Listing{Commit: commit, Clusters: []string{}, Artifacts: []ListedArtifact{}}
	byArt := map[string]map[string]map[string]string{} // artifact -> version -> cluster -> state
	for c, arts := range states {
		l.Clusters = append(l.Clusters, c)
		for _, a := range arts {
			if byArt[a.Name] == nil {
				byArt[a.Name] = map[string]map[string]string{}
			}
			for _, v := range a.Versions {
				if byArt[a.Name][v.Version] == nil {
					byArt[a.Name][v.Version] = map[string]string{}
				}
				st := Delisted
				if a.Present && v.Present {
					st = Listed
				}
				byArt[a.Name][v.Version][c] = st
			}
		}
	}
	sort.Strings(l.Clusters)
	for name, vs := range byArt {
		a := ListedArtifact{Name: name}
		for v, cs := range vs {
			a.Versions = append(a.Versions, ListedVersion{Version: v, Clusters: cs})
		}
		sort.Slice(a.Versions, func(i, j int) bool { return lessVersion(a.Versions[i].Version, a.Versions[j].Version) })
		l.Artifacts = append(l.Artifacts, a)
	}
	sort.Slice(l.Artifacts, func(i, j int) bool { return l.Artifacts[i].Name < l.Artifacts[j].Name })
	return l
}

// lessVersion orders versions by semver, text for what does not parse.
func lessVersion(a, b string) bool {
	va, ea := semver.Parse(a)
	vb, eb := semver.Parse(b)
	if ea == nil && eb == nil {
		return va.LT(vb)
	}
	return a < b
}

// cell is a version's state on cluster c as the table and Markdown show
// it: "listed", "delisted", "waiting until <time>" (UTC), "waiting for
// <upstream>" (not listed there yet), "due" (its gates passed: the next
// run lists it) or "-".
func (v ListedVersion) cell(c string) string {
	s, ok := v.Clusters[c]
	if !ok {
		return "-"
	}
	if s != Waiting {
		return s
	}
	w := v.Waiting[c]
	switch {
	case w.Upstream == "":
		return "due"
	case w.Health == rollout.Failed:
		return "held: failed on " + w.Upstream
	case w.Until.IsZero():
		return "waiting for " + w.Upstream
	}
	return "waiting until " + w.Until.UTC().Format("2006-01-02T15:04Z")
}

// AddWaiting marks artifact's version as Waiting on cluster with w (a zero
// w: its gates passed, and the next run lists it). A version the listing
// does not hold is added.
func (l *Listing) AddWaiting(cluster, artifact, version string, w rollout.Wait) {
	i := sort.Search(len(l.Artifacts), func(i int) bool { return l.Artifacts[i].Name >= artifact })
	if i == len(l.Artifacts) || l.Artifacts[i].Name != artifact {
		l.Artifacts = slices.Insert(l.Artifacts, i, ListedArtifact{Name: artifact})
	}
	a := &l.Artifacts[i]
	j := sort.Search(len(a.Versions), func(j int) bool { return !lessVersion(a.Versions[j].Version, version) })
	if j == len(a.Versions) || a.Versions[j].Version != version {
		a.Versions = slices.Insert(a.Versions, j, ListedVersion{Version: version, Clusters: map[string]string{}})
	}
	v := &a.Versions[j]
	v.Clusters[cluster] = Waiting
	if v.Waiting == nil {
		v.Waiting = map[string]rollout.Wait{}
	}
	v.Waiting[cluster] = w
}

// Table is the Listing as aligned text: one row per version, one column per
// cluster.
func (l *Listing) Table() string {
	head := append([]string{"ARTIFACT", "VERSION"}, l.Clusters...)
	rows := [][]string{head}
	for _, a := range l.Artifacts {
		for _, v := range a.Versions {
			row := []string{a.Name, v.Version}
			for _, c := range l.Clusters {
				row = append(row, v.cell(c))
			}
			rows = append(rows, row)
		}
	}
	width := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
			} else {
				fmt.Fprintf(&b, "%-*s  ", width[i], c)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Markdown is the Listing as a Markdown table, for a job summary.
func (l *Listing) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### What the catalog lists (commit %s)\n\n", ShortCommit(l.Commit))
	b.WriteString("| artifact | version | " + strings.Join(l.Clusters, " | ") + " |\n")
	b.WriteString("|---|---|" + strings.Repeat("---|", len(l.Clusters)) + "\n")
	for _, a := range l.Artifacts {
		for _, v := range a.Versions {
			var cells []string
			for _, c := range l.Clusters {
				cells = append(cells, v.cell(c))
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", a.Name, v.Version, strings.Join(cells, " | "))
		}
	}
	return b.String()
}

// ShortCommit is commit c cut to its first 12 characters, as the reports
// and logs show commits.
func ShortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// ShortCommitOr is ShortCommit of c, or none when c is "".
func ShortCommitOr(c, none string) string {
	if c == "" {
		return none
	}
	return ShortCommit(c)
}
