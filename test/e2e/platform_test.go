package e2e

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/operator-publish/publish/internal/adopt"
)

// platformStandIn stands in for the platform's controller, which does not
// run here, in one namespace: it watches the Artifacts and ArtifactVersions
// there and writes their status through the status subresource as the
// platform's docs describe (docs/after-sync.md): an ArtifactVersion with
// spec.present gets phase Present, reason Success; one with present: false
// the delisted phase Deleted; an Artifact gets synced: true,
// availableArtifactVersion (the number of its ArtifactVersions, by the
// cpaas.io/artifact-version label, that are listed) and lastUpdateTime.
// Unlike TestHealthChain's model it does not wait for the ownerReference:
// no adopt runs beside Flux here. set replaces the status of one object
// with a given one (a platform that reports AlreadyAdd, Failed, ...).
// Every write follows a watch event or a call of set: no polling, no
// sleeps.
type platformStandIn struct {
	t  *testing.T
	k  *kube
	ns string

	mu       sync.Mutex
	override map[string]map[string]any // "Kind/name" → the status to write
	absent   map[string]bool           // "Kind/name" → write no status at all
	writes   int
}

// startPlatform starts the stand-in in namespace ns for the rest of t: it
// returns once its watches have synced and it has written the status of
// every object already there, and stops at t's cleanup.
func startPlatform(t *testing.T, ctx context.Context, k *kube, ns string) *platformStandIn {
	t.Helper()
	p := &platformStandIn{t: t, k: k, ns: ns, override: map[string]map[string]any{}, absent: map[string]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(k.dyn, 0, ns, nil)
	kick := make(chan struct{}, 1)
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { nudge(kick) },
		UpdateFunc: func(any, any) { nudge(kick) },
		DeleteFunc: func(any) { nudge(kick) },
	}
	for _, inf := range []cache.SharedIndexInformer{f.ForResource(artifactGVR).Informer(), f.ForResource(artifactVersionGVR).Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
	}
	f.Start(ctx.Done())
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			t.Fatalf("platform stand-in: the watch of %s did not sync", gvr.Resource)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
				if _, err := p.sync(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("platform stand-in: %v", err)
					return
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		f.Shutdown()
		t.Logf("platform stand-in (%s): %d status writes", ns, p.writes)
	})
	if _, err := p.sync(ctx); err != nil {
		t.Fatalf("platform stand-in: %v", err)
	}
	return p
}

func nudge(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// set makes the stand-in write status (as given, nothing added) to the
// object kind/name from now on, and returns once it has (if the object
// exists). A nil status means the model's again; noStatus writes an
// object without any status (as before the platform's first write).
func (p *platformStandIn) set(ctx context.Context, kind, name string, status map[string]any, noStatus bool) {
	p.t.Helper()
	p.mu.Lock()
	key := kind + "/" + name
	delete(p.override, key)
	delete(p.absent, key)
	switch {
	case noStatus:
		p.absent[key] = true
	case status != nil:
		p.override[key] = status
	}
	p.mu.Unlock()
	for {
		again, err := p.sync(ctx)
		if err != nil {
			p.t.Fatalf("platform stand-in: %v", err)
		}
		if !again {
			return
		}
	}
}

// sync is one pass over the namespace: every object whose status is not
// the one the stand-in gives it gets it. A conflict (the object changed
// meanwhile) is left to the pass its watch event brings, and reported as
// again.
func (p *platformStandIn) sync(ctx context.Context) (again bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	avs, err := p.k.dyn.Resource(artifactVersionGVR).Namespace(p.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	arts, err := p.k.dyn.Resource(artifactGVR).Namespace(p.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	listed := map[string]int64{}
	for i := range avs.Items {
		av := &avs.Items[i]
		present, _, _ := unstructured.NestedBool(av.Object, "spec", "present")
		art := av.GetLabels()[adopt.VersionLabel]
		tag, _, _ := unstructured.NestedString(av.Object, "spec", "tag")
		want := map[string]any{"phase": "Deleted", "reason": "", "message": "", "version": strings.TrimPrefix(tag, "v")}
		if present {
			want["phase"], want["reason"] = "Present", "Success"
			listed[art]++
		}
		retry, err := p.write(ctx, av, want, nil)
		if err != nil {
			return false, err
		}
		again = again || retry
	}
	for i := range arts.Items {
		a := &arts.Items[i]
		want := map[string]any{"synced": true, "availableArtifactVersion": listed[a.GetName()], "lastUpdateTime": time.Now().UTC().Format(time.RFC3339)}
		retry, err := p.write(ctx, a, want, []string{"lastUpdateTime"})
		if err != nil {
			return false, err
		}
		again = again || retry
	}
	return again, nil
}

// write gives u status want (or its override), unless it has it already
// (ignoring the keys of ignore). retry: the object changed meanwhile.
func (p *platformStandIn) write(ctx context.Context, u *unstructured.Unstructured, want map[string]any, ignore []string) (retry bool, err error) {
	key := u.GetKind() + "/" + u.GetName()
	if o, ok := p.override[key]; ok {
		want, ignore = o, nil
	}
	have, hasStatus, _ := unstructured.NestedMap(u.Object, "status")
	if p.absent[key] {
		if !hasStatus {
			return false, nil
		}
		delete(u.Object, "status")
	} else {
		h, w := map[string]any{}, map[string]any{}
		for k, v := range have {
			h[k] = v
		}
		for k, v := range want {
			w[k] = v
		}
		for _, k := range ignore {
			delete(h, k)
			delete(w, k)
		}
		if hasStatus && reflect.DeepEqual(jsonValue(p.t, h), jsonValue(p.t, w)) {
			return false, nil
		}
		u.Object["status"] = jsonValue(p.t, want)
	}
	gvr := artifactGVR
	if u.GetKind() == "ArtifactVersion" {
		gvr = artifactVersionGVR
	}
	_, err = p.k.dyn.Resource(gvr).Namespace(p.ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return true, nil // its watch event brings another pass
	case apierrors.IsNotFound(err):
		return false, nil
	case err == nil:
		p.writes++
	}
	return false, err
}
