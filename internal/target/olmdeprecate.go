package target

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	semver "github.com/blang/semver/v4"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
)

// DefaultDeprecationPeriod is how long a delisted version stays in the
// olm target's catalog, deprecated, when publish.yaml sets no
// clusters.<cluster>.olm.deprecationPeriod: 30 days.
const DefaultDeprecationPeriod = 30 * 24 * time.Hour

// ParseDeprecationPeriod reads clusters.<cluster>.olm.deprecationPeriod of
// publish.yaml: "" is DefaultDeprecationPeriod; a whole number of days
// ("30d", or "30" alone), or a Go duration (time.ParseDuration: "720h",
// "90m"); "0" removes delisted versions at once. Errors: a negative period
// or text of neither form, saying what to write.
func ParseDeprecationPeriod(s string) (time.Duration, error) {
	if s == "" {
		return DefaultDeprecationPeriod, nil
	}
	days := strings.TrimSuffix(s, "d")
	if n, err := strconv.Atoi(days); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("deprecationPeriod: %q: want 0 or more days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("deprecationPeriod: %q: want a number of days (30d) or a Go duration (720h); 0 removes delisted versions at once", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("deprecationPeriod: %q: want 0 or a positive duration", s)
	}
	return d, nil
}

// Delisting is what the olm target does with one delisted version (one
// whose record, or whose artifact's record, is not present) that the
// catalog held at the cluster's last publish or holds now.
type Delisting struct {
	Artifact, Version string
	// Whole: the whole artifact is delisted (a package-level deprecation).
	Whole bool
	// Since is when it was delisted: the time of the catalog commit that
	// delisted it (catalog.History.Since), or now when this run delists it.
	Since time.Time
	// Until is Since plus the deprecation period: when it leaves the catalog.
	Until time.Time
	// Kept: it stays in the catalog, deprecated (now is before Until).
	Kept bool
	// Removed: it leaves the catalog in this run (it was in the catalog
	// at the last publish, or is delisted now with a period of 0).
	Removed bool
}

// Line is the plan's line for d: "<artifact> <version>: deprecated until
// <date>, then removed" or "<artifact> <version>: removed", dates in UTC
// (RFC 3339, to the minute).
func (d Delisting) Line() string {
	what := d.Artifact + " " + d.Version
	if d.Kept {
		return fmt.Sprintf("%s: deprecated until %s, then removed", what, d.Until.UTC().Format("2006-01-02T15:04Z"))
	}
	return what + ": removed"
}

// Delistings returns what happens to every delisted version of arts with
// a bundle digest, by artifact and version, given the catalog history h of
// the cluster (nil: none, so every delisted version counts as delisted
// now), the times recorded for the versions the last catalog image kept
// deprecated (olm.Entry.DelistedSince; nil: none), the time now and the
// deprecation period. A version h records as delisted counts from that
// event's time; when h is cut short (Truncated) and that event is the
// first h has of the version, the delisting may be older than the walk:
// the recorded time counts when there is one (and is earlier), and a
// version without one was not kept by the last catalog, so it is left
// out. A version h records as
// listed, or not at all, is delisted by this run and counts from now. It
// is Kept while now is before Since plus period; it is Removed when not
// kept but still in the catalog at the last publish (delisted by this
// run, or with Until after h.Last). Versions removed at an earlier publish
// are left out.
func Delistings(arts []model.ArtifactRecord, h *catalog.History, recorded map[model.Key]time.Time, now time.Time, period time.Duration) []Delisting {
	var out []Delisting
	for _, a := range arts {
		for _, v := range a.Versions {
			if a.Present && v.Present || v.BundleDigest == "" {
				continue
			}
			d := Delisting{Artifact: a.Name, Version: v.Version, Whole: !a.Present, Since: now}
			var last time.Time
			byRun := true // delisted by this run
			if h != nil {
				if ev, ok := h.Since(a.Name, v.Version); ok && !ev.Present {
					d.Since, byRun = ev.Time, false
					if h.Truncated && len(h.Events(a.Name, v.Version)) == 1 {
						r, ok := recorded[model.Key{Artifact: a.Name, Version: v.Version}]
						if !ok {
							continue // delisted before the walk, and not kept
						}
						if r.Before(d.Since) {
							d.Since = r
						}
					}
				}
				last = h.Last
			}
			d.Until = d.Since.Add(period)
			d.Kept = period > 0 && now.Before(d.Until)
			d.Removed = !d.Kept && (byRun || d.Until.After(last))
			if d.Kept || d.Removed {
				out = append(out, d)
			}
		}
	}
	return out
}

