package target_test

import (
	"context"
	"errors"
	"github.com/operator-publish/publish/internal/render"
	"reflect"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/target"
	yaml "go.yaml.in/yaml/v4"
)

// demoBlock is the publish.yaml block of the demo target
// (clusters.<cluster>.demo).
type demoBlock struct {
	Greeting string `yaml:"greeting"`
	Repeat   int    `yaml:"repeat,omitempty"`
}

// demoSettings are what the demo target's Decode returns.
type demoSettings struct {
	Greeting string
	Repeat   int
}

// decodeDemo is the demo target's Kind.Decode: greeting is required.
func decodeDemo(b target.Block) (any, error) {
	var y demoBlock
	if b.Node != nil {
		if err := b.Node.Load(&y, yaml.WithKnownFields()); err != nil {
			return nil, err
		}
	}
	if y.Greeting == "" {
		return nil, &target.BlockError{Line: b.Line("greeting"), Msg: "clusters." + b.Cluster + ".demo.greeting: want a greeting, such as hello"}
	}
	return demoSettings{Greeting: y.Greeting, Repeat: y.Repeat}, nil
}

// demoTarget is a target with nothing to render: what its Kind.New got.
type demoTarget struct{ s target.Settings }

func (*demoTarget) Check() error     { return nil }
func (*demoTarget) Images() []string { return nil }
func (*demoTarget) Prepare(context.Context, target.Env, []*model.Version, *gitops.State) error {
	return nil
}
func (*demoTarget) Render(context.Context, render.Files, []model.ArtifactRecord, string) (string, error) {
	return "demo", nil
}
func (*demoTarget) Preview(render.Files, []model.ArtifactRecord, string) (string, error) {
	return "", nil
}
func (*demoTarget) RenderFromState(render.Files, []model.ArtifactRecord, *gitops.State) error {
	return nil
}

// TestThirdTarget: a target with settings of its own is its file (here
// the demo types above) plus its registration: publish.yaml's
// clusters.<cluster>.demo is decoded and checked by its Decode when the
// file is read, errors are at their line with the fields of its block,
// and the settings reach its Kind.New unopened.
func TestThirdTarget(t *testing.T) {
	defer target.Register(target.Kind{
		Name: "demo", New: func(s target.Settings) target.Target { return &demoTarget{s: s} },
		Decode: decodeDemo, Schema: reflect.TypeFor[demoBlock](),
	})()
	head := "apiVersion: " + config.APIVersion + "\nkind: " + config.Kind + "\nclusters:\n  edge:\n    target: demo\n"
	c, err := config.Parse("publish.yaml", []byte(head+"    demo:\n      greeting: hello\n      repeat: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	own := c.TargetSettings("edge", "demo")
	if own != (demoSettings{Greeting: "hello", Repeat: 2}) {
		t.Errorf("settings: %#v", own)
	}
	tg, err := target.New(c.Target("edge"), target.Settings{Cluster: "edge", Own: own})
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.(*demoTarget).s.Own; got != own {
		t.Errorf("the target got %#v, want %#v", got, own)
	}
	for _, tc := range []struct{ body, want string }{
		{"    demo:\n      repeat: 2\n", "publish.yaml:6: clusters.edge.demo.greeting: want a greeting"},
		{"    demo:\n      greeting: hi\n      repeat: twice\n", "publish.yaml:8: clusters.edge.demo.repeat: cannot construct"},
		{"    demo:\n      greetin: hi\n", "publish.yaml:7: unknown field clusters.edge.demo.greetin: did you mean greeting?"},
		{"    dmeo:\n      greeting: hi\n", "publish.yaml:6: unknown field clusters.edge.dmeo: did you mean demo?"},
	} {
		_, err := config.Parse("publish.yaml", []byte(head+tc.body))
		var ce *config.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a *config.Error %q", tc.body, err, tc.want)
		}
	}
}
