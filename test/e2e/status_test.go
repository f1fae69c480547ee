package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestStatus runs `publish status` against the real kube-apiserver with
// the Alauda CRDs. The platform's controller is not available, so the test
// writes each ArtifactVersion's status through the status subresource as
// the platform's docs describe it: Present/Success, Pending/AlreadyAdd, the
// delisted phase. This API server serves no PackageManifests (OLM's package
// server cannot run here): status says the OperatorHub listing was not
// checked (the lookup itself is tested with a fake client in
// internal/status).
func TestStatus(t *testing.T) {
	shared := testenv.RequireShared(t)
	srv := startAPIServer(t)
	ctx := context.Background()
	k := srv.client(t)
	k.installAlaudaCRDs(t, ctx, shared)
	k.namespace(t, ctx, "cpaas-system")
	kc := srv.kubeconfig(t, "")

	// A catalog checkout with rendered/global, as publish renders it.
	catalog := t.TempDir()
	objs := catalogObjects("cpaas-system")
	for _, u := range objs {
		dir := filepath.Join(catalog, "rendered", "global", "etcd")
		os.MkdirAll(dir, 0o755)
		data, _ := yaml.Marshal(u.Object)
		os.WriteFile(filepath.Join(dir, strings.ToLower(u.GetKind())+"-"+u.GetName()+".yaml"), data, 0o644)
		if err := k.apply(ctx, u, false); err != nil {
			t.Fatal(err)
		}
	}
	setStatus := func(name string, st map[string]any) {
		t.Helper()
		ri := k.dyn.Resource(artifactVersionGVR).Namespace("cpaas-system")
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedMap(u.Object, st, "status")
		if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := func(args ...string) (string, string, int) {
		cmd := exec.Command(publishBin, append([]string{"status", "--catalog-dir", catalog, "--kubeconfig", kc}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), errOut.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), 0
	}

	t.Run("timeout", func(t *testing.T) {
		setStatus("etcd.v0.9.4", map[string]any{"phase": "Pending", "reason": "", "message": "", "version": "0.9.4"})
		out, errOut, code := status("--wait", "2s")
		if code != 1 || !strings.Contains(errOut, "--wait 2s: timed out") || !strings.Contains(errOut, "cpaas-system/etcd.v0.9.4 (waiting)") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(out, "serves no PackageManifests") {
			t.Errorf("no word about the PackageManifests:\n%s", out)
		}
		t.Logf("%s", lastLine(errOut))
	})

	t.Run("wait-until-present", func(t *testing.T) {
		// status --wait starts while the versions are Pending; the platform
		// lists them once it says it is waiting: the watch ends the wait.
		setStatus("etcd.v0.9.2", map[string]any{"phase": "Pending", "reason": "", "message": "", "version": "0.9.2"})
		cmd := exec.Command(publishBin, "status", "--catalog-dir", catalog, "--kubeconfig", kc, "--wait", "5m", "-o", "json", "--summary", filepath.Join(t.TempDir(), "summary.md"))
		var out bytes.Buffer
		cmd.Stdout = &out
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		var errLines []string
		for sc.Scan() {
			errLines = append(errLines, sc.Text())
			if strings.Contains(sc.Text(), "waiting up to 5m0s for cluster global: 0 as asked, 2 waiting") {
				break
			}
		}
		setStatus("etcd.v0.9.4", map[string]any{"phase": "Present", "reason": "Success", "message": "", "version": "0.9.4"})
		setStatus("etcd.v0.9.2", map[string]any{"phase": "Deleted", "reason": "", "message": "", "version": "0.9.2"})
		for sc.Scan() {
			errLines = append(errLines, sc.Text())
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v\n%s\n%s", err, out.String(), strings.Join(errLines, "\n"))
		}
		var rep struct {
			Versions []struct{ Name, State, Phase, Reason string }
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Versions) != 2 {
			t.Fatalf("%v\n%s", err, out.String())
		}
		for _, v := range rep.Versions {
			if v.State != "as-asked" {
				t.Errorf("%+v", v)
			}
		}
	})

	t.Run("alreadyadd", func(t *testing.T) {
		// A version created by hand (violet) holds v0.9.4 under another name.
		rival := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "app.alauda.io/v1alpha1", "kind": "ArtifactVersion",
			"metadata": map[string]any{"name": "etcd.v0.9.4-violet", "namespace": "cpaas-system",
				"labels": map[string]any{"cpaas.io/artifact-version": "etcd"}},
			"spec": map[string]any{"tag": "v0.9.4", "present": true},
		}}
		if err := k.apply(ctx, rival, false); err != nil {
			t.Fatal(err)
		}
		setStatus("etcd.v0.9.4-violet", map[string]any{"phase": "Present", "reason": "Success", "message": "", "version": "0.9.4"})
		setStatus("etcd.v0.9.4", map[string]any{"phase": "Pending", "reason": "AlreadyAdd", "message": "", "version": "0.9.4"})
		out, errOut, code := status("--wait", "5m", "-o", "markdown")
		if code != 1 || !strings.Contains(errOut, "cpaas-system/etcd.v0.9.4 (failed) held by etcd.v0.9.4-violet") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(out, "kubectl -n cpaas-system delete artifactversion etcd.v0.9.4-violet") {
			t.Errorf("no action naming the rival:\n%s", out)
		}
		// Without --wait: the same report, exit 1.
		out, _, code = status()
		if code != 1 || !strings.Contains(out, "failed") {
			t.Errorf("exit %d\n%s", code, out)
		}
		t.Logf("text:\n%s", out)
	})

	t.Run("bad-input", func(t *testing.T) {
		_, errOut, code := status("--cluster", "nope")
		if code != 2 || !strings.Contains(errOut, "--catalog-dir") {
			t.Errorf("exit %d\n%s", code, errOut)
		}
	})
}