// newestListed returns the newest version of a (semver order) that is
// listed, "" when none is.
func newestListed(a model.ArtifactRecord) string {
	if !a.Present {
		return ""
	}
	var best semver.Version
	name := ""
	for _, v := range a.Versions {
		if !v.Present {
			continue
		}
		sv, err := semver.ParseTolerant(v.Version)
		if err != nil {
			continue
		}
		if name == "" || sv.GT(best) {
			best, name = sv, v.Version
		}
	}
	return name
}

// deprecationMessages returns the olm.deprecations messages of ds for the
// artifacts arts: per version (model.Key) the bundle's, naming when it
// leaves the catalog and the newest listed version to upgrade to, and per
// artifact delisted whole the package's.
func deprecationMessages(ds []Delisting, arts []model.ArtifactRecord) (bundles map[model.Key]string, pkgs map[string]string) {
	bundles, pkgs = map[model.Key]string{}, map[string]string{}
	byName := map[string]model.ArtifactRecord{}
	for _, a := range arts {
		byName[a.Name] = a
	}
	for _, d := range ds {
		if !d.Kept {
			continue
		}
		date := d.Until.UTC().Format("2006-01-02")
		msg := defaultPrefix(d.Artifact, d.Version) + date
		if n := newestListed(byName[d.Artifact]); n != "" {
			msg += fmt.Sprintf(": upgrade to %s, the newest published version", n)
		}
		bundles[model.Key{Artifact: d.Artifact, Version: d.Version}] = msg
		if d.Whole {
			if _, ok := pkgs[d.Artifact]; !ok || date > pkgs[d.Artifact] {
				pkgs[d.Artifact] = date
			}
		}
	}
	for p, date := range pkgs {
		pkgs[p] = fmt.Sprintf("%s is no longer published: its bundles leave this catalog by %s", p, date)
	}
	return bundles, pkgs
}

// defaultPrefix starts the default message of a delisted version
// (deprecationMessages), which names the end of its period: such a
// message in the last catalog is written anew, with the period of now.
func defaultPrefix(artifact, version string) string {
	return fmt.Sprintf("%s %s is no longer published and leaves this catalog after ", artifact, version)
}

// sortDelistings orders ds by artifact, then version.
func sortDelistings(ds []Delisting) {
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].Artifact != ds[j].Artifact {
			return ds[i].Artifact < ds[j].Artifact
		}
		return ds[i].Version < ds[j].Version
	})
}

// period is the cluster's deprecation period (checked by Check; a bad
// value there is 0 here).
func (t *olmTarget) period() time.Duration {
	d, _ := ParseDeprecationPeriod(t.s.OLM.DeprecationPeriod)
	return d
}

// WantsHistory reports whether the target reads the catalog history: when
// its deprecation period is not 0 (HistoryUser).
func (t *olmTarget) WantsHistory() bool { return t.period() > 0 }

// UseHistory keeps h, the catalog history of the cluster, for the
// deprecation periods (HistoryUser). A history cut short (a remote catalog
// is fetched at depth 1) cannot date the versions delisted before its
// oldest commit: a run takes the time the last catalog image recorded
// (Delistings), a plan, which reads no image, leaves them out; the log
// says so.
func (t *olmTarget) UseHistory(h *catalog.History) {
	t.history = h
	if h != nil && h.Truncated {
		t.s.logf("olm: the catalog history is shallow (%d commits read): a version delisted before them is dated by the last catalog image (run; the plan leaves it out)", h.Commits)
	}
}

// delistings returns Delistings of arts by the target's history, clock
// and period, sorted by artifact and version. A period that does not
// parse is an input error naming publish.yaml.
func (t *olmTarget) delistings(arts []model.ArtifactRecord) ([]Delisting, error) {
	p, err := ParseDeprecationPeriod(t.s.OLM.DeprecationPeriod)
	if err != nil {
		return nil, model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.%w", t.s.Cluster, err))
	}
	recorded := map[model.Key]time.Time{}
	for k, e := range t.delisted {
		if !e.DelistedSince.IsZero() {
			recorded[k] = e.DelistedSince
		}
	}
	ds := Delistings(arts, t.history, recorded, t.s.now(), p)
	sortDelistings(ds)
	return ds, nil
}

// keepDelisted keeps, for Render, the entries of the last catalog image
// prev (nil: none could be read) of every version of state that vs does
// not list: those a deprecation period may keep in the catalog. Nothing
// is kept with a period of 0.
func (t *olmTarget) keepDelisted(prev *olm.Previous, vs []*model.Version, state *gitops.State) {
	t.delisted = map[model.Key]olm.Entry{}
	if prev == nil || t.period() == 0 {
		return
	}
	listed := map[model.Key]bool{}
	for _, v := range vs {
		listed[v.Key()] = true
	}
	for _, a := range state.Artifacts {
		for _, v := range a.Versions {
			k := model.Key{Artifact: a.Name, Version: v.Version}
			if listed[k] || v.BundleDigest == "" {
				continue
			}
			if e, ok := prev.Entry(a.Registry+"/"+a.Repository+"@"+v.BundleDigest, t.s.OLM.BundleFormat); ok {
				t.delisted[k] = e
			}
		}
	}
}

