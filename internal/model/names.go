package model

import (
	"regexp"
	"strings"
)

// ArtifactVersionName is the name of the ArtifactVersion object of bundle
// tag tag of artifact: "<artifact>.<tag>", the tag lower-cased, every
// character a Kubernetes object name cannot hold (anything but a-z, 0-9, '.'
// and '-') turned into '-', and leading or trailing '-' and '.' trimmed. Two
// tags can therefore give one name ("V0_9_6" and "v0-9-6" both give
// "<artifact>.v0-9-6").
func ArtifactVersionName(artifact, tag string) string {
	t := strings.ToLower(tag)
	t = invalidNameChars.ReplaceAllString(t, "-")
	return artifact + "." + strings.Trim(t, "-.")
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9.-]`)
