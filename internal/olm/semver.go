package olm

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	semvertemplate "github.com/operator-framework/operator-registry/alpha/template/semver"
)

// Channel stream types of opm's semver template (defaultChannelTypePreference):
// which of a package's generated channels is its default.
const (
	// StreamMinor prefers the minor-version channel (stable-v1.2), the
	// template's default when it generates both.
	StreamMinor = "minor"
	// StreamMajor prefers the rolling major-version channel (stable-v1).
	StreamMajor = "major"
)

// Semver asks Build for channel streams instead of the channels the
// bundles name: what operator-registry's semver template (`opm alpha
// render-template semver`, alpha/template/semver in v1.73.0) generates for
// the package's bundles, with both generateMinorChannels and
// generateMajorChannels. Channels are named
// <candidate|fast|stable>-v<major>.<minor> and <...>-v<major>; within a
// minor channel the newest bundle replaces the newest of the previous minor
// version and skips the other versions of its own, the major channel links
// its minor versions likewise.
type Semver struct {
	// DefaultChannelType is the template's defaultChannelTypePreference,
	// StreamMinor ("" too) or StreamMajor: the package's default channel is
	// the newest channel of that type in the most stable archetype.
	DefaultChannelType string
}

// ParseStream checks a defaultChannelTypePreference ("" is StreamMinor);
// the error names the valid values.
func ParseStream(s string) (string, error) {
	switch s {
	case "", StreamMinor:
		return StreamMinor, nil
	case StreamMajor:
		return StreamMajor, nil
	}
	return "", fmt.Errorf("defaultChannelTypePreference %q: want %s (the default) or %s", s, StreamMinor, StreamMajor)
}

// Archetype returns the semver template archetype (candidate, fast or
// stable) a bundle with channels (metadata/annotations.yaml) goes into:
// the most stable one that one of its channels is named after, exactly or
// as a prefix followed by "-" (stable-v1, fast-2.x); stable when none is.
func Archetype(channels []string) string {
	best := ""
	rank := map[string]int{"candidate": 1, "fast": 2, "stable": 3}
	for _, c := range channels {
		for a := range rank {
			if (c == a || strings.HasPrefix(c, a+"-")) && rank[a] > rank[best] {
				best = a
			}
		}
	}
	if best == "" {
		return "stable"
	}
	return best
}

// SemverTemplate returns the semver template (schema olm.semver, YAML) of
// bundles: each bundle image under the archetype of its channels
// (Archetype), both channel kinds generated, pref as the default channel
// type. `opm alpha render-template semver` of it renders the same channels
// as Build with Semver.
func SemverTemplate(bundles []declcfg.Bundle, channels map[string][]string, pref string) (string, error) {
	pref, err := ParseStream(pref)
	if err != nil {
		return "", err
	}
	by := map[string][]string{}
	for _, b := range bundles {
		a := Archetype(channels[b.Name])
		by[a] = append(by[a], b.Image)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\ndefaultChannelTypePreference: %s\n", pref)
	for _, a := range []string{"candidate", "fast", "stable"} {
		if len(by[a]) == 0 {
			continue
		}
		sort.Strings(by[a])
		fmt.Fprintf(&s, "%s:\n  bundles:\n", a)
		for _, img := range by[a] {
			fmt.Fprintf(&s, "  - image: %q\n", img)
		}
	}
	return s.String(), nil
}

// semverChannels returns the channels and the default channel that
// operator-registry's semver template generates for bundles, the
// olm.bundle entries of one package (their channels by bundle name),
// running the template in process with bundles as what it renders.
func semverChannels(bundles []declcfg.Bundle, channels map[string][]string, o Semver) ([]declcfg.Channel, string, error) {
	tmpl, err := SemverTemplate(bundles, channels, o.DefaultChannelType)
	if err != nil {
		return nil, "", err
	}
	byImage := map[string]declcfg.Bundle{}
	for _, b := range bundles {
		if _, dup := byImage[b.Image]; dup {
			return nil, "", fmt.Errorf("semver channels: two bundles have the image %s", b.Image)
		}
		byImage[b.Image] = b
	}
	render := func(_ context.Context, image string) (*declcfg.DeclarativeConfig, error) {
		b, ok := byImage[image]
		if !ok {
			return nil, fmt.Errorf("semver channels: no bundle %s", image)
		}
		return &declcfg.DeclarativeConfig{Bundles: []declcfg.Bundle{b}}, nil
	}
	out, err := (&semvertemplate.Factory{}).CreateTemplate(render).Render(context.Background(), bytes.NewReader([]byte(tmpl)))
	if err != nil {
		return nil, "", fmt.Errorf("semver channels (opm's semver template): %w", err)
	}
	def := ""
	if len(out.Packages) > 0 {
		def = out.Packages[0].DefaultChannel
	}
	return out.Channels, def, nil
}
