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
		if c.Target == "olm" && c.Cluster == "edge" && c.OLM.Source.PollInterval != "1h" {
			t.Errorf("olm settings of edge not read: %+v", c.OLM)
		}
	}
	t.Setenv("PUBLISH_TARGET", "")
	var ue *usageError
	if _, err := resolve("--target", "openshift"); !errors.As(err, &ue) {
		t.Errorf("--target openshift: %v, want a usage error", err)
	}
}
