package lint

import "strings"

// RuleInfo describes one rule of the catalog (docs/lint-rules.md lists the
// same table).
type RuleInfo struct {
	ID string `json:"id"`
	// Severity is the default severity. For the bundle/validator/* rules the
	// operator-framework validator grades each finding itself (error or
	// warning); Severity is then the grade it usually gives.
	Severity Severity `json:"severity"`
	// Validator is true when the operator-framework validators grade the
	// findings of the rule (see Severity).
	Validator bool   `json:"validator,omitempty"`
	Summary   string `json:"summary"` // what the rule checks
	Hint      string `json:"hint"`    // how to fix a finding
}

// Rule IDs. They are stable: configuration (severities, waivers) and CI
// annotations refer to them.
const (
	RuleManifestYAML              = "manifest/yaml"
	RuleManifestParse             = "manifest/parse"
	RuleManifestBOM               = "manifest/bom"
	RuleManifestUTF8              = "manifest/utf8"
	RuleManifestCRLF              = "manifest/crlf"
	RuleManifestTabIndent         = "manifest/tab-indent"
	RuleManifestMultiDocument     = "manifest/multi-document"
	RuleManifestAnchor            = "manifest/anchor"
	RuleManifestDuplicateKey      = "manifest/duplicate-key"
	RuleManifestUnknownField      = "manifest/unknown-field"
	RuleManifestFieldType         = "manifest/field-type"
	RuleManifestAPIVersion        = "manifest/api-version"
	RuleManifestRequired          = "manifest/required"
	RuleManifestName              = "manifest/name"
	RuleManifestVersion           = "manifest/version"
	RuleManifestType              = "manifest/type"
	RuleManifestArtifact          = "manifest/artifact"
	RuleManifestArch              = "manifest/arch"
	RuleManifestRelatedImage      = "manifest/related-image"
	RuleManifestRelatedImageDup   = "manifest/related-image-duplicate"
	RuleManifestRelatedImagePin   = "manifest/related-image-digest"
	RuleManifestIcon              = "manifest/icon"
	RuleManifestLink              = "manifest/link"
	RuleManifestDisplayName       = "manifest/display-name"
	RuleManifestNotAFile          = "manifest/not-a-file"
	RuleManifestFileSize          = "manifest/file-size"
	RuleManifestFieldSize         = "manifest/field-size"
	RuleManifestObjectSize        = "manifest/object-size"
	RuleChartNotFound             = "chart/not-found"
	RuleChartHelm                 = "chart/helm"
	RuleChartMetadata             = "chart/metadata"
	RuleChartRender               = "chart/render"
	RuleChartEmpty                = "chart/empty"
	RuleChartMissingRelated       = "chart/missing-related"
	RuleChartUnusedRelated        = "chart/unused-related"
	RuleChartTarget               = "chart/target"
	RuleChartKubeVersion          = "chart/kube-version"
	RuleBundleFetch               = "bundle/fetch"
	RuleBundleNotFound            = "bundle/not-found"
	RuleBundleInvalid             = "bundle/invalid"
	RuleBundleOneCSV              = "bundle/one-csv"
	RuleBundleMediatype           = "bundle/mediatype"
	RuleBundleLayout              = "bundle/layout"
	RuleBundlePackage             = "bundle/package"
	RuleBundleChannels            = "bundle/channels"
	RuleBundleDefaultChannel      = "bundle/default-channel"
	RuleBundleCSVVersion          = "bundle/csv-version"
	RuleValidatorCSV              = "bundle/validator/csv"
	RuleValidatorExamples         = "bundle/validator/csv-examples"
	RuleValidatorInstallModes     = "bundle/validator/install-modes"
	RuleValidatorMinKubeVersion   = "bundle/validator/min-kube-version"
	RuleValidatorCRD              = "bundle/validator/crd"
	RuleValidatorBundle           = "bundle/validator/bundle"
	RuleValidatorOwnedCRDs        = "bundle/validator/owned-crds"
	RuleValidatorRelatedImages    = "bundle/validator/related-images"
	RuleValidatorServiceAccount   = "bundle/validator/service-account"
	RuleValidatorOperatorHub      = "bundle/validator/operatorhub"
	RuleValidatorIcon             = "bundle/validator/icon"
	RuleValidatorLinks            = "bundle/validator/links"
	RuleValidatorMaintainers      = "bundle/validator/maintainers"
	RuleValidatorProvider         = "bundle/validator/provider"
	RuleValidatorGoodPractices    = "bundle/validator/good-practices"
	RuleValidatorResourceRequests = "bundle/validator/resource-requests"
	RuleValidatorChannelNaming    = "bundle/validator/channel-naming"
	RuleValidatorCRDDescription   = "bundle/validator/crd-description"
	RuleValidatorCRDRBAC          = "bundle/validator/crd-rbac"
	RuleValidatorCSVName          = "bundle/validator/csv-name"
	RuleValidatorDeprecatedAPI    = "bundle/validator/deprecated-api"
	RuleValidatorPanic            = "bundle/validator/panic"
	RulePlatformProviderType      = "platform/provider-type"
	RulePlatformProvider          = "platform/provider"
	RulePlatformProviderURL       = "platform/provider-url"
	RuleOLMv1InstallMode          = "olmv1/install-mode"
	RuleOLMv1Dependency           = "olmv1/dependency"
	RuleOLMv1OperatorConditions   = "olmv1/operator-conditions"
	RuleDependencyMissing         = "dependency/missing"
	RuleImagesMissingRelated      = "images/missing-related"
	RuleImagesUnusedRelated       = "images/unused-related"
	RuleImagesNotFound            = "images/not-found"
	RuleImagesPlatform            = "images/platform"
	RuleImagesCheck               = "images/check"
	RuleReplaces                  = "repo/replaces"
	RuleSkips                     = "repo/skips"
	RuleSkipRange                 = "repo/skip-range"
	RuleBundleRelease             = "bundle/release"
	RuleDuplicateRelease          = "repo/duplicate-release"
	RuleDuplicateCSVName          = "repo/duplicate-csv-name"
	RuleEditedInPlace             = "repo/edited-in-place"
	RuleWaiver                    = "repo/waiver"
	RuleConfig                    = "repo/config"
	RuleVerifyUnsigned            = "verify/unsigned"
	RuleVerifyUntrusted           = "verify/untrusted"
	RuleVerifyIdentity            = "verify/identity"
	RuleVerifyPattern             = "verify/pattern"
	RuleVerifySkipped             = "verify/skipped"
)

