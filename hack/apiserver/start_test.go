// Package apiserver holds the tests of start.sh, which starts a throwaway
// API server by hand. The tests run the script with stand-ins for etcd,
// kube-apiserver, curl and kubectl (this test binary, chosen by an
// environment variable), so they need neither a build of kube-apiserver nor
// a real cluster.
package apiserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// fakeEnv names the stand-in this test binary acts as: "block" (etcd and
// kube-apiserver: write the certificate kube-apiserver would, then wait for
// a signal), "kubectl" (fakeKubectl).
const fakeEnv = "START_TEST_FAKE"

// Environment of the kubectl stand-in: the directory holding its state
// (one file per CRD counting the reads) and the number of reads after which
// a CRD reports Established ("never" for never).
const (
	fakeStateEnv = "START_TEST_STATE"
	fakeAfterEnv = "START_TEST_ESTABLISHED_AFTER"
)

func TestMain(m *testing.M) {
	switch os.Getenv(fakeEnv) {
	case "block":
		for i, a := range os.Args {
			if a == "--cert-dir" && i+1 < len(os.Args) {
				_ = os.MkdirAll(os.Args[i+1], 0o755)
				_ = os.WriteFile(filepath.Join(os.Args[i+1], "apiserver.crt"), []byte("stand-in\n"), 0o644)
			}
		}
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
		<-c
		os.Exit(0)
	case "kubectl":
		os.Exit(fakeKubectl(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeKubectl answers the kubectl commands start.sh may use the way kubectl
// answers them against an API server that has just created the CRDs of the
// -f directory and has not yet written their status (conditions: null, as
// kube-apiserver returns an Argo CD Application CRD for a moment):
//
//   - apply -f DIR [-o name]: the CRDs of DIR are created;
//   - get crd [NAME | crd/NAME ...] -o jsonpath=T | -o json | -o name: each
//     read of a CRD counts, and after START_TEST_ESTABLISHED_AFTER reads it
//     reports Established=True;
//   - wait --for condition=Established crd --all: kubectl's error for a CRD
//     whose conditions are still null.
func fakeKubectl(args []string) int {
	state := os.Getenv(fakeStateEnv)
	after := os.Getenv(fakeAfterEnv)
	var verb, output, file string
	var names []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o" || a == "--output":
			i++
			output = args[i]
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			output = strings.TrimPrefix(strings.TrimPrefix(a, "-o"), "=")
		case strings.HasPrefix(a, "--output="):
			output = strings.TrimPrefix(a, "--output=")
		case a == "-f" || a == "--filename":
			i++
			file = args[i]
		case a == "--for" || a == "--timeout":
			i++
		case strings.HasPrefix(a, "-"):
		case verb == "":
			verb = a
		default:
			names = append(names, a)
		}
	}
	crds, err := os.ReadDir(filepath.Join(state, "crds"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake kubectl:", err)
		return 1
	}
	// object returns CRD n as the API server would now, counting the read.
	object := func(n string, count bool) map[string]any {
		p := filepath.Join(state, "crds", n)
		b, _ := os.ReadFile(p)
		reads, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if count {
			reads++
			_ = os.WriteFile(p, []byte(strconv.Itoa(reads)), 0o644)
		}
		var conditions any
		if k, err := strconv.Atoi(after); err == nil && reads >= k {
			conditions = []any{
				map[string]any{"type": "NamesAccepted", "status": "True"},
				map[string]any{"type": "Established", "status": "True"},
			}
		}
		return map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": n},
			"status":   map[string]any{"conditions": conditions},
		}
	}
	switch verb {
	case "apply":
		if file == "" {
			fmt.Fprintln(os.Stderr, "fake kubectl: apply without -f")
			return 1
		}
		for _, c := range crds {
			if output == "name" {
				fmt.Println("customresourcedefinition.apiextensions.k8s.io/" + c.Name())
			} else {
				fmt.Println("customresourcedefinition.apiextensions.k8s.io/" + c.Name() + " serverside-applied")
			}
		}
		return 0
	case "wait":
		for _, c := range crds {
			if object(c.Name(), true)["status"].(map[string]any)["conditions"] == nil {
				fmt.Fprintln(os.Stderr, "error: .status.conditions accessor error: <nil> is of the type <nil>, expected []interface{}")
				return 1
			}
		}
		return 0
	case "get":
	default:
		fmt.Fprintln(os.Stderr, "fake kubectl: unknown command", args)
		return 1
	}
	// get: the first name is the type unless it has the type in it.
	var want []string
	for i, n := range names {
		if i == 0 && !strings.Contains(n, "/") {
			if strings.HasPrefix(n, "crd") || strings.HasPrefix(n, "customresourcedefinition") {
				continue
			}
		}
		want = append(want, n[strings.LastIndex(n, "/")+1:])
	}
	list := len(want) == 0
	if list {
		for _, c := range crds {
			want = append(want, c.Name())
		}
	}
	var items []any
	for _, n := range want {
		if _, err := os.Stat(filepath.Join(state, "crds", n)); err != nil {
			fmt.Fprintf(os.Stderr, "Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io %q not found\n", n)
			return 1
		}
		items = append(items, object(n, true))
	}
	var data any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	if !list && len(items) == 1 {
		data = items[0]
	}
	switch {
	case output == "name":
		for _, n := range want {
			fmt.Println("customresourcedefinition.apiextensions.k8s.io/" + n)
		}
	case output == "json":
		b, _ := json.MarshalIndent(data, "", "    ")
		fmt.Println(string(b))
	case strings.HasPrefix(output, "jsonpath="):
		t := strings.TrimPrefix(output, "jsonpath=")
		j := jsonpath.New("out").AllowMissingKeys(true)
		if err := j.Parse(t); err != nil {
			fmt.Fprintln(os.Stderr, "error: error parsing jsonpath", t+",", err)
			return 1
		}
		// kubectl gives the template the object as JSON decodes it.
		b, _ := json.Marshal(data)
		var v any
		_ = json.Unmarshal(b, &v)
		if err := j.Execute(os.Stdout, v); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
	default:
		fmt.Fprintln(os.Stderr, "fake kubectl: output not emulated:", output)
		return 1
	}
	return 0
}

// startScript copies start.sh into a directory of its own next to a build.sh
// that prints the kube-apiserver stand-in, and returns the command running
// it against crdNames (each a CRD the kubectl stand-in knows) with
// established as START_TEST_ESTABLISHED_AFTER. state is the stand-in's
// state directory.
func startScript(t *testing.T, established string, crdNames ...string) (cmd *exec.Cmd, state string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash") // start.sh is a bash script: nothing to run it with
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	here := filepath.Join(root, "hack", "apiserver")
	bin := filepath.Join(root, "bin")
	state = filepath.Join(root, "state")
	crdDir := filepath.Join(root, "crds")
	for _, d := range []string{here, bin, filepath.Join(state, "crds"), crdDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile("start.sh")
	if err != nil {
		t.Fatal(err)
	}
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(here, "start.sh"), string(script), 0o755)
	stub := func(fake string) string {
		return fmt.Sprintf("#!/bin/sh\n%s=%s exec %q \"$@\"\n", fakeEnv, fake, self)
	}
	write(filepath.Join(bin, "kube-apiserver"), stub("block"), 0o755)
	write(filepath.Join(here, "build.sh"), "#!/bin/sh\necho "+filepath.Join(bin, "kube-apiserver")+"\n", 0o755)
	write(filepath.Join(bin, "etcd"), stub("block"), 0o755)
	write(filepath.Join(bin, "kubectl"), stub("kubectl"), 0o755)
	write(filepath.Join(bin, "curl"), "#!/bin/sh\nexit 0\n", 0o755)
	for _, n := range crdNames {
		write(filepath.Join(state, "crds", n), "0", 0o644)
		b, _ := yaml.Marshal(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": n}})
		write(filepath.Join(crdDir, n+".yaml"), string(b), 0o644)
	}
	cmd = exec.Command("bash", filepath.Join(here, "start.sh"), crdDir)
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		fakeStateEnv+"="+state, fakeAfterEnv+"="+established,
		"START_CRD_TIMEOUT=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, state
}

// reads returns how often the kubectl stand-in read CRD n.
func reads(t *testing.T, state, n string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "crds", n))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return k
}

// TestStartWaitsForEstablished: start.sh says "ready" only once every CRD
// it applied reports Established, also when the API server answers first
// with conditions: null (which `kubectl wait --for condition=Established`
// turns into an accessor error).
func TestStartWaitsForEstablished(t *testing.T) {
	crds := []string{"applications.argoproj.io", "artifacts.app.alauda.io"}
	cmd, state := startScript(t, "3", crds...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	// The script prints the kubeconfig's path on stdout once ready, and
	// keeps running until a signal.
	line, readErr := bufio.NewReader(stdout).ReadString('\n')
	for _, n := range crds {
		if k := reads(t, state, n); k < 3 {
			t.Errorf("ready after %d reads of %s; it reports Established from the 3rd", k, n)
		}
	}
	if readErr != nil {
		_ = cmd.Wait()
		t.Fatalf("start.sh ended before ready (%v):\n%s", readErr, stderr.String())
	}
	if !strings.HasSuffix(strings.TrimSpace(line), "kubeconfig") {
		t.Errorf("stdout %q, want the kubeconfig's path", line)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("start.sh still running 30 s after Ctrl-C:\n%s", stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "error") {
		t.Errorf("stderr has an error:\n%s", s)
	}
	if _, err := os.Stat(filepath.Dir(strings.TrimSpace(line))); !os.IsNotExist(err) {
		t.Errorf("%s not removed after Ctrl-C (%v)", filepath.Dir(line), err)
	}
}

// TestStartNamesCRDNotEstablished: a CRD that never reports Established
// ends start.sh with exit 2 after START_CRD_TIMEOUT, naming that CRD.
func TestStartNamesCRDNotEstablished(t *testing.T) {
	cmd, _ := startScript(t, "never", "applications.argoproj.io")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2; stderr:\n%s", err, stderr.String())
	}
	if s := stderr.String(); !strings.Contains(s, "applications.argoproj.io") || !strings.Contains(s, "Established") {
		t.Errorf("stderr does not name the CRD that is not Established:\n%s", s)
	}
	if strings.Contains(stdout.String(), "kubeconfig") {
		t.Errorf("stdout %q: a kubeconfig printed although not ready", stdout.String())
	}
}
