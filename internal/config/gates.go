package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v4"
)

// Gate is one entry of publish.yaml clusters.<name>.after: an upstream
// cluster whose listing a version must have kept for Soak before the
// cluster lists it (docs/rollout.md).
type Gate struct {
	// Cluster is the upstream cluster, which publish.yaml declares.
	Cluster string `yaml:"cluster"`
	// Soak is how long, as a Go duration (90m, 24h) or a number of days
	// (2d); "" or 0: listed upstream is enough.
	Soak string `yaml:"soak,omitempty"`
	// Healthy also requires the health record of Cluster (written by
	// publish status --record into publish/health/<cluster>.yaml of the
	// catalog repo) to say the version is installed and healthy there.
	Healthy bool `yaml:"healthy,omitempty"`
	// SoakTime is Soak parsed (set by Parse).
	SoakTime time.Duration `yaml:"-"`
}

// Gates is clusters.<name>.after: one gate (a mapping) or a list of them.
type Gates []Gate

// UnmarshalYAML reads one gate or a list, refusing unknown keys.
func (g *Gates) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var one Gate
		if err := n.Load(&one, yaml.WithKnownFields()); err != nil {
			return err
		}
		*g = Gates{one}
		return nil
	}
	var list []Gate
	if err := n.Load(&list, yaml.WithKnownFields()); err != nil {
		return err
	}
	*g = list
	return nil
}

// ParseSoak parses a soak time: a Go duration (90m, 24h) or a number of
// days (2d); "" is 0. Errors say what to write.
func ParseSoak(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if n, err = strconv.Atoi(days); err == nil {
			d = time.Duration(n) * 24 * time.Hour
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d < 0 {
		return 0, fmt.Errorf("soak: %q: want a number of days (2d) or a Go duration (24h, 90m)", s)
	}
	return d, nil
}

// checkGates checks the gates of every cluster: each names another
// declared cluster, once, with a soak time that parses, and the gates
// form no cycle; it sets SoakTime. Errors are *Error at the cluster's
// after: line.
func checkGates(path string, data []byte, c *Config) error {
	for _, name := range c.ClusterNames() {
		cl := c.Clusters[name]
		seen := map[string]bool{}
		for i := range cl.After {
			g := &cl.After[i]
			bad := func(msg string) error {
				return &Error{Path: path, Line: clusterKeyLine(data, name, "after"), Msg: fmt.Sprintf("clusters.%s.after: %s", name, msg)}
			}
			switch _, ok := c.Clusters[g.Cluster]; {
			case g.Cluster == "":
				return bad("an entry has no cluster: name the upstream cluster (after: [{cluster: lab, soak: 24h}])")
			case g.Cluster == name:
				return bad("a cluster cannot wait for itself")
			case !ok:
				return bad(fmt.Sprintf("cluster %q is not declared under clusters:", g.Cluster))
			case seen[g.Cluster]:
				return bad(fmt.Sprintf("cluster %q is named twice", g.Cluster))
			}
			seen[g.Cluster] = true
			d, err := ParseSoak(g.Soak)
			if err != nil {
				return bad(fmt.Sprintf("cluster %s: %v", g.Cluster, err))
			}
			g.SoakTime = d
		}
	}
	if cycle := gateCycle(c); cycle != nil {
		return &Error{Path: path, Line: clusterKeyLine(data, cycle[0], "after"), Msg: fmt.Sprintf("clusters.*.after: the gates form a cycle (%s): no version could ever list on them", strings.Join(cycle, " waits for "))}
	}
	return nil
}

// gateCycle returns the clusters of a cycle of gates, first repeated at
// the end; nil when there is none.
func gateCycle(c *Config) []string {
	const (
		visiting = 1
		done     = 2
	)
	mark := map[string]int{}
	var stack []string
	var visit func(n string) []string
	visit = func(n string) []string {
		switch mark[n] {
		case visiting:
			for i, s := range stack {
				if s == n {
					return append(append([]string(nil), stack[i:]...), n)
				}
			}
		case done:
			return nil
		}
		mark[n] = visiting
		stack = append(stack, n)
		for _, g := range c.Clusters[n].After {
			if cy := visit(g.Cluster); cy != nil {
				return cy
			}
		}
		stack = stack[:len(stack)-1]
		mark[n] = done
		return nil
	}
	for _, n := range c.ClusterNames() {
		if cy := visit(n); cy != nil {
			return cy
		}
	}
	return nil
}
