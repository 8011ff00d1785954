package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/preflight"
	"github.com/kick-operator/kick/restart/request"
	"github.com/kick-operator/kick/restart/workload"
)

// DefaultBudget is how long an answer may take before it becomes "cannot
// assess"; well inside the webhook's one-second timeout.
const DefaultBudget = 200 * time.Millisecond

// Checker answers for one write. Every read goes to the manager's cache.
type Checker struct {
	// Client reads the manager's cache (sources metadata-only).
	Client client.Reader
	// GitOps decides the GitOps stage, from the providers' caches.
	GitOps gitops.Gate
	// Kinds are the workload kinds the manager restarts (nil: built-in).
	Kinds *workload.Registry
	// CSI makes Secrets Store CSI classes count as dependencies.
	CSI bool
	// Keys, when set, lets the answer count only the keys each consumer
	// reads (spec.restart.keys Read): the manager's fingerprint key.
	Keys *observe.Fingerprinter
	// Ready reports whether the caches have synced; nil means always.
	Ready func() bool
	// Budget bounds an answer; 0 means DefaultBudget.
	Budget time.Duration
	// DenyInDenyWindows turns on the opt-in deny mode.
	DenyInDenyWindows bool
	// ClusterLimit is --max-concurrent-restarts, for a fan-out's plan.
	ClusterLimit int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Write is the part of an admission review the checker answers.
type Write struct {
	Operation preflight.Operation
	// Kind is discovery.KindSecret or discovery.KindConfigMap.
	Kind string
	// Namespace and Name are the review's (Name may be empty on create).
	Namespace, Name string
	// Object is the JSON of the object as written (create, update) or as
	// stored (delete); Old is the JSON of the object before an update.
	Object, Old []byte
	// Exempt is set when the writer is exempt from deny mode.
	Exempt bool
}

// errBudget is returned when the answer took longer than the budget.
var errBudget = errors.New("budget exceeded")

// errUnreadable is returned when the review's object does not decode.
var errUnreadable = errors.New("unreadable object")

// Check answers for w. It never fails: what it cannot establish becomes
// "cannot assess".
func (c *Checker) Check(ctx context.Context, w Write) preflight.Answer {
	if c.Ready != nil && !c.Ready() {
		return preflight.Compose(preflight.Input{CannotAssess: "cache not ready"})
	}
	budget := c.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	in, err := c.input(ctx, w)
	switch {
	case errors.Is(err, errUnreadable):
		return preflight.Compose(preflight.Input{CannotAssess: err.Error()})
	case errors.Is(err, errBudget) || ctx.Err() != nil:
		return preflight.Compose(preflight.Input{CannotAssess: fmt.Sprintf("no answer within %s", budget)})
	case err != nil:
		return preflight.Compose(preflight.Input{CannotAssess: "cache read failed"})
	}
	return preflight.Compose(in)
}

func (c *Checker) input(ctx context.Context, w Write) (preflight.Input, error) {
	in := preflight.Input{Operation: w.Operation, Kind: w.Kind, DenyInDenyWindows: c.DenyInDenyWindows, Exempt: w.Exempt, ClusterLimit: c.ClusterLimit}
	if w.Kind != discovery.KindSecret && w.Kind != discovery.KindConfigMap {
		return preflight.Input{}, nil
	}
	now := c.now()
	// The policies come first: in a namespace without any, the object is
	// never decoded nor compared. Then the consumers, found by the
	// review's name: for a source nothing consumes, the object is not
	// decoded either. What is decoded after is only what the answer needs.
	batch, err := request.NewBatch(ctx, c.Client, c.Kinds, c.CSI, w.Namespace, now)
	if err != nil || len(batch.Policies()) == 0 {
		return preflight.Input{}, err // no policy: not a namespace KICK manages
	}
	if c.Keys != nil {
		batch.KeyNames = c.Keys.KeyName
	}
	name := w.Name
	var meta *sourceMeta
	if name == "" { // a create may leave it to the object
		if meta, err = decodeMeta(w.Object); err != nil {
			return in, err
		}
		name = meta.Name
	}
	workloads, err := c.consumers(ctx, w.Kind, w.Namespace, name)
	if err != nil || len(workloads) == 0 {
		return in, err
	}
	if w.Operation == preflight.Delete {
		for _, wl := range workloads {
			in.Consumers = append(in.Consumers, preflight.Consumer{Kind: workload.KindOf(wl), Name: wl.GetName()})
		}
		return in, nil
	}

	// An update that leaves the content as it was changes nothing; the
	// review's own oldObject says so. No stored fingerprint is consulted:
	// the answer must not tell whether a guessed content is the stored one.
	if w.Operation == preflight.Update {
		if in.Unchanged, err = sameContent(w.Object, w.Old); err != nil {
			return in, err
		}
	}
	if !in.Unchanged {
		if meta == nil {
			if meta, err = decodeMeta(w.Object); err != nil {
				return in, err
			}
		}
		// The observer's record after it sees this content.
		var rec kickv1alpha1.SourceObservation
		var prev *kickv1alpha1.SourceObservationSpec
		switch err := c.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: kickv1alpha1.ObservationName(w.Kind, name)}, &rec); {
		case err == nil && observe.OwnedBy(&rec, meta.UID):
			prev = &rec.Spec
		case err != nil && !apierrors.IsNotFound(err):
			return in, err
		}
		class := observe.Relevant
		if prev == nil {
			class = observe.Baseline
		}
		o := observe.Observed{
			Source:          kickv1alpha1.ObservedSource{APIVersion: discovery.CoreAPIVersion, Kind: kickv1alpha1.SourceKind(w.Kind), Name: name},
			ResourceVersion: meta.ResourceVersion, LastWrite: now,
		}
		if c.Keys != nil {
			// Key by key: the written object against the one it replaces.
			if o.Keys, prev, err = c.previewKeys(w, name, meta, prev); err != nil {
				return in, err
			}
		}
		spec := observe.Next(prev, class, o, now)
		batch.Override(request.Override{Kind: w.Kind, Name: name, Labels: meta.Labels, Record: &spec})
	}

	// Beyond MaxAssessed consumers the answer names the rest; deny mode
	// must know of every Deny window, so it assesses all.
	if len(workloads) > preflight.MaxAssessed && !c.DenyInDenyWindows {
		for _, wl := range workloads[preflight.MaxAssessed:] {
			in.NotAssessed = append(in.NotAssessed, preflight.Consumer{Kind: workload.KindOf(wl), Name: wl.GetName()})
		}
		workloads = workloads[:preflight.MaxAssessed]
	}
	in.Consumers = make([]preflight.Consumer, 0, len(workloads))
	for _, wl := range workloads {
		if ctx.Err() != nil {
			return in, errBudget
		}
		h, err := c.Kinds.Handle(ctx, c.Client, wl)
		if err != nil {
			return in, err
		}
		f, err := batch.Facts(ctx, h)
		if err != nil {
			return in, err
		}
		a := request.Decide(ctx, c.GitOps, h.Target, f)
		in.Consumers = append(in.Consumers, preflight.Consumer{Kind: workload.KindOf(wl), Name: wl.GetName(), Assessment: &a,
			Rollout: c.lastRollout(ctx, wl)})
	}
	return in, nil
}

