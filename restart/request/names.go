package request

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
)

const (
	// TargetIndex indexes KickRequests by target ("Deployment/web"), so the
	// requests of a workload come from the cache.
	TargetIndex = "kick.corewire.io/target"

	// WakeIndex indexes open KickRequests by the GitOps wake keys of their
	// owner and target (gitops.RequestKeys), so a change to an Application,
	// Kustomization or Promotion re-evaluates only the requests it concerns.
	WakeIndex = "kick.corewire.io/gitops-wake"

	// ManagedByLabel marks requests KICK created itself; requests without it
	// were created by a person or CI.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "kick"

	// ChangeAnnotation carries a change time (RFC 3339, nanoseconds) that
	// the request must answer. The driver sets it to reopen a finished
	// request, and coalescing sets it to hand a duplicate's demand over;
	// the reconciler folds it into the latest change and never moves it back.
	ChangeAnnotation = "kick.corewire.io/change"
)

// RegisterIndexes registers TargetIndex and WakeIndex on KickRequests.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &kickv1alpha1.KickRequest{}, TargetIndex, func(obj client.Object) []string {
		kr, ok := obj.(*kickv1alpha1.KickRequest)
		if !ok {
			return nil
		}
		return []string{workload.TargetKey(kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name)}
	}); err != nil {
		return err
	}
	// Only open requests are indexed for waking: a finished request has
	// nothing to wait for, and the index stays as small as the open set.
	return indexer.IndexField(ctx, &kickv1alpha1.KickRequest{}, WakeIndex, func(obj client.Object) []string {
		kr, ok := obj.(*kickv1alpha1.KickRequest)
		if !ok || kr.Status.Phase.IsTerminal() {
			return nil
		}
		return gitops.RequestKeys(kr)
	})
}

// Name is the name KICK gives the request of a workload: "<kind>-<name>"
// in lower case, shortened with a hash suffix when too long for a name.
func Name(kind kickv1alpha1.TargetKind, name string) string {
	n := strings.ToLower(string(kind)) + "-" + name
	if len(n) <= 253 {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:236] + "-" + hex.EncodeToString(sum[:8])
}

// AnnotatedChange parses ChangeAnnotation: "<earliest>" for an exact
// change, "<earliest>/<latest>" for one known only to the second. Zero when
// absent or malformed.
func AnnotatedChange(kr *kickv1alpha1.KickRequest) freshness.Change {
	v, ok := kr.Annotations[ChangeAnnotation]
	if !ok {
		return freshness.Change{}
	}
	first, second, interval := strings.Cut(v, "/")
	e, err := time.Parse(time.RFC3339Nano, first)
	if err != nil {
		return freshness.Change{}
	}
	c := freshness.At(e)
	if interval {
		if l, err := time.Parse(time.RFC3339Nano, second); err == nil && l.After(e) {
			c.Latest = l
		}
	}
	return c
}

func formatChange(c freshness.Change) string {
	out := c.Earliest.UTC().Format(time.RFC3339Nano)
	if c.Latest.After(c.Earliest) {
		out += "/" + c.Latest.UTC().Format(time.RFC3339Nano)
	}
	return out
}

// newerChange reports whether c adds anything to known.
func newerChange(c, known freshness.Change) bool {
	return c.Earliest.After(known.Earliest) || c.Latest.After(known.Latest)
}

// isManual reports whether a person or CI created the request.
func isManual(kr *kickv1alpha1.KickRequest) bool { return kr.Labels[ManagedByLabel] != managedByValue }
