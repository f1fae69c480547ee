package lint

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/operator-publish/publish/internal/logging"
	"io"
	"strings"
)

// Formats of Format.
const (
	FormatText   = "text"
	FormatJSON   = "json"
	FormatSARIF  = "sarif"
	FormatGitHub = "github"
)

// Formats lists the formats Format writes.
var Formats = []string{FormatText, FormatJSON, FormatSARIF, FormatGitHub}

// Summary counts findings by severity.
type Summary struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Waived   int `json:"waived"`
}

// Summarize counts fs.
func Summarize(fs []Finding) Summary {
	var s Summary
	for _, f := range fs {
		switch f.Severity {
		case Error:
			s.Errors++
		case Warning:
			s.Warnings++
		case Waived:
			s.Waived++
		}
	}
	return s
}

// Format writes fs to w in format:
//   - text: one "path:line:col: severity: message [rule]" line per finding
//     with indented bundle file, hint and waiver lines, a count, then
//     "lint ok" or "lint failed" (failed when there is an error);
//   - json: {"ok", "errors", "warnings", "waived", "findings"};
//   - sarif: SARIF 2.1.0 for GitHub code scanning, with the rule catalog as
//     tool.driver.rules and waived findings as suppressed results;
//   - github: GitHub Actions workflow commands (::error / ::warning with
//     file, line, col and title), waived findings left out.
func Format(w io.Writer, fs []Finding, format string) error {
	switch format {
	case FormatText, "":
		return formatText(w, fs)
	case FormatJSON:
		return formatJSON(w, fs)
	case FormatSARIF:
		return formatSARIF(w, fs)
	case FormatGitHub:
		return formatGitHub(w, fs)
	}
	return fmt.Errorf("unknown lint output format %q: use %s", format, strings.Join(Formats, ", "))
}

func location(f Finding) string {
	loc := f.Path
	if loc == "" {
		loc = "-"
	}
	if f.Line > 0 {
		loc += fmt.Sprintf(":%d", f.Line)
		if f.Column > 0 {
			loc += fmt.Sprintf(":%d", f.Column)
		}
	}
	return loc
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func formatText(w io.Writer, fs []Finding) error {
	bw := bufio.NewWriter(w)
	indent := strings.NewReplacer("\n", "\n      ")
	for _, f := range fs {
		// A finding quotes the package repo and the bundle: Clean keeps
		// them from becoming workflow commands or escape sequences.
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %s: %s [%s]\n", location(f), f.Severity, indent.Replace(f.Message), f.Rule)
		if f.BundlePath != "" {
			fmt.Fprintf(&b, "    in bundle: %s\n", f.BundlePath)
		}
		if f.Hint != "" {
			fmt.Fprintf(&b, "    hint: %s\n", indent.Replace(f.Hint))
		}
		if f.Severity == Waived {
			fmt.Fprintf(&b, "    %s\n", indent.Replace(f.WaiverNote()))
		}
		bw.WriteString(logging.Clean(b.String()))
	}
	s := Summarize(fs)
	if len(fs) > 0 {
		parts := []string{plural(s.Errors, "error"), plural(s.Warnings, "warning")}
		if s.Waived > 0 {
			parts = append(parts, fmt.Sprintf("%d waived", s.Waived))
		}
		fmt.Fprintln(bw, strings.Join(parts, ", "))
	}
	if s.Errors > 0 {
		fmt.Fprintln(bw, "lint failed")
	} else {
		fmt.Fprintln(bw, "lint ok")
	}
	return bw.Flush()
}

func formatJSON(w io.Writer, fs []Finding) error {
	s := Summarize(fs)
	if fs == nil {
		fs = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		OK bool `json:"ok"`
		Summary
		Findings []Finding `json:"findings"`
	}{s.Errors == 0, s, fs})
}

// GitHub workflow command escaping.
var (
	ghData     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func formatGitHub(w io.Writer, fs []Finding) error {
	bw := bufio.NewWriter(w)
	for _, f := range fs {
		cmd := "error"
		switch f.Severity {
		case Error:
		case Warning:
			cmd = "warning"
		default:
			continue
		}
		var props []string
		if f.Path != "" {
			props = append(props, "file="+ghProperty.Replace(f.Path))
			if f.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d", f.Line))
				if f.Column > 0 {
					props = append(props, fmt.Sprintf("col=%d", f.Column))
				}
			}
		}
		props = append(props, "title="+ghProperty.Replace(f.Rule))
		msg := f.Message
		if f.BundlePath != "" {
			msg += " (in bundle: " + f.BundlePath + ")"
		}
		if f.Hint != "" {
			msg += "\nhint: " + f.Hint
		}
		fmt.Fprintf(bw, "::%s %s::%s\n", cmd, strings.Join(props, ","), ghData.Replace(msg))
	}
	return bw.Flush()
}

// SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/), the part
// GitHub code scanning reads.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Suppressions        []sarifSuppress   `json:"suppressions,omitempty"`
	Properties          map[string]string `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

type sarifSuppress struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
}

func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

func formatSARIF(w io.Writer, fs []Finding) error {
	driver := sarifDriver{Name: "publish", InformationURI: "https://github.com/operator-publish/publish"}
	index := map[string]int{}
	addRule := func(r RuleInfo) {
		index[r.ID] = len(driver.Rules)
		props := map[string]any{"tags": []string{strings.SplitN(r.ID, "/", 2)[0]}}
		if r.Validator {
			props["tags"] = []string{strings.SplitN(r.ID, "/", 2)[0], "operator-framework-validator"}
		}
		driver.Rules = append(driver.Rules, sarifRule{
			ID: r.ID, ShortDescription: sarifText{r.Summary}, FullDescription: sarifText{r.Summary},
			Help: sarifText{r.Hint}, DefaultConfiguration: sarifConfig{sarifLevel(r.Severity)}, Properties: props,
		})
	}
	for _, r := range catalog {
		addRule(r)
	}
	results := []sarifResult{}
	for _, f := range fs {
		if _, ok := index[f.Rule]; !ok {
			addRule(RuleInfo{ID: f.Rule, Severity: Error, Summary: f.Rule, Hint: f.Hint})
		}
		msg := f.Message
		if f.BundlePath != "" {
			msg += " (in bundle: " + f.BundlePath + ")"
		}
		if f.Hint != "" && f.Hint != catalogByID[f.Rule].Hint {
			msg += "\nHint: " + f.Hint
		}
		if msg == "" {
			msg = f.Rule
		}
		r := sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity), Message: sarifText{msg}}
		if f.Path != "" {
			loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: f.Path}}}
			if f.Line > 0 {
				loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Line, StartColumn: f.Column}
			}
			r.Locations = []sarifLocation{loc}
		}
		sum := sha256.Sum256([]byte(strings.Join([]string{f.Rule, f.Path, f.Artifact, f.Version, f.BundlePath, f.Message}, "\x00")))
		r.PartialFingerprints = map[string]string{"publishFinding/v1": hex.EncodeToString(sum[:16])}
		if f.Severity == Waived {
			r.Suppressions = []sarifSuppress{{Kind: "external", Justification: f.Waiver}}
		}
		props := map[string]string{}
		if f.Artifact != "" {
			props["artifact"] = f.Artifact
		}
		if f.Version != "" {
			props["version"] = f.Version
		}
		if f.BundlePath != "" {
			props["bundlePath"] = f.BundlePath
		}
		if len(props) > 0 {
			r.Properties = props
		}
		results = append(results, r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}},
	})
}
