package olm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// NotesFile is where the catalog image keeps, beside /configs and outside
// what OLM reads, the facts of each bundle's CSV that an olm.csv.metadata
// entry leaves out and the next catalog needs: spec.replaces, spec.skips
// and spec.icon[0]; the rules its ClusterExtension's installer
// service account needs (Installer); and, for a bundle kept deprecated,
// when it was delisted. With them a run reuses an unchanged bundle's entry
// from the last catalog image in either format instead of reading the
// bundle image again (LoadPrevious). Path relative to the image root.
const NotesFile = "operator-publish/bundles.json"

// notes is the content of NotesFile (JSON, keys sorted).
type notes struct {
	// Bundles holds one note per bundle, by bundle image
	// (host/repo@sha256:...).
	Bundles map[string]bundleNote `json:"bundles"`
	// Icons holds each icon once, by the hex SHA-256 of its base64data.
	Icons map[string]iconNote `json:"icons,omitempty"`
}

type bundleNote struct {
	Replaces string   `json:"replaces,omitempty"`
	Skips    []string `json:"skips,omitempty"`
	Icon     string   `json:"icon,omitempty"`
	// Installer are the bundle's installer rules (nil in catalog images
	// written before they were recorded).
	Installer *InstallerRules `json:"installer,omitempty"`
	// DelistedSince is Entry.DelistedSince of a bundle the catalog keeps
	// deprecated (RFC 3339, UTC): when it was delisted.
	DelistedSince *time.Time `json:"delistedSince,omitempty"`
}

type iconNote struct {
	Data      string `json:"base64data"`
	MediaType string `json:"mediatype"`
}

// Notes returns NotesFile's content for the entries of pkgs (every entry
// that has a CSV; packages without entries are left out as Build leaves
// them out). The same entries give the same bytes.
func Notes(pkgs []Package) ([]byte, error) {
	n := notes{Bundles: map[string]bundleNote{}, Icons: map[string]iconNote{}}
	for _, p := range pkgs {
		for _, e := range p.Entries {
			if e.Bundle == nil || e.Bundle.CSV == nil {
				continue
			}
			csv := e.Bundle.CSV
			bn := bundleNote{Replaces: csv.Spec.Replaces, Skips: append([]string(nil), csv.Spec.Skips...)}
			if len(csv.Spec.Icon) > 0 && csv.Spec.Icon[0].Data != "" {
				sum := sha256.Sum256([]byte(csv.Spec.Icon[0].Data))
				bn.Icon = hex.EncodeToString(sum[:])
				n.Icons[bn.Icon] = iconNote{Data: csv.Spec.Icon[0].Data, MediaType: csv.Spec.Icon[0].MediaType}
			}
			if r, ok := e.Installer(); ok {
				bn.Installer = &r
			}
			if !e.DelistedSince.IsZero() {
				t := e.DelistedSince.UTC()
				bn.DelistedSince = &t
			}
			n.Bundles[e.Image] = bn
		}
	}
	data, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", NotesFile, err)
	}
	return data, nil
}

// parseNotes reads NotesFile's content (nil data: no notes).
func parseNotes(data []byte) (*notes, error) {
	if data == nil {
		return nil, nil
	}
	var n notes
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("%s: %w", NotesFile, err)
	}
	return &n, nil
}
