package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/kind"
)

// TestCosignChartPolicy: a verify: policy with a cosign public key on the
// source charts' repositories, against charts the cosign CLI signed at
// the source as a vendor does (cosign sign --key: a Sigstore bundle
// referrer on the Debian docker-registry, no transparency log). `publish
// run` accepts the signed chart and carries its signature to the
// destination (cosign verify passes there); it refuses, exit 1 with the
// rule at the manifest and nothing committed, a chart version nobody
// signed (verify/unsigned) and one signed by another key
// (verify/untrusted).
func TestCosignChartPolicy(t *testing.T) {
	cosignBin(t)
	const pass = "correct horse battery staple"
	keyFile, pubFile := cosignKeyPair(t, pass)
	otherKey, _ := cosignKeyPair(t, pass)
	e := tinyEnv(t)
	signer := newCosignCLIAt(t, e, e.src)
	signer.env = append(signer.env, "COSIGN_PASSWORD="+pass)
	// pushChart pushes chart hello at version and writes its manifest;
	// with key, the cosign CLI signs its digest.
	pushChart := func(version, key string) {
		t.Helper()
		src := e.src.Ref("charts/hello:" + version)
		img, err := kind.ChartImage(src, helloChartAt(t, version))
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(mustRef(t, src), img, e.src.Options()...); err != nil {
			t.Fatal(err)
		}
		if key != "" {
			ref := strings.TrimSuffix(src, ":"+version) + "@" + e.digest(e.src, src)
			if out, ok := signer.run(t, "sign", "--key", key, "--use-signing-config=false", "--tlog-upload=false", "-y", ref); !ok {
				t.Fatalf("cosign sign %s:\n%s", ref, out)
			}
		}
		p := filepath.Join(e.source, "packages/hello", version, "manifest.yaml")
		os.MkdirAll(filepath.Dir(p), 0o755)
		m := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: hello.v" + version + "\nspec:\n  type: chart\n  artifact: oci://" + src + "\n  version: v" + version + "\n"
		if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.source, "cosign.pub"), pub, 0o644)
	cfg := "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nverify:\n- match: " + e.src.Host + "/charts/**\n  mode: enforce\n  key: cosign.pub\n"
	if err := os.WriteFile(filepath.Join(e.source, "publish.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	pushChart("0.1.0", keyFile)
	e.commit("a signed chart and the policy")
	if out, errOut, code := e.publish(); code != 0 {
		t.Fatalf("publish run refuses the signed chart: exit %d\n%s\n%s", code, out, errOut)
	}
	dst := e.dstRef(e.src.Ref("charts/hello:0.1.0"))
	c := newCosignCLI(t, e)
	c.verify(t, "", pubFile, strings.TrimSuffix(dst, ":0.1.0")+"@"+e.digest(e.dst, dst))
	commits, _ := e.catalog()

	for _, tc := range []struct{ version, key, rule string }{
		{"0.2.0", "", "verify/unsigned"},
		{"0.3.0", otherKey, "verify/untrusted"},
	} {
		pushChart(tc.version, tc.key)
		e.commit("hello " + tc.version)
		out, errOut, code := e.publish()
		if code != 1 || !strings.Contains(out+errOut, "packages/hello/"+tc.version+"/manifest.yaml") || !strings.Contains(out+errOut, tc.rule) {
			t.Errorf("publish run of hello %s (%s): exit %d, want 1 with %s at its manifest\n%s\n%s", tc.version, tc.rule, code, tc.rule, out, errOut)
		}
		if after, _ := e.catalog(); after[0].Hash != commits[0].Hash {
			t.Errorf("publish run of hello %s committed %s", tc.version, after[0].Hash)
		}
		if _, err := remote.Head(mustRef(t, e.dstRef(e.src.Ref("charts/hello:"+tc.version))), e.dst.Options()...); err == nil {
			t.Errorf("hello %s is at the destination", tc.version)
		}
		os.RemoveAll(filepath.Join(e.source, "packages/hello", tc.version))
		e.commit("no hello " + tc.version)
	}
}