var catalog = []RuleInfo{
	// manifest: the manifest.yaml file itself.
	{ID: RuleManifestYAML, Severity: Error, Summary: "The file is valid YAML, not empty, and its document is a mapping.", Hint: "Fix the YAML syntax at the line shown (an unclosed quote or bracket, a missing \": \" or a wrong indentation are the usual causes)."},
	{ID: RuleManifestParse, Severity: Error, Summary: "The manifest parser accepts the file (reported only when no more specific rule explains why it does not).", Hint: "Fix the problem the message names."},
	{ID: RuleManifestBOM, Severity: Error, Summary: "The file does not start with a UTF-8 byte order mark.", Hint: "Save the file as UTF-8 without BOM."},
	{ID: RuleManifestUTF8, Severity: Error, Summary: "The file is valid UTF-8 (not UTF-16, not Latin-1).", Hint: "Save the file as UTF-8; retype the character shown."},
	{ID: RuleManifestCRLF, Severity: Warning, Summary: "Lines end with LF, not CRLF.", Hint: "Convert the file to LF line endings (e.g. dos2unix, or `git config core.autocrlf input`)."},
	{ID: RuleManifestTabIndent, Severity: Error, Summary: "No tab characters in indentation (YAML forbids them).", Hint: "Indent with spaces only."},
	{ID: RuleManifestMultiDocument, Severity: Error, Summary: "The file holds exactly one YAML document.", Hint: "Keep one PackageManifest per manifest.yaml: remove the `---` separator and what follows, or move it to its own version directory."},
	{ID: RuleManifestAnchor, Severity: Error, Summary: "No YAML anchors, aliases, merge keys or tags (`&a`, `*a`, `<<:`, `!!binary`, `!custom`): every value is written out as plain YAML.", Hint: "Replace the alias by a copy of the value and remove the anchor; write a tagged value plainly (quote it to make it a string)."},
	{ID: RuleManifestDuplicateKey, Severity: Error, Summary: "No key appears twice in one mapping.", Hint: "Remove or merge the duplicate key."},
	{ID: RuleManifestUnknownField, Severity: Error, Summary: "Every field is a PackageManifest field (violet's field names, case-sensitive).", Hint: "Check the spelling against the PackageManifest fields in the README; remove fields publish does not know."},
	{ID: RuleManifestFieldType, Severity: Error, Summary: "Every field has the right YAML type (text, list or mapping).", Hint: "Write the value with the type the message names, e.g. `arch: [linux/amd64]` for a list."},
	{ID: RuleManifestAPIVersion, Severity: Error, Summary: "apiVersion is app.alauda.cn/v1beta1 and kind is PackageManifest.", Hint: "Set `apiVersion: app.alauda.cn/v1beta1` and `kind: PackageManifest`."},
	{ID: RuleManifestRequired, Severity: Error, Summary: "metadata.name, spec.type, spec.artifact and spec.version are set (violet: `<field> field cannot be empty`).", Hint: "Fill in the field."},
	{ID: RuleManifestName, Severity: Error, Summary: "metadata.name is <artifact>.v<spec.version>, and the artifact is a DNS-1123 name.", Hint: "Rename metadata.name to <artifact>.v<version>, e.g. etcd.v0.9.4 for spec.version v0.9.4; the artifact is lowercase letters, digits, '-' and '.'."},
	{ID: RuleManifestVersion, Severity: Error, Summary: "spec.version is a semantic version, with or without a leading v.", Hint: "Write MAJOR.MINOR.PATCH with optional -prerelease/+build, e.g. v1.2.3."},
	{ID: RuleManifestType, Severity: Error, Summary: "spec.type is bundle (an OLM bundle image) or chart (a Helm chart).", Hint: "Set `type: bundle` or `type: chart`."},
	{ID: RuleManifestArtifact, Severity: Error, Summary: "spec.artifact is a full image reference with registry, repository and tag or digest; for a chart, an OCI chart reference (oci://host/repo/name:version) or a chart repository URL with spec.chart.", Hint: "Write registry/repository:tag or registry/repository@sha256:..., e.g. registry.example.com/ops/etcd-bundle:v0.9.4; for a chart oci://registry.example.com/charts/web:1.2.3, or https://charts.example.com with `chart: web`."},
	{ID: RuleManifestArch, Severity: Error, Summary: "spec.arch lists known platforms (os/arch[/variant]) once each.", Hint: "Use platforms such as linux/amd64, linux/arm64, linux/arm/v7, linux/ppc64le, linux/s390x."},
	{ID: RuleManifestRelatedImage, Severity: Error, Summary: "Every spec.relatedImages entry is a full image reference with tag or digest.", Hint: "Write registry/repository:tag or registry/repository@sha256:... (no scheme, no spaces)."},
	{ID: RuleManifestRelatedImageDup, Severity: Warning, Summary: "No image is listed twice in spec.relatedImages.", Hint: "Remove the duplicate entry."},
	{ID: RuleManifestRelatedImagePin, Severity: Warning, Summary: "spec.relatedImages entries are pinned by digest, so that what is mirrored is what was tested.", Hint: "Append @sha256:<digest> to the reference (`crane digest <ref>` prints it)."},
	{ID: RuleManifestIcon, Severity: Error, Summary: "spec.info.icon is base64 of a PNG, SVG, JPEG or GIF image of at most 192 KiB (256 KiB of base64 text: it reaches the rendered objects, which stay under 256 KiB).", Hint: "Encode the image file with `base64 -w0 icon.png`; no data: prefix; shrink images over 192 KiB (a 128x128 PNG or an SVG is enough)."},
	{ID: RuleManifestLink, Severity: Error, Summary: "Every spec.info.links entry has a name and an absolute http(s) URL.", Hint: "Write `- name: Documentation` and `url: https://...`."},
	{ID: RuleManifestDisplayName, Severity: Warning, Summary: "spec.info.displayName is set: the OperatorHub page shows it.", Hint: "Set spec.info.displayName, e.g. to the CSV's spec.displayName."},
	{ID: RuleManifestNotAFile, Severity: Error, Summary: "Everything named manifest.yaml (or manifest.yml) is a regular file, not a directory, named pipe, socket or device: such a path is never read, and its version would silently disappear (and be delisted). Found by the scan; cannot be re-graded or waived.", Hint: "Replace the path by the manifest file, or rename it."},
	{ID: RuleManifestFileSize, Severity: Error, Summary: "A manifest.yaml is at most 1 MiB: publish stops reading there. Found by the scan; cannot be re-graded or waived.", Hint: "A PackageManifest is a few KiB: shrink spec.info.icon and spec.info.description."},
	{ID: RuleManifestFieldSize, Severity: Error, Summary: "The text fields copied into rendered objects stay small: spec.info.displayName at most 1 KiB, spec.info.description at most 128 KiB (the icon's limit is manifest/icon's).", Hint: "Shorten the field; link to long documentation from spec.info.links instead."},
	{ID: RuleManifestObjectSize, Severity: Error, Summary: "Every rendered object (Artifact, ArtifactVersion, after the cluster overlay) is under 256 KiB of YAML: Argo CD's client-side apply keeps a copy of each object in an annotation capped there (the API server refuses objects over about 1.5 MiB). Checked when rendering (`publish run`, `publish plan`, `publish render`), not by `publish lint`.", Hint: "Shorten spec.info.description and spec.info.displayName of the newest manifest of the artifact, or what the cluster overlay adds."},

	// chart: the Helm chart spec.artifact names (spec.type chart).
	{ID: RuleChartNotFound, Severity: Error, Summary: "The chart spec.artifact names exists and is a Helm chart archive the Helm SDK loads.", Hint: "Push the chart (helm push), or correct spec.artifact and spec.chart."},
	{ID: RuleChartHelm, Severity: Error, Validator: true, Summary: "Helm's own chart checks pass (the Helm SDK's lint: Chart.yaml, values and their schema, templates rendered with the cluster's values, dependencies, CRDs); Helm grades each finding error or warning.", Hint: "Run `helm lint` on the chart with the cluster's values file and fix what it reports."},
	{ID: RuleChartMetadata, Severity: Error, Summary: "Chart.yaml's name is the chart the manifest names and its version is spec.version (v1.2.3 and 1.2.3 are the same version).", Hint: "Correct spec.version, spec.artifact or spec.chart, or publish the chart version the manifest means."},
	{ID: RuleChartKubeVersion, Severity: Error, Summary: "The Kubernetes version of the cluster (publish.yaml clusters.<cluster>.kubernetesVersion) satisfies Chart.yaml's kubeVersion constraint, as Helm checks it before it installs. Not checked for a cluster without kubernetesVersion.", Hint: "Leave the chart out of that cluster's selection (clusters.<cluster>.exclude), publish a chart version made for its Kubernetes, or correct clusters.<cluster>.kubernetesVersion."},
	{ID: RuleChartRender, Severity: Error, Summary: "The chart renders offline (Helm's template engine, the chart's values merged with the cluster's values file) without error.", Hint: "Fix the template or the values the message names (`helm template` with the same values shows it)."},
	{ID: RuleChartEmpty, Severity: Error, Summary: "The chart renders at least one object with the cluster's values.", Hint: "Check the values file of the cluster (clusters.<cluster>.values.<artifact> in publish.yaml): a chart that installs nothing is a mistake."},
	{ID: RuleChartMissingRelated, Severity: Error, Summary: "Every image the chart renders (workload containers, init and ephemeral containers) or lists in its helm.sh/images or artifacthub.io/images annotations is in spec.relatedImages.", Hint: "Add the image to spec.relatedImages, so that the catalog names every image the chart needs."},
	{ID: RuleChartUnusedRelated, Severity: Warning, Summary: "Every spec.relatedImages entry of a chart is an image the chart renders or lists.", Hint: "Remove the entry, or check the cluster's values file that should select it."},
	{ID: RuleChartTarget, Severity: Error, Summary: "The cluster's target publishes charts: the olm target publishes OLM bundles only.", Hint: "Leave the chart out of the cluster's selection (clusters.<cluster>.exclude in publish.yaml), or publish it to an alauda cluster."},

	// bundle: the bundle image spec.artifact names.
	{ID: RuleBundleFetch, Severity: Error, Summary: "The bundle image could be read from the source registry. A registry problem is not a finding: `publish lint` prints what it checked, then exits 2 with the registry error.", Hint: "Check the registry address, the credentials (--src-username/--src-password or docker login) and the network."},
	{ID: RuleBundleNotFound, Severity: Error, Summary: "The bundle image spec.artifact names exists.", Hint: "Push the bundle image, or correct spec.artifact."},
	{ID: RuleBundleInvalid, Severity: Error, Summary: "The bundle image is a loadable registry+v1 bundle (manifests/ and metadata/, objects that parse).", Hint: "Rebuild the bundle with `operator-sdk generate bundle` / `opm`; fix the file the message names."},
	{ID: RuleBundleOneCSV, Severity: Error, Summary: "The bundle holds exactly one ClusterServiceVersion.", Hint: "Keep one CSV in manifests/: one bundle is one version of one operator."},
	{ID: RuleBundleMediatype, Severity: Error, Summary: "metadata/annotations.yaml says operators.operatorframework.io.bundle.mediatype.v1: registry+v1.", Hint: "Set `operators.operatorframework.io.bundle.mediatype.v1: registry+v1`."},
	{ID: RuleBundleLayout, Severity: Error, Summary: "metadata/annotations.yaml says manifests.v1: manifests/ and metadata.v1: metadata/.", Hint: "Set `operators.operatorframework.io.bundle.manifests.v1: manifests/` and `operators.operatorframework.io.bundle.metadata.v1: metadata/`."},
	{ID: RuleBundlePackage, Severity: Error, Summary: "The bundle's package annotation is set and equals the artifact (metadata.name without .v<version>): the Artifact is the OLM package.", Hint: "Make operators.operatorframework.io.bundle.package.v1 and the artifact name in metadata.name the same."},
	{ID: RuleBundleChannels, Severity: Error, Summary: "The channels annotation lists at least one channel and no empty entries.", Hint: "Write `operators.operatorframework.io.bundle.channels.v1: stable` (comma-separated, no empty items, no trailing comma)."},
	{ID: RuleBundleDefaultChannel, Severity: Error, Summary: "The default channel annotation, when set, is a channel of the bundle or of another version of the artifact (OLM takes the package's default channel from the bundles).", Hint: "Set operators.operatorframework.io.bundle.channel.default.v1 to one of the channels."},
	{ID: RuleBundleCSVVersion, Severity: Error, Summary: "The CSV's spec.version is set and equals the manifest's spec.version.", Hint: "Make spec.version of the manifest and of the CSV the same version (or point spec.artifact at the right bundle)."},

	// bundle/validator: findings of github.com/operator-framework/api/pkg/validation.
	{ID: RuleValidatorCSV, Severity: Error, Validator: true, Summary: "operator-framework CSV validator: other ClusterServiceVersion problems (names, replaces, apiVersion/kind, annotations).", Hint: "Fix the CSV field the message names."},
	{ID: RuleValidatorExamples, Severity: Warning, Validator: true, Summary: "operator-framework CSV validator: alm-examples annotation parses and covers the owned APIs.", Hint: "Add a valid JSON alm-examples annotation with one example per owned CRD."},
	{ID: RuleValidatorInstallModes, Severity: Error, Validator: true, Summary: "operator-framework CSV validator: spec.installModes are present, unique and at least one is supported.", Hint: "List the four install modes in spec.installModes with supported true/false."},
	{ID: RuleValidatorMinKubeVersion, Severity: Warning, Validator: true, Summary: "operator-framework CSV/OperatorHub validators: spec.minKubeVersion is set and valid.", Hint: "Set spec.minKubeVersion to the oldest Kubernetes version the operator supports, e.g. 1.25.0."},
	{ID: RuleValidatorCRD, Severity: Error, Validator: true, Summary: "operator-framework CRD validator: every CustomResourceDefinition of the bundle is valid.", Hint: "Fix the CRD the message names (regenerate it with controller-gen)."},
	{ID: RuleValidatorBundle, Severity: Error, Validator: true, Summary: "operator-framework bundle validator: other bundle problems (size over ~1 MiB compressed, release name).", Hint: "Fix what the message names; move large data out of the bundle."},
	{ID: RuleValidatorOwnedCRDs, Severity: Error, Validator: true, Summary: "operator-framework bundle validator: owned CRDs of the CSV and CRDs of the bundle match.", Hint: "Add the missing CRD to manifests/, or list it in spec.customresourcedefinitions.owned."},
	{ID: RuleValidatorRelatedImages, Severity: Error, Validator: true, Summary: "operator-framework bundle validator: the CSV's spec.relatedImages are valid references.", Hint: "Give every spec.relatedImages entry of the CSV a valid image."},
	{ID: RuleValidatorServiceAccount, Severity: Error, Validator: true, Summary: "operator-framework bundle validator: no ServiceAccount manifest duplicates one the CSV creates.", Hint: "Remove the ServiceAccount manifest from the bundle, or rename it."},
	{ID: RuleValidatorOperatorHub, Severity: Error, Validator: true, Summary: "operator-framework OperatorHub validator: other OperatorHub requirements (spec.version).", Hint: "Fix the CSV field the message names."},
	{ID: RuleValidatorIcon, Severity: Error, Validator: true, Summary: "operator-framework OperatorHub validator: the CSV has one spec.icon with base64data and a valid mediatype.", Hint: "Give the CSV exactly one spec.icon entry with base64data and mediatype (image/png, image/svg+xml, ...)."},
	{ID: RuleValidatorLinks, Severity: Error, Validator: true, Summary: "operator-framework OperatorHub validator: the CSV's spec.links have a name and a valid URL.", Hint: "Fix the CSV's spec.links entry."},
	{ID: RuleValidatorMaintainers, Severity: Error, Validator: true, Summary: "operator-framework OperatorHub validator: the CSV's spec.maintainers have a name and a valid email.", Hint: "Fix the CSV's spec.maintainers entry."},
	{ID: RuleValidatorProvider, Severity: Error, Validator: true, Summary: "operator-framework OperatorHub validator: the CSV has spec.provider.name.", Hint: "Set spec.provider.name in the CSV."},
	{ID: RuleValidatorGoodPractices, Severity: Error, Validator: true, Summary: "operator-framework good-practices validator: other findings (e.g. no deployment to install).", Hint: "Fix what the message names."},
	{ID: RuleValidatorResourceRequests, Severity: Warning, Validator: true, Summary: "operator-framework good-practices validator: every container requests CPU and memory.", Hint: "Set resources.requests.cpu and .memory on every container of the CSV's deployments."},
	{ID: RuleValidatorChannelNaming, Severity: Warning, Validator: true, Summary: "operator-framework good-practices validator: channel names follow the convention (candidate, fast, stable prefixes).", Hint: "Name channels stable, fast or candidate (optionally with a suffix such as stable-v1)."},
	{ID: RuleValidatorCRDDescription, Severity: Warning, Validator: true, Summary: "operator-framework good-practices validator: the CSV's owned/required CRD descriptions are not empty.", Hint: "Write a description for every entry of spec.customresourcedefinitions."},
	{ID: RuleValidatorCRDRBAC, Severity: Warning, Validator: true, Summary: "operator-framework good-practices validator: the operator gets no permission to create CRDs.", Hint: "Ship the CRDs in the bundle instead of creating them at run time, and drop the permission."},
	{ID: RuleValidatorCSVName, Severity: Warning, Validator: true, Summary: "operator-framework good-practices validator: the CSV name is <operator>.v<semver>.", Hint: "Rename the CSV to <operator-name>.v<version>, e.g. memcached-operator.v0.0.1."},
	{ID: RuleValidatorDeprecatedAPI, Severity: Warning, Validator: true, Summary: "operator-framework deprecated-APIs validator: no manifest uses a Kubernetes API removed in the target version (error when removed in the configured kubernetesVersion or the CSV's minKubeVersion, warning otherwise).", Hint: "Migrate the objects the message lists to the current API versions (see the Kubernetes deprecation guide)."},
	{ID: RuleValidatorPanic, Severity: Error, Summary: "An operator-framework validator did not crash on the bundle (its other checks did not run).", Hint: "Fix the input the message points at (an empty spec.icon list crashes the OperatorHub validator)."},

	// platform: what the Alauda OperatorHub page shows.
	{ID: RulePlatformProviderType, Severity: Warning, Summary: "CSV annotation provider-type is custom, community, certified or platform.", Hint: "Set the annotation `provider-type: community` (or custom, certified, platform); quote values such as \"yes\"."},
	{ID: RulePlatformProvider, Severity: Warning, Summary: "CSV annotation provider is set: plain text, or a JSON object of non-empty strings such as {\"en\":\"Acme\",\"zh\":\"...\"}.", Hint: "Write `provider: Acme Inc` or `provider: '{\"en\":\"Acme Inc\",\"zh\":\"...\"}'`."},
	{ID: RulePlatformProviderURL, Severity: Warning, Summary: "CSV annotation provider-url, when set, is an absolute http(s) URL.", Hint: "Write `provider-url: https://example.com`."},

	// olmv1: what OLM v1 (operator-controller v1.11.0) cannot install, for
	// clusters with catalogKinds ClusterCatalog.
	{ID: RuleOLMv1InstallMode, Severity: Warning, Summary: "For clusters that use OLM v1 (publish.yaml clusters.<cluster>.olm.catalogKinds with ClusterCatalog): the CSV supports the AllNamespaces install mode, the one OLM v1 installs in without a watch namespace.", Hint: "Support AllNamespaces in the CSV's spec.installModes, set watchNamespace on the package's clusterExtensions entry (OwnNamespace or SingleNamespace, operator-controller's experimental SingleOwnNamespaceInstallSupport), or install the operator on that cluster with OLM v0 (catalogKinds CatalogSource). Run and plan refuse a clusterExtensions entry that cannot install the bundle."},
	{ID: RuleOLMv1Dependency, Severity: Warning, Summary: "For clusters that use OLM v1: the bundle declares no dependency (olm.gvk.required from the CSV's required CRDs or API services, olm.package.required or olm.constraint from metadata/dependencies.yaml), which OLM v1 does not resolve.", Hint: "Drop the dependency and install what it names separately (its own ClusterExtension), or use OLM v0 for the operator on that cluster."},
	{ID: RuleOLMv1OperatorConditions, Severity: Warning, Summary: "For clusters that use OLM v1: the operator does not use the OperatorConditions API (RBAC on operators.coreos.com operatorconditions, or OPERATOR_CONDITION_NAME in a container), which OLM v1 does not provide.", Hint: "Make the operator work without OperatorConditions, or use OLM v0 for it on that cluster."},

	// dependency: what a bundle requires of the other bundles a cluster lists.
	{ID: RuleDependencyMissing, Severity: Error, Summary: "For run and plan, per cluster (on both targets: the platform installs with OLM underneath): every olm.package.required of a bundle read in the run (metadata/dependencies.yaml olm.package entries, or properties) is satisfied by a version of that package the cluster lists once the run publishes, within the blang/semver range OLM reads; every olm.gvk.required (the CSV's required CRDs and API services, dependencies.yaml olm.gvk entries) is provided by a bundle the cluster lists, checked only when every version the cluster lists was read in the run (the state records no GVKs). publish lint, over no cluster, does not report it.", Hint: "Publish the required package (a version in the range) or the operator that provides the API to the same cluster (publish.yaml clusters.<cluster>.include/exclude), widen the range, or take the bundle off that cluster."},

	// images: the images the operator deploys.
	{ID: RuleImagesMissingRelated, Severity: Error, Summary: "Every image the CSV deploys (containers, initContainers, RELATED_IMAGE_* values, spec.relatedImages) is declared in the manifest's spec.relatedImages: the manifest is the reviewed list of what a version ships (publish mirrors the CSV's images either way; only the registries the manifest names get the source credentials).", Hint: "Add the image to spec.relatedImages."},
	{ID: RuleImagesUnusedRelated, Severity: Warning, Summary: "Every spec.relatedImages entry is an image the CSV deploys.", Hint: "Remove the entry, or waive the rule when the operator pulls the image by another way (e.g. a config map)."},
	{ID: RuleImagesNotFound, Severity: Error, Summary: "Every image exists in the source registry.", Hint: "Push the image, or correct the reference."},
	{ID: RuleImagesPlatform, Severity: Error, Summary: "Every image offers each platform of spec.arch (an image index with those platforms; a single-platform image serves one).", Hint: "Push a multi-platform image (image index) with every platform of spec.arch, or drop the platform from spec.arch."},
	{ID: RuleImagesCheck, Severity: Error, Summary: "The source registry answered the image check. A registry problem is not a finding: `publish lint` prints what it checked, then exits 2 with the registry error.", Hint: "Check the registry address, credentials and network."},

	// repo: across the manifests of the repository.
	{ID: RuleDuplicateVersion, Severity: Error, Summary: "No artifact declares one version twice (the platform would leave the second ArtifactVersion Pending with reason AlreadyAdd).", Hint: "Remove one of the two manifests."},
	{ID: RuleDuplicateTag, Severity: Error, Summary: "No two versions of one artifact have bundle tags that name the same ArtifactVersion (equal tags, or tags that differ only in case or in characters a name cannot hold, as `V0_9_6` and `v0-9-6`).", Hint: "Give every version a bundle tag of its own that differs in more than case and punctuation."},
	{ID: RuleOneRepository, Severity: Error, Summary: "All versions of one artifact use one bundle repository (an Artifact has one spec.repository).", Hint: "Push every version's bundle to the same repository."},
	{ID: RuleReplaces, Severity: Error, Summary: "The CSV's spec.replaces names an older version of the artifact present in the repository (unless it predates every version there).", Hint: "Fix spec.replaces, or add the replaced version's manifest back."},
	{ID: RuleSkips, Severity: Warning, Summary: "The CSV's spec.skips names versions that exist, unless they predate every version in the repository.", Hint: "Remove stale entries from spec.skips."},
	{ID: RuleSkipRange, Severity: Error, Summary: "The CSV annotation olm.skipRange is a valid semver range (e.g. '>=1.0.0 <1.2.0').", Hint: "Write a range such as '>=1.0.0 <1.2.0' (quote it in YAML)."},
	{ID: RuleBundleRelease, Severity: Error, Summary: "A CSV's spec.release (text, or a number opm reads as text) is what opm v1.73.0 accepts: dot-separated identifiers of letters, digits and hyphens without leading zeros, at most 20 characters; not with the olm.substitutesFor annotation nor with build metadata in spec.version (the CSV name opm wants with a release, <package>-v<version>-<release>, is bundle/validator/bundle's).", Hint: "Fix spec.release; use either spec.release or olm.substitutesFor with build metadata, not both."},
	{ID: RuleDuplicateCSVName, Severity: Error, Summary: "No two versions of one artifact have bundles whose CSVs have the same metadata.name: a catalog holds one bundle per CSV name (opm and OLM key bundles by it), so the second would replace or break the first. Reported at both manifests.", Hint: "Fix the CSV metadata.name of the bundle that copied it (<operator>.v<version>), or remove one manifest."},
	{ID: RuleDuplicateRelease, Severity: Error, Summary: "No two bundles of one artifact are equal in version and release as opm orders them (spec.version, then spec.release, or the build metadata of a CSV with olm.substitutesFor; other build metadata does not count): opm cannot order them, nor OLM upgrade from one to the other. Reported at both manifests.", Hint: "Give the rebuild a higher CSV spec.release (and the manifest spec.version <version>+<release>), or remove one manifest."},
	{ID: RuleEditedInPlace, Severity: Warning, Summary: "A version that is already published was edited in place (found by change detection; skipped without it): clusters that installed it do not see the change.", Hint: "Publish the change as a new version; edit a published version only to correct what no cluster depends on."},
	{ID: RuleWaiver, Severity: Error, Summary: "Every waiver of the lint configuration names a known rule and gives a reason.", Hint: "Add `reason:` to the waiver (it is the audit trail), or correct the rule ID."},
	{ID: RuleConfig, Severity: Error, Summary: "The lint configuration is valid: severities name known rules and are error, warning or off; kubernetesVersion is a version.", Hint: "Correct the rule ID or the value."},

	// verify: signatures against the publish.yaml verify policy (docs/signatures.md).
	{ID: RuleVerifyUnsigned, Severity: Error, Summary: "Every bundle and related image the verify policy covers has a signature: a Sigstore bundle referrer or a cosign .sig tag of its digest (error under mode enforce, warning under warn; under if-signed an image with no signature at all is accepted, and one that does not exist or an index signed only in part is an error; a registry that does not answer is no finding: the command stops with its error). Reported by run, plan, lint and package, not re-graded by the lint configuration.", Hint: "Sign the image (`cosign sign --key ...` or keyless), push the signature beside it, or correct the policy entry the message names."},
	{ID: RuleVerifyUntrusted, Severity: Error, Summary: "A signature of the image verifies with the policy's key or trusted root and binds the image's digest (a signature of another digest, by another key, or a keyless signature where a key is expected, is untrusted).", Hint: "Check that the image was not replaced after signing and that the policy names the signer's public key or trusted root."},
	{ID: RuleVerifyIdentity, Severity: Error, Summary: "The keyless signature's certificate names the policy's identity (issuer and subject, exact or regular expression).", Hint: "Compare the expected and found identity in the message; correct keyless.issuer/subject (or their regexps) if the signer is legitimate."},
	{ID: RuleVerifyPattern, Severity: Warning, Summary: "Every verify policy entry matches at least one bundle or related image of the package repo (reported by publish lint).", Hint: "Correct the pattern (registry/repository, * within a segment, ** across) or remove the entry."},
	{ID: RuleVerifySkipped, Severity: Warning, Summary: "The signatures the verify policy asks for were checked: `publish lint --offline` reads no image, so it says that it checked none (reported by publish lint).", Hint: "Run publish lint without --offline (or publish plan/run) to verify the signatures."},
}

var catalogByID = func() map[string]RuleInfo {
	m := make(map[string]RuleInfo, len(catalog))
	for _, r := range catalog {
		m[r.ID] = r
	}
	return m
}()

// Rules returns the rule catalog, in documentation order.
func Rules() []RuleInfo {
	return append([]RuleInfo(nil), catalog...)
}

// Rule returns the catalog entry of id.
func Rule(id string) (RuleInfo, bool) {
	r, ok := catalogByID[id]
	return r, ok
}

// matchRule reports whether pattern (an ID, or a prefix ending in "/*"
// such as "bundle/validator/*") matches id; the second result ranks the
// match, more specific first.
func matchRule(pattern, id string) (bool, int) {
	if pattern == id {
		return true, 1 << 20
	}
	if p, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasSuffix(p, "/") && strings.HasPrefix(id, p) {
		return true, len(p)
	}
	return false, 0
}

// knownPattern reports whether pattern matches at least one catalog rule.
func knownPattern(pattern string) bool {
	for _, r := range catalog {
		if ok, _ := matchRule(pattern, r.ID); ok {
			return true
		}
	}
	return false
}
