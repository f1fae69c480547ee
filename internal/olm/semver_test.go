package olm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestArchetype puts a bundle in the most stable archetype its channels
// name, stable by default.
func TestArchetype(t *testing.T) {
	for _, tc := range []struct {
		channels []string
		want     string
	}{
		{nil, "stable"},
		{[]string{"alpha"}, "stable"},
		{[]string{"candidate-v1"}, "candidate"},
		{[]string{"candidate", "fast"}, "fast"},
		{[]string{"fast-2.x", "stable-v2"}, "stable"},
		{[]string{"stablish"}, "stable"},
		{[]string{"fastest", "candidate"}, "candidate"},
	} {
		if got := Archetype(tc.channels); got != tc.want {
			t.Errorf("Archetype(%v) = %s, want %s", tc.channels, got, tc.want)
		}
	}
	if _, err := ParseStream("patch"); err == nil {
		t.Error("defaultChannelTypePreference patch accepted")
	}
}

// semverCorpus publishes three packages of the shared corpus to reg
// (testenv.BuildCorpus of a corpus holding only them): akka-cluster-operator
// (five versions, two major), hawtio-operator (three) and etcd (one), and
// returns their entries by package.
func semverCorpus(t *testing.T, ctx context.Context, reg *testenv.Registry) map[string][]Entry {
	t.Helper()
	shared := testenv.RequireShared(t)
	corpus := t.TempDir()
	for _, p := range []string{"packagemanifests/akka-cluster-operator", "packagemanifests/hawtio-operator", "community-operators/etcd"} {
		if err := os.MkdirAll(filepath.Join(corpus, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-r", filepath.Join(shared, "corpus", p), filepath.Join(corpus, p)).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	c, err := testenv.BuildCorpus(ctx, corpus, reg.Host, t.TempDir(), reg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Entry{}
	for _, p := range c.Packages {
		ref := reg.Host + "/bundles/" + p.Package + "@" + p.BundleDigest
		b, err := bundle.Fetch(ctx, ref, reg.Options()...)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		out[p.Package] = append(out[p.Package], Entry{Bundle: b, Image: ref})
	}
	if len(out) != 3 || len(out["akka-cluster-operator"]) != 5 || len(out["hawtio-operator"]) != 3 {
		t.Fatalf("corpus: %d packages (%d akka, %d hawtio bundles), want 3 (5, 3)", len(out), len(out["akka-cluster-operator"]), len(out["hawtio-operator"]))
	}
	return out
}

// TestSemverChannelsOpm builds the catalog of three corpus packages with
// semver channel streams and compares it with `opm alpha render-template
// semver --migrate-level bundle-object-to-csv-metadata` (opm v1.73.0) of
// the same bundle images (the template SemverTemplate writes): the same
// channels, with the same entries, replaces and skips, the same default
// channel, and the same bundles; for akka-cluster-operator with either
// default channel type.
func TestSemverChannelsOpm(t *testing.T) {
	opm := requireOPM(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	ctx := context.Background()
	env := opmEnv(t, reg)
	pkgs := semverCorpus(t, ctx, reg)
	names := []string{"akka-cluster-operator", "etcd", "hawtio-operator"}
	for _, tc := range []struct{ pkg, pref string }{
		{names[0], StreamMinor}, {names[0], StreamMajor}, {names[1], ""}, {names[2], StreamMinor},
	} {
		t.Run(tc.pkg+" "+tc.pref, func(t *testing.T) {
			cfg, err := Build([]Package{{Name: tc.pkg, Entries: pkgs[tc.pkg], Semver: &Semver{DefaultChannelType: tc.pref}}}, FormatCSVMetadata)
			if err != nil {
				t.Fatal(err)
			}
			chs := map[string][]string{}
			for _, e := range pkgs[tc.pkg] {
				chs[e.Bundle.CSVName] = e.Bundle.Channels
			}
			tmpl, err := SemverTemplate(cfg.Bundles, chs, tc.pref)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "semver.yaml")
			if err := os.WriteFile(file, []byte(tmpl), 0o644); err != nil {
				t.Fatal(err)
			}
			theirs, err := declcfg.LoadReader(bytes.NewReader(runOPM(t, opm, env, "alpha", "render-template", "semver", file, "-o", "json", "--migrate-level", "bundle-object-to-csv-metadata")))
			if err != nil {
				t.Fatal(err)
			}
			if len(theirs.Packages) != 1 || theirs.Packages[0].DefaultChannel != cfg.Packages[0].DefaultChannel {
				t.Errorf("default channel %s, opm's %+v", cfg.Packages[0].DefaultChannel, theirs.Packages)
			}
			for i := range theirs.Channels {
				theirs.Channels[i].Entries = sortEntries(theirs.Channels[i].Entries)
			}
			sort.Slice(theirs.Channels, func(i, j int) bool { return theirs.Channels[i].Name < theirs.Channels[j].Name })
			if !reflect.DeepEqual(cfg.Channels, theirs.Channels) {
				t.Errorf("channels differ from opm's semver template:\nours: %+v\nopm:  %+v", cfg.Channels, theirs.Channels)
			}
			ours := map[string]declcfg.Bundle{}
			for _, b := range cfg.Bundles {
				ours[b.Image] = b
			}
			for _, b := range theirs.Bundles {
				compareBundles(t, ours[b.Image], b)
			}
			var got []string
			for _, c := range cfg.Channels {
				got = append(got, c.Name)
			}
			t.Logf("%s: channels %v, default %s", tc.pkg, got, cfg.Packages[0].DefaultChannel)
		})
	}
}
