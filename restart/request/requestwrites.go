package request

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/tracing"
)

// create creates the workload's request for changed; with restart set, it
// also names the stamp the driver applies. It returns the request only when
// it wrote restart on it (a request created meanwhile is annotated instead).
// The request carries tc's traceparent, and tc is recorded, when written.
func (d *Driver) create(ctx context.Context, kind kickv1alpha1.TargetKind, obj client.Object, changed freshness.Change, restart string, tc tracing.Change) (*kickv1alpha1.KickRequest, error) {
	kr := &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: obj.GetNamespace(),
			Name:      kickv1alpha1.RequestName(kind, obj.GetName()),
			Labels:    map[string]string{kickv1alpha1.ManagedByLabel: kickv1alpha1.ManagedByKick},
		},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{
			APIVersion: d.Kinds.APIVersion(kind), Kind: kind, Name: obj.GetName(),
		}},
	}
	kr.Annotations = map[string]string{}
	if !changed.IsZero() {
		kr.Annotations[kickv1alpha1.ChangeAnnotation] = assess.FormatChange(changed)
	}
	if restart != "" {
		kr.Annotations[kickv1alpha1.RestartAnnotation] = restart
	}
	if tp := tc.Traceparent(); tp != "" {
		kr.Annotations[kickv1alpha1.TraceparentAnnotation] = tp
	}
	err := d.Client.Create(ctx, kr)
	if err == nil {
		tc.Recorded(kr.Name, d.Now())
		d.wrote(kr)
		return kr, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	existing := &kickv1alpha1.KickRequest{}
	if err := d.Client.Get(ctx, client.ObjectKeyFromObject(kr), existing); err != nil {
		return nil, err
	}
	if sameTarget(existing, kr) {
		// Created meanwhile (cache lag or a concurrent worker): hand the
		// change over through the annotation instead, with the stamp of a
		// restart already applied (the request adopts it unless it runs a
		// rollout of its own).
		return d.annotate(ctx, existing, changed, restart, tc)
	}
	// The name is taken by a request for another target: a name never
	// proves what a request targets, so leave that one alone and use a
	// name of our own.
	kr.Name, kr.GenerateName = "", kickv1alpha1.RequestName(kind, obj.GetName())+"-"
	if err := d.Client.Create(ctx, kr); err != nil {
		return nil, err
	}
	tc.Recorded(kr.Name, d.Now())
	d.wrote(kr)
	return kr, nil
}

// wrote notes the request as this process just wrote it, so the request
// reconciler reads it past a cache that does not show the write yet (see
// memory.read): it then follows the restart the write names, instead of
// taking the stamp it sees on the workload for a restart of its own.
func (d *Driver) wrote(kr *kickv1alpha1.KickRequest) {
	if d.mem != nil && kr.ResourceVersion != "" {
		d.mem.wroteStatus(client.ObjectKeyFromObject(kr), kr.ResourceVersion)
	}
}

// sameTarget reports whether two requests target the same workload.
func sameTarget(a, b *kickv1alpha1.KickRequest) bool {
	return a.Spec.TargetRef.Kind == b.Spec.TargetRef.Kind && a.Spec.TargetRef.Name == b.Spec.TargetRef.Name
}

// annotate records a change the request must answer; for a finished
// request this reopens it (the reconciler sees the newer change). With
// restart set it also names the stamp the driver applies, and returns the
// request when it wrote it. The patch is conditional on the request's
// resourceVersion when it names a stamp, so it cannot land on a request
// that was reopened meanwhile. The change starts a new cycle: the request
// gets tc's traceparent (tc is recorded), or loses the previous cycle's
// when tracing is off.
func (d *Driver) annotate(ctx context.Context, kr *kickv1alpha1.KickRequest, changed freshness.Change, restart string, tc tracing.Change) (*kickv1alpha1.KickRequest, error) {
	known := assess.AnnotatedChange(kr)
	if restart == "" && !assess.Adds(changed, known) {
		d.wake(ctx, kr)
		return nil, nil
	}
	annotations := map[string]any{kickv1alpha1.ChangeAnnotation: assess.FormatChange(changed.Max(known))}
	if tp := tc.Traceparent(); tp != "" {
		annotations[kickv1alpha1.TraceparentAnnotation] = tp
	} else if _, ok := kr.Annotations[kickv1alpha1.TraceparentAnnotation]; ok {
		annotations[kickv1alpha1.TraceparentAnnotation] = nil // a merge patch deletes it
	}
	meta := map[string]any{"annotations": annotations}
	if restart != "" {
		annotations[kickv1alpha1.RestartAnnotation] = restart
		meta["resourceVersion"] = kr.ResourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, err
	}
	if err := d.Client.Patch(ctx, kr, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsConflict(err) {
			// Changed meanwhile: look again with the newer copy.
			return nil, err
		}
		return nil, client.IgnoreNotFound(err)
	}
	tc.Recorded(kr.Name, d.Now())
	d.wrote(kr)
	if restart == "" {
		d.wake(ctx, kr)
		return nil, nil
	}
	return kr, nil
}
