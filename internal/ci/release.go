package ci

// The published image of publish itself (docs/ci.md "Our own CI and
// release"). action.yml runs it by version (runs.image
// docker://ImageRepository:ReleaseVersion, checked by TestActionYAML), and
// the release workflow (.github/workflows/release.yml) refuses a tag that is
// not the version action.yml names (.github/scripts/check-release-tag.sh).
// To release: set ReleaseVersion and action.yml's tag to the new version in
// one commit, then push that tag.
const (
	// ImageRepository is where .github/workflows/release.yml pushes the
	// multi-arch (linux/amd64, linux/arm64) image, signed keyless by the
	// release workflow's GitHub OIDC identity.
	ImageRepository = "ghcr.io/operator-publish/publish"

	// ReleaseVersion is the version action.yml runs: the tag of
	// ImageRepository, a Git tag of this repo, and what `publish version`
	// prints for a binary of the release (the workflow sets -X
	// main.version to the tag).
	ReleaseVersion = "v0.1.0"
)

// ActionImage returns the runs.image of action.yml:
// "docker://" + ImageRepository + ":" + ReleaseVersion.
func ActionImage() string { return "docker://" + ImageRepository + ":" + ReleaseVersion }
