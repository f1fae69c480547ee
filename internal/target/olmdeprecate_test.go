package target

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
)

// tinyRecord is artifact tiny (present or delisted whole) with versions
// 1.0.0 and 1.1.0, 1.1.0 listed or not.
func tinyRecord(present, v11 bool) model.ArtifactRecord {
	return model.ArtifactRecord{Name: "tiny", Present: present, Registry: "dst.example", Repository: "tiny/bundle", Versions: []model.VersionRecord{
		{Version: "1.0.0", Tag: "v1.0.0", Present: true, BundleDigest: "sha256:" + strings.Repeat("a", 64)},
		{Version: "1.1.0", Tag: "v1.1.0", Present: v11, BundleDigest: "sha256:" + strings.Repeat("b", 64)},
	}}
}

// historyOf commits, in a new catalog repo, the state of cluster edge
// holding each of arts at its time, and returns the repo's History.
func historyOf(t *testing.T, states []model.ArtifactRecord, at []time.Time) *catalog.History {
	t.Helper()
	return cutHistoryOf(t, states, at, -1)
}

// cutHistoryOf is historyOf with the commit of states[cut] (a loose
// object) deleted, so that the walk stops at its child, as at the
// boundary of a shallow clone; cut < 0 deletes none.
func cutHistoryOf(t *testing.T, states []model.ArtifactRecord, at []time.Time, cut int) *catalog.History {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	var commits []string
	for i, a := range states {
		st := &gitops.State{APIVersion: gitops.StateAPIVersion, Kind: gitops.StateKind, Artifacts: []model.ArtifactRecord{a}}
		data, err := st.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(gitops.StatePath("edge")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(gitops.StatePath("edge")); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "publish", Email: "publish@example.com", When: at[i]}
		c, err := wt.Commit("publish", &git.CommitOptions{Author: sig, Committer: sig})
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, c.String())
	}
	if cut >= 0 {
		h := commits[cut]
		if err := os.Remove(filepath.Join(dir, ".git", "objects", h[:2], h[2:])); err != nil {
			t.Fatal(err)
		}
		if repo, err = git.PlainOpen(dir); err != nil {
			t.Fatal(err)
		}
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	h, err := catalog.ReadHistory(context.Background(), repo.Storer, head.Hash(), "", "edge")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestDelistingsShallowHistory: when the history is cut short and the
// version is delisted at the first commit it reads, the time the last
// catalog image recorded (olm.Entry.DelistedSince) dates the delisting,
// when earlier; without one, the last catalog did not keep it: nothing is
// said of it (it is not taken for delisted at the first commit read).
func TestDelistingsShallowHistory(t *testing.T) {
	day := 24 * time.Hour
	t0 := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	later := tinyRecord(true, false)
	later.Description = "a later publish"
	h := cutHistoryOf(t, []model.ArtifactRecord{tinyRecord(true, true), tinyRecord(true, false), later}, []time.Time{t0, t0.Add(20 * day), t0.Add(40 * day)}, 1)
	if !h.Truncated || !h.Last.Equal(t0.Add(40*day)) {
		t.Fatalf("history: truncated %v, last %v", h.Truncated, h.Last)
	}
	arts := []model.ArtifactRecord{later}
	recorded := map[model.Key]time.Time{{Artifact: "tiny", Version: "1.1.0"}: t0.Add(20 * day)}
	if ds := Delistings(arts, h, nil, t0.Add(55*day), 30*day); len(ds) != 0 {
		t.Errorf("no recorded time: %+v", ds)
	}
	if ds := Delistings(arts, h, recorded, t0.Add(55*day), 30*day); len(ds) != 1 || ds[0].Kept || !ds[0].Removed || !ds[0].Since.Equal(t0.Add(20*day)) {
		t.Errorf("recorded time: %+v", ds)
	}
	// A whole history: the recorded time is not needed, nor taken.
	full := historyOf(t, []model.ArtifactRecord{tinyRecord(true, true), tinyRecord(true, false)}, []time.Time{t0, t0.Add(30 * day)})
	if ds := Delistings(arts, full, recorded, t0.Add(55*day), 30*day); len(ds) != 1 || !ds[0].Kept || !ds[0].Since.Equal(t0.Add(30*day)) {
		t.Errorf("full history: %+v", ds)
	}
}

// TestDelistingsPeriod: the deprecation period counts from the catalog
// commit that delisted a version, by an injected clock: delisted 10 days
// ago with a 30-day period it is kept, deprecated until the 30th day; 31
// days ago it is removed by this run (it was in the catalog at the last
// publish) and, once a later publish is committed, no longer reported;
// delisted by this run with a period of 0 it is removed at once; an
// artifact delisted whole is kept whole.
func TestDelistingsPeriod(t *testing.T) {
	day := 24 * time.Hour
	listed := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	delisted := listed.Add(20 * day)
	h := historyOf(t, []model.ArtifactRecord{tinyRecord(true, true), tinyRecord(true, false)}, []time.Time{listed, delisted})
	arts := []model.ArtifactRecord{tinyRecord(true, false)}
	period := 30 * day

	ds := Delistings(arts, h, nil, delisted.Add(10*day), period)
	if len(ds) != 1 || !ds[0].Kept || ds[0].Removed || !ds[0].Since.Equal(delisted) || !ds[0].Until.Equal(delisted.Add(period)) {
		t.Fatalf("10 days after: %+v", ds)
	}
	if got, want := ds[0].Line(), "tiny 1.1.0: deprecated until 2026-11-20T09:00Z, then removed"; got != want {
		t.Errorf("plan line %q, want %q", got, want)
	}
	msgs, pkgs := deprecationMessages(ds, arts)
	if got := msgs[model.Key{Artifact: "tiny", Version: "1.1.0"}]; got != "tiny 1.1.0 is no longer published and leaves this catalog after 2026-11-20: upgrade to 1.0.0, the newest published version" || len(pkgs) != 0 {
		t.Errorf("messages %q %v", got, pkgs)
	}

	ds = Delistings(arts, h, nil, delisted.Add(31*day), period)
	if len(ds) != 1 || ds[0].Kept || !ds[0].Removed || ds[0].Line() != "tiny 1.1.0: removed" {
		t.Fatalf("31 days after: %+v", ds)
	}
	// A publish after the period ended (the catalog commit that removed
	// it): nothing more to say.
	later := historyOf(t, []model.ArtifactRecord{tinyRecord(true, true), tinyRecord(true, false), func() model.ArtifactRecord {
		a := tinyRecord(true, false)
		a.Description = "a later publish"
		return a
	}()}, []time.Time{listed, delisted, delisted.Add(31 * day)})
	if ds := Delistings(arts, later, nil, delisted.Add(32*day), period); len(ds) != 0 {
		t.Errorf("after the removal was published: %+v", ds)
	}

	// Delisted by this run: the history still lists it.
	before := historyOf(t, []model.ArtifactRecord{tinyRecord(true, true)}, []time.Time{listed})
	now := listed.Add(day)
	if ds := Delistings(arts, before, nil, now, 0); len(ds) != 1 || ds[0].Kept || !ds[0].Removed {
		t.Errorf("period 0: %+v", ds)
	}
	if ds := Delistings(arts, before, nil, now, period); len(ds) != 1 || !ds[0].Kept || !ds[0].Since.Equal(now) {
		t.Errorf("delisted now, 30 days: %+v", ds)
	}

	// The whole artifact delisted now: both versions kept, and a package
	// message.
	whole := []model.ArtifactRecord{tinyRecord(false, true)}
	ds = Delistings(whole, before, nil, now, period)
	if len(ds) != 2 || !ds[0].Whole || !ds[0].Kept || !ds[1].Kept {
		t.Fatalf("whole artifact: %+v", ds)
	}
	_, pkgs = deprecationMessages(ds, whole)
	if pkgs["tiny"] != "tiny is no longer published: its bundles leave this catalog by 2026-11-01" {
		t.Errorf("package message %q", pkgs["tiny"])
	}
}

// TestParseDeprecationPeriod: days, Go durations, the default and 0.
func TestParseDeprecationPeriod(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": 30 * 24 * time.Hour, "0": 0, "30d": 30 * 24 * time.Hour, "7": 7 * 24 * time.Hour, "720h": 720 * time.Hour, "90m": 90 * time.Minute,
	} {
		if got, err := ParseDeprecationPeriod(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"a month", "-1d", "-5h", "1w"} {
		if _, err := ParseDeprecationPeriod(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// TestWithKept: the image redirection sees the versions the catalog keeps
// deprecated as present, the others as they are, and of an artifact
// delisted whole only the kept ones.
func TestWithKept(t *testing.T) {
	a := tinyRecord(false, true)
	kept := olm.Entry{Image: a.Registry + "/" + a.Repository + "@" + a.Versions[1].BundleDigest, Deprecated: "gone"}
	got := withKept([]model.ArtifactRecord{a}, []olm.Package{{Name: "tiny", Entries: []olm.Entry{kept}}})
	if !got[0].Present || got[0].Versions[0].Present || !got[0].Versions[1].Present || a.Present {
		t.Errorf("withKept: %+v (input %+v)", got[0], a)
	}
	listed := tinyRecord(true, false)
	got = withKept([]model.ArtifactRecord{listed}, []olm.Package{{Name: "tiny", Entries: []olm.Entry{kept}}})
	if !got[0].Versions[0].Present || !got[0].Versions[1].Present || listed.Versions[1].Present {
		t.Errorf("withKept, listed artifact: %+v", got[0])
	}
}