// lastRollout is how long the workload's last restart by KICK took to
// roll out, from its KickRequest; zero when unknown.
func (c *Checker) lastRollout(ctx context.Context, wl client.Object) time.Duration {
	var kr kickv1alpha1.KickRequest
	key := client.ObjectKey{Namespace: wl.GetNamespace(), Name: kickv1alpha1.RequestName(workload.KindOf(wl), wl.GetName())}
	if c.Client.Get(ctx, key, &kr, client.UnsafeDisableDeepCopy) != nil || kr.Status.Phase != kickv1alpha1.PhaseSucceeded ||
		kr.Status.LastRestartTime == nil || kr.Status.CompletionTime == nil {
		return 0
	}
	return max(kr.Status.CompletionTime.Sub(kr.Status.LastRestartTime.Time), 0)
}

// sourceMeta is the part of a Secret's or ConfigMap's metadata the answer
// reads.
type sourceMeta struct {
	Name            string            `json:"name"`
	UID             types.UID         `json:"uid"`
	ResourceVersion string            `json:"resourceVersion"`
	Labels          map[string]string `json:"labels"`
}

// decodeMeta reads the metadata of a Secret or ConfigMap from the review's
// JSON, leaving its data (and the rest) undecoded.
func decodeMeta(raw []byte) (*sourceMeta, error) {
	var obj struct {
		Metadata sourceMeta `json:"metadata"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil {
		return nil, errUnreadable
	}
	return &obj.Metadata, nil
}

// content is the data of a Secret (data) or ConfigMap (data, binaryData)
// as the review encodes it: each value still JSON, compared as such. The
// API server encodes both objects of a review the same way (a Secret's
// bytes in standard base64), so equal values are equal JSON; nothing is
// base64-decoded or copied. The object's data is read here and nowhere
// else.
type content struct {
	Data       map[string]rawJSON `json:"data"`
	BinaryData map[string]rawJSON `json:"binaryData"`
}

// sameContent reports whether the objects a and b (both Secrets or both
// ConfigMaps, as JSON) hold the same data.
func sameContent(a, b []byte) (bool, error) {
	var x, y content
	if len(a) == 0 || len(b) == 0 || json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false, errUnreadable
	}
	eq := func(p, q rawJSON) bool { return bytes.Equal(p, q) }
	return maps.EqualFunc(x.Data, y.Data, eq) && maps.EqualFunc(x.BinaryData, y.BinaryData, eq), nil
}

// previewKeys returns the key prints of the written object and the stored
// record prepared for comparing it with the object it replaces (see
// observe.Fingerprinter.PreviewPrev). Values are printed as the review
// encodes them, the same way for both objects.
func (c *Checker) previewKeys(w Write, name string, m *sourceMeta, prev *kickv1alpha1.SourceObservationSpec) (*observe.KeyPrints, *kickv1alpha1.SourceObservationSpec, error) {
	prints := func(raw []byte) (*observe.KeyPrints, error) {
		var x content
		if len(raw) == 0 || json.Unmarshal(raw, &x) != nil {
			return nil, errUnreadable
		}
		values := make(map[string][]byte, len(x.Data)+len(x.BinaryData))
		for k, v := range x.Data {
			values[k] = v
		}
		for k, v := range x.BinaryData {
			values[k] = v
		}
		k := c.Keys.RawPrints(w.Kind, w.Namespace, name, m.UID, values)
		return &k, nil
	}
	written, err := prints(w.Object)
	if err != nil || w.Operation != preflight.Update {
		return written, prev, err
	}
	old, err := prints(w.Old)
	if err != nil {
		return nil, nil, err
	}
	return written, c.Keys.PreviewPrev(prev, old), nil
}

// consumers lists, from the cache index, the workloads in namespace that
// consume the source, sorted by kind and name.
func (c *Checker) consumers(ctx context.Context, kind, namespace, name string) ([]client.Object, error) {
	var out []client.Object
	sel := client.MatchingFields{discovery.SourceIndex: discovery.IndexKey(kind, name)}
	for _, wk := range c.Kinds.Kinds() {
		list := wk.NewList()
		// Read-only use: no copy of each workload out of the cache.
		if err := c.Client.List(ctx, list, client.InNamespace(namespace), sel, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			if w, ok := o.(client.Object); ok && w.GetDeletionTimestamp() == nil {
				out = append(out, w)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b client.Object) int {
		if k := strings.Compare(string(workload.KindOf(a)), string(workload.KindOf(b))); k != 0 {
			return k
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out, nil
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
