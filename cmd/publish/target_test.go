package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
	resolve := func(args ...string) (*commonFlags, error) {
		c := &commonFlags{}
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		c.register(fs)
		if err := fs.Parse(append([]string{"--source", dir}, args...)); err != nil {
			return nil, err
		}
		if err := applyEnv(fs); err != nil {
			return nil, err
		}
		return c, c.check()
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
		if c.target != tc.want {
			t.Errorf("%v PUBLISH_TARGET=%q: target %q, want %q", tc.args, tc.env, c.target, tc.want)
		}
		if c.target == "olm" && c.cluster == "edge" && c.olmOptions().Source.PollInterval != "1h" {
			t.Errorf("olm settings of edge not read: %+v", c.olmOptions())
		}
	}
	t.Setenv("PUBLISH_TARGET", "")
	var ue *usageError
	if _, err := resolve("--target", "openshift"); !errors.As(err, &ue) {
		t.Errorf("--target openshift: %v, want a usage error", err)
	}
}
