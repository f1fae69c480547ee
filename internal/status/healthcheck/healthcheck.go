// Package healthcheck runs the health checks that catalog-repo-template/
// ships for the platform's Artifact and ArtifactVersion: the Argo CD Lua
// scripts of argocd/argocd-cm-health.yaml, in the Lua interpreter Argo CD
// uses (github.com/yuin/gopher-lua, the version Argo CD pins) with the
// libraries Argo CD opens. It is how the scripts are tested without Argo CD
// (its own module cannot be imported here), and how a test models a GitOps
// engine's health gate against a real API server. docs/after-sync.md says
// what the checks report.
package healthcheck

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	publish "github.com/operator-publish/publish"
)

// Argo CD health statuses (Argo CD's health.HealthStatusCode values).
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// ArgoCDPatchPath is the argocd-cm patch inside the catalog template.
const ArgoCDPatchPath = "catalog-repo-template/argocd/argocd-cm-health.yaml"

// keyPrefix starts an argocd-cm key holding a health script; the rest is
// <group>_<kind> (Argo CD's resource.customizations.health.<group>_<kind>).
const keyPrefix = "resource.customizations.health."

// Result is what a health script returned.
type Result struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Scripts reads the Lua health scripts of the catalog template's argocd-cm
// patch, keyed by "<group>_<kind>" (e.g. "app.alauda.io_ArtifactVersion").
// The error names the file when it cannot be read or parsed.
func Scripts() (map[string]string, error) {
	data, err := fs.ReadFile(publish.CatalogTemplate, ArgoCDPatchPath)
	if err != nil {
		return nil, err
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		return nil, fmt.Errorf("%s: %w", ArgoCDPatchPath, err)
	}
	out := map[string]string{}
	for k, v := range cm.Data {
		if gk, ok := strings.CutPrefix(k, keyPrefix); ok {
			out[gk] = v
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no %s<group>_<kind> key", ArgoCDPatchPath, keyPrefix)
	}
	return out, nil
}

// Checker evaluates the template's scripts for objects of their kinds.
type Checker struct{ scripts map[string]string }

// NewChecker reads the template's scripts (see Scripts).
func NewChecker() (*Checker, error) {
	s, err := Scripts()
	if err != nil {
		return nil, err
	}
	return &Checker{scripts: s}, nil
}

// Health runs the script for u's group and kind. ok is false when the
// template has no script for it (Argo CD then uses its built-in checks, or
// none: the object counts as healthy as soon as it exists).
func (c *Checker) Health(u *unstructured.Unstructured) (r Result, ok bool, err error) {
	gvk := u.GroupVersionKind()
	script, ok := c.scripts[gvk.Group+"_"+gvk.Kind]
	if !ok {
		return Result{}, false, nil
	}
	r, err = Run(script, u.Object)
	return r, true, err
}

// Run runs a health script the way Argo CD's util/lua VM does: a state
// without the standard libraries, then the package, base and table
// libraries (Argo CD also opens a subset of os, time and date, which these
// scripts do not use and which is left out here), the object as the global
// `obj` (maps as tables, numbers as numbers), a one-second deadline, and the
// returned table read as {status, message}. A status Argo CD does not know
// reads as Unknown, as in Argo CD.
func Run(script string, obj map[string]any) (Result, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.fn), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return Result{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return Result{}, err
	}
	ret := l.Get(-1)
	tbl, ok := ret.(*lua.LTable)
	if !ok {
		if ret.Type() == lua.LTNil {
			return Result{}, nil
		}
		return Result{}, fmt.Errorf("the health script returned a %s, not a table", ret.Type())
	}
	r := Result{Status: lua.LVAsString(tbl.RawGetString("status")), Message: lua.LVAsString(tbl.RawGetString("message"))}
	switch r.Status {
	case Healthy, Progressing, Degraded, Suspended, Missing, Unknown:
	default:
		r = Result{Status: Unknown, Message: "the health script returned an invalid status " + r.Status}
	}
	return r, nil
}

// toLua converts a decoded JSON value as Argo CD's decodeValue does.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, e := range v {
			t.RawSetH(lua.LString(k), toLua(l, e))
		}
		return t
	}
	return lua.LNil
}
