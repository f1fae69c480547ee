package config

import (
	"strings"
	"testing"
	"time"
)

// TestGates: clusters.<name>.after as one mapping or a list, soak times in
// days or Go durations; each mistake an error at the after: line saying
// what is wrong.
func TestGates(t *testing.T) {
	head := "apiVersion: " + APIVersion + "\nkind: " + Kind + "\nclusters:\n  lab: {}\n"
	c, err := Parse("publish.yaml", []byte(head+"  staging:\n    after: {cluster: lab, soak: 1d}\n  prod:\n    after:\n    - {cluster: staging, soak: 90m, healthy: true}\n    - {cluster: lab}\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, prod := c.ClusterSettings("staging").After, c.ClusterSettings("prod").After
	if len(st) != 1 || st[0].Cluster != "lab" || st[0].SoakTime != 24*time.Hour {
		t.Errorf("staging: %+v", st)
	}
	if len(prod) != 2 || prod[0].SoakTime != 90*time.Minute || !prod[0].Healthy || prod[1].Cluster != "lab" || prod[1].SoakTime != 0 || prod[1].Healthy {
		t.Errorf("prod: %+v", prod)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"  prod:\n    after: {cluster: nosuch}\n", `publish.yaml:6: clusters.prod.after: cluster "nosuch" is not declared`},
		{"  prod:\n    after: {cluster: prod}\n", "publish.yaml:6: clusters.prod.after: a cluster cannot wait for itself"},
		{"  prod:\n    after: {soak: 1h}\n", "an entry has no cluster"},
		{"  prod:\n    after: [{cluster: lab}, {cluster: lab}]\n", `cluster "lab" is named twice`},
		{"  prod:\n    after: {cluster: lab, soak: soon}\n", `clusters.prod.after: cluster lab: soak: "soon": want a number of days (2d) or a Go duration`},
		{"  prod:\n    after: {cluster: lab, wait: 1h}\n", "wait"},
		{"  a:\n    after: {cluster: b}\n  b:\n    after: {cluster: a}\n", "the gates form a cycle (a waits for b waits for a)"},
	} {
		_, err := Parse("publish.yaml", []byte(head+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