// catalogPackages returns the packages of the catalog of arts: each
// listed version, its bundle read in this run or its entry reused from
// the last catalog image, deprecated when its PackageManifest has a
// spec.deprecation.message; and each delisted version its deprecation
// period keeps (Delistings), from the last catalog image, with the
// olm.deprecations message it had there (its PackageManifest's, or the
// first default) or the default (deprecationMessages); an artifact
// delisted whole keeps its package,
// deprecated, while it has such versions. A kept version whose entry the
// last catalog image does not have (it could not be read) leaves the
// catalog now, with a warning. Errors: a listed version whose bundle was
// not read, a deprecation period that does not parse.
func (t *olmTarget) catalogPackages(arts []model.ArtifactRecord) ([]olm.Package, error) {
	ds, err := t.delistings(arts)
	if err != nil {
		return nil, err
	}
	kept := map[model.Key]time.Time{} // the kept versions: when delisted
	for _, d := range ds {
		if d.Kept {
			kept[model.Key{Artifact: d.Artifact, Version: d.Version}] = d.Since
		}
	}
	msgs, pkgMsgs := deprecationMessages(ds, arts)
	var pkgs []olm.Package
	for _, a := range arts {
		p := olm.Package{Name: a.Name}
		if t.s.OLM.Channels == ChannelsSemver {
			p.Semver = &olm.Semver{DefaultChannelType: t.s.OLM.DefaultChannelType}
		}
		for _, v := range a.Versions {
			k := model.Key{Artifact: a.Name, Version: v.Version}
			image := a.Registry + "/" + a.Repository + "@" + v.BundleDigest
			if !a.Present || !v.Present {
				since, ok := kept[k]
				if !ok {
					continue // delisted: the bundle leaves the catalog
				}
				e, ok := t.delisted[k]
				if !ok || e.Image != image {
					t.s.warnf("olm: %s %s is delisted and within its deprecation period, but the last catalog image has no entry for %s: it leaves the catalog now", a.Name, v.Version, image)
					continue
				}
				if e.Deprecated == "" || strings.HasPrefix(e.Deprecated, defaultPrefix(a.Name, v.Version)) {
					e.Deprecated = msgs[k] // the default, anew; else the last catalog's (its PackageManifest's)
				}
				e.Source, e.DelistedSince = gitops.StatePath(t.s.Cluster)+": "+a.Name+" "+v.Version+" (delisted)", since
				p.Entries = append(p.Entries, e)
				continue
			}
			if e, ok := t.reused[k]; ok && e.Image == image && t.bundles[k] == nil {
				e.Source, e.Deprecated, e.DelistedSince = t.where[k], t.messages[k], time.Time{}
				p.Entries = append(p.Entries, e)
				continue
			}
			if e, ok := t.published[k]; ok && e.Image == image {
				// Read again, but the record keeps the published bundle.
				e.Source, e.Deprecated, e.DelistedSince = t.where[k], t.messages[k], time.Time{}
				p.Entries = append(p.Entries, e)
				continue
			}
			b := t.bundles[k]
			if b == nil || v.BundleDigest == "" {
				return nil, fmt.Errorf("olm target: %s %s is listed but its bundle was not read or mirrored", a.Name, v.Version)
			}
			p.Entries = append(p.Entries, olm.Entry{Bundle: b, Image: image, Source: t.where[k], Deprecated: t.messages[k]})
		}
		if !a.Present && len(p.Entries) > 0 {
			p.Deprecated = pkgMsgs[a.Name]
		}
		if len(p.Entries) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs, nil
}

// withKept returns arts with the delisted versions that pkgs (the built
// catalog, catalogPackages) keep, deprecated, marked present, and their
// artifacts too: the image redirection then keeps covering the related
// images of every bundle the catalog holds. arts is not changed.
func withKept(arts []model.ArtifactRecord, pkgs []olm.Package) []model.ArtifactRecord {
	kept := map[string]bool{}
	for _, p := range pkgs {
		for _, e := range p.Entries {
			if e.Deprecated != "" {
				kept[e.Image] = true
			}
		}
	}
	if len(kept) == 0 {
		return arts
	}
	out := make([]model.ArtifactRecord, len(arts))
	for i, a := range arts {
		a.Versions = append([]model.VersionRecord(nil), a.Versions...)
		whole, some := !a.Present, false
		for j, v := range a.Versions {
			k := kept[a.Registry+"/"+a.Repository+"@"+v.BundleDigest]
			some = some || k
			// Of an artifact delisted whole, only the kept versions.
			a.Versions[j].Present = k || v.Present && !whole
		}
		a.Present = a.Present || some
		out[i] = a
	}
	return out
}
