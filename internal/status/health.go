package status

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/rollout"
)

// Install resources read by ReadHealth.
var (
	// SubscriptionGVR is OLM v0's Subscription (operators.coreos.com/v1alpha1):
	// spec.name is the package, status.currentCSV and status.installedCSV
	// the CSVs it installs and installed.
	SubscriptionGVR = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "subscriptions"}
	// CSVGVR is OLM v0's ClusterServiceVersion: spec.version, status.phase
	// (Succeeded, Failed, Installing, ...), status.reason and message.
	CSVGVR = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"}
	// ClusterExtensionGVR is OLM v1's ClusterExtension (olm.operatorframework.io/v1,
	// cluster-scoped): spec.source.catalog.packageName and version,
	// status.install.bundle.version, conditions Installed and Progressing.
	ClusterExtensionGVR = schema.GroupVersionResource{Group: "olm.operatorframework.io", Version: "v1", Resource: "clusterextensions"}
)

// ReadHealth reads, from the cluster of client, the install health of
// each version listed records names (artifact name = OLM package name):
// OLM v0, for every Subscription of the package, the CSVs it installs
// (status.currentCSV) and installed (status.installedCSV) by their phase;
// OLM v1, where the ClusterExtension CRD is served, every ClusterExtension
// of the package by its Installed and Progressing conditions. A version
// with no install is not in the result; one seen twice keeps the worst
// (Failed, then Progressing). Records carry now (UTC) and the bundle digest
// of records. Errors: a refused or failed read (a resource the cluster
// does not serve is skipped), naming what was read.
func ReadHealth(ctx context.Context, client dynamic.Interface, records []model.ArtifactRecord, now time.Time) ([]rollout.HealthRecord, error) {
	listed := map[[2]string]string{}
	for _, a := range records {
		for _, v := range a.Versions {
			if a.Present && v.Present {
				listed[[2]string{a.Name, normVersion(v.Version)}] = v.BundleDigest
			}
		}
	}
	got := map[[2]string]rollout.HealthRecord{}
	add := func(pkg, version string, h rollout.Health, reason, source string) {
		k := [2]string{pkg, normVersion(version)}
		d, ok := listed[k]
		if !ok {
			return
		}
		if old, seen := got[k]; seen && worse(old.Health, h) {
			return
		}
		got[k] = rollout.HealthRecord{Artifact: pkg, Version: k[1], BundleDigest: d, Health: h, Reason: reason, Source: source, Time: now.UTC()}
	}
	if err := subscriptionHealth(ctx, client, add); err != nil {
		return nil, err
	}
	if err := extensionHealth(ctx, client, add); err != nil {
		return nil, err
	}
	out := make([]rollout.HealthRecord, 0, len(got))
	for _, r := range got {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Artifact+" "+out[i].Version < out[j].Artifact+" "+out[j].Version
	})
	return out, nil
}

// worse reports whether a is worse than b (Failed, Progressing, Healthy).
func worse(a, b rollout.Health) bool {
	rank := map[rollout.Health]int{rollout.Failed: 2, rollout.Progressing: 1}
	return rank[a] > rank[b]
}

// listAll lists gvr in every namespace; served is false when the cluster
// does not serve it (its CRD is not installed).
func listAll(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource) (items []unstructured.Unstructured, served bool, err error) {
	l, err := client.Resource(gvr).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, false, nil
	case err != nil:
		return nil, false, clusterError(gvr.Resource+"."+gvr.Group, "(all)", err)
	}
	return l.Items, true, nil
}

// subscriptionHealth calls add for the CSVs of every Subscription.
func subscriptionHealth(ctx context.Context, client dynamic.Interface, add func(pkg, version string, h rollout.Health, reason, source string)) error {
	subs, served, err := listAll(ctx, client, SubscriptionGVR)
	if err != nil || !served {
		return err
	}
	for _, sub := range subs {
		pkg, _, _ := unstructured.NestedString(sub.Object, "spec", "name")
		seen := map[string]bool{}
		for _, field := range []string{"currentCSV", "installedCSV"} {
			name, _, _ := unstructured.NestedString(sub.Object, "status", field)
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			csv, err := client.Resource(CSVGVR).Namespace(sub.GetNamespace()).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return clusterError("clusterserviceversions."+CSVGVR.Group, sub.GetNamespace(), err)
			}
			version, _, _ := unstructured.NestedString(csv.Object, "spec", "version")
			phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
			reason, _, _ := unstructured.NestedString(csv.Object, "status", "reason")
			msg, _, _ := unstructured.NestedString(csv.Object, "status", "message")
			h := rollout.Progressing
			switch phase {
			case "Succeeded":
				h = rollout.Healthy
			case "Failed":
				h = rollout.Failed
			}
			add(pkg, version, h, join("phase "+orNone(phase), reason, msg), fmt.Sprintf("Subscription %s/%s, CSV %s", sub.GetNamespace(), sub.GetName(), name))
		}
	}
	return nil
}

// extensionHealth calls add for every ClusterExtension: the installed
// bundle's version by the Installed condition; the version asked for
// (spec.source.catalog.version, when it names one version) Failed when
// Progressing is Blocked, or Progressing while it is not installed.
func extensionHealth(ctx context.Context, client dynamic.Interface, add func(pkg, version string, h rollout.Health, reason, source string)) error {
	exts, served, err := listAll(ctx, client, ClusterExtensionGVR)
	if err != nil || !served {
		return err
	}
	for _, ce := range exts {
		pkg, _, _ := unstructured.NestedString(ce.Object, "spec", "source", "catalog", "packageName")
		installed, _, _ := unstructured.NestedString(ce.Object, "status", "install", "bundle", "version")
		asked, _, _ := unstructured.NestedString(ce.Object, "spec", "source", "catalog", "version")
		inst, prog := condition(&ce, "Installed"), condition(&ce, "Progressing")
		src := "ClusterExtension " + ce.GetName()
		if installed != "" && inst.status == "True" {
			add(pkg, installed, rollout.Healthy, join("Installed True", inst.reason, inst.message), src)
		}
		if asked == "" || strings.ContainsAny(asked, "<>=~^*, |") || normVersion(asked) == normVersion(installed) && inst.status == "True" {
			continue
		}
		switch {
		case prog.reason == "Blocked" || inst.status == "False" && inst.reason == "Failed":
			add(pkg, asked, rollout.Failed, join("Progressing "+prog.reason, prog.message, inst.message), src)
		default:
			add(pkg, asked, rollout.Progressing, join("Progressing "+orNone(prog.reason), prog.message), src)
		}
	}
	return nil
}

type cond struct{ status, reason, message string }

// condition is status.conditions[type] of u (zero when absent).
func condition(u *unstructured.Unstructured, typ string) cond {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range cs {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return cond{s, r, msg}
		}
	}
	return cond{}
}

// join joins the non-empty parts with ": ".
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}
