package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/target"
	"github.com/spf13/pflag"
)

// TestTargetPrecedence: --target > PUBLISH_TARGET > publish.yaml
// clusters.<cluster>.target > alauda.
func TestTargetPrecedence(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "publish.yaml"), []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  edge:
    target: olm
    olm:
      catalogSource: {pollInterval: 1h}
`), 0o644)
	resolve := func(args ...string) (renderSettings, error) {
		var (
			src sourceFlags
			r   renderFlags
		)
		inv := newInvocation(nil)
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		src.register(fs)
		r.register(fs)
		if err := fs.Parse(append([]string{"--source", dir}, args...)); err != nil {
			return renderSettings{}, err
		}
		if _, err := inv.applyEnv(fs); err != nil {
			return renderSettings{}, err
		}
		return r.resolve(inv.config)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--cluster", "edge"}, "", "olm"},
		{[]string{"--cluster", "global"}, "", "alauda"},
		{[]string{"--cluster", "edge", "--target", "alauda"}, "", "alauda"},
		{[]string{"--cluster", "edge"}, "alauda", "alauda"},
		{[]string{"--cluster", "global"}, "olm", "olm"},
	} {
		t.Setenv("PUBLISH_TARGET", tc.env)
		c, err := resolve(tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if c.Target != tc.want {
			t.Errorf("%v PUBLISH_TARGET=%q: target %q, want %q", tc.args, tc.env, c.Target, tc.want)
		}
		if o, _ := c.TargetSettings.(target.OLMOptions); c.Target == "olm" && c.Cluster == "edge" && o.Source.PollInterval != "1h" {
			t.Errorf("olm settings of edge not read: %+v", c.TargetSettings)
		}
	}
	t.Setenv("PUBLISH_TARGET", "")
	var ue *usageError
	if _, err := resolve("--target", "openshift"); !errors.As(err, &ue) {
		t.Errorf("--target openshift: %v, want a usage error", err)
	}
}

// TestOCIPrecedence: --oci > PUBLISH_OCI (the action's oci input) >
// publish.yaml clusters.<cluster>.oci > none; a bad --oci is a usage
// error naming it.
func TestOCIPrecedence(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "publish.yaml"), []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  edge:
    oci: registry.example.com/platform/operator-catalog
`), 0o644)
	resolve := func(args ...string) (string, error) {
		var (
			src sourceFlags
			r   renderFlags
			o   ociFlags
		)
		inv := newInvocation(nil)
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		src.register(fs)
		r.register(fs)
		o.register(fs)
		if err := fs.Parse(append([]string{"--source", dir}, args...)); err != nil {
			return "", err
		}
		if _, err := inv.applyEnv(fs); err != nil {
			return "", err
		}
		return o.resolve(inv.config, r.cluster)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--cluster", "edge"}, "", "registry.example.com/platform/operator-catalog"},
		{[]string{"--cluster", "global"}, "", ""},
		{[]string{"--cluster", "edge", "--oci", "other.example.com/c:x"}, "", "other.example.com/c:x"},
		{[]string{"--cluster", "edge"}, "env.example.com/c", "env.example.com/c"},
	} {
		t.Setenv("PUBLISH_OCI", tc.env)
		got, err := resolve(tc.args...)
		if err != nil || got != tc.want {
			t.Errorf("%v PUBLISH_OCI=%q: %q %v, want %q", tc.args, tc.env, got, err, tc.want)
		}
	}
	t.Setenv("PUBLISH_OCI", "")
	var ue *usageError
	if _, err := resolve("--oci", "catalog@sha256:0"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--oci") {
		t.Errorf("bad --oci: %v, want a usage error naming --oci", err)
	}
}

// TestTargetCapabilities: commands that need what only some targets do
// ask the target's capabilities, and say which target lacks it: import
// and package --catalog need the Artifact objects of alauda.
func TestTargetCapabilities(t *testing.T) {
	catalog, src := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(src, "packages"), 0o755)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--catalog", catalog, "--target", "olm"}, "which the olm target does not render"},
		{[]string{"package", "--source", src, "--catalog", catalog, "--target", "olm", "--output", filepath.Join(t.TempDir(), "a.tar")}, "which the olm target does not render"},
	} {
		root := newRootCmd()
		root.SetArgs(c.args)
		root.SetOut(&strings.Builder{})
		root.SetErr(&strings.Builder{})
		err := root.Execute()
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error saying %q", c.args, err, c.want)
		}
	}
}
