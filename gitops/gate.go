package gitops

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Decision is the GitOps stage's answer for one workload at one moment.
type Decision struct {
	// Reason is GateAllowed or why the restart must wait.
	Reason kickv1alpha1.GateReason
	// Message explains the decision to a person.
	Message string
	// RequeueAt, when set, is when the decision may change without any
	// object changing (a sync-window boundary).
	RequeueAt time.Time
	// Provider is the provider that decided (after Auto detection).
	Provider kickv1alpha1.GitOpsProvider
	// Owner is the resolved owner, when there is exactly one.
	Owner *kickv1alpha1.GitOpsOwner
	// Cause is the object whose state holds the restart back, when the
	// deciding gate names one other than the owner (a KickHold, the
	// workload whose failed rollout halted the fan-out).
	Cause *kickv1alpha1.GateCause
}

// Allowed reports whether the restart may run.
func (d Decision) Allowed() bool { return d.Reason == kickv1alpha1.GateAllowed }

// Gate decides the GitOps stage for a workload under a policy.
type Gate interface {
	Decide(ctx context.Context, workload client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) Decision
}

// Provider is one GitOps integration (Argo CD, Flux, Kargo).
type Provider interface {
	Gate
	// Name is the value of spec.gitOps.provider this provider answers.
	Name() kickv1alpha1.GitOpsProvider
	// Owners returns the owners the provider confidently resolves for the
	// workload (none when it does not manage it). Auto uses it to pick the
	// provider; an error means the provider cannot tell right now.
	Owners(ctx context.Context, workload client.Object) ([]kickv1alpha1.GitOpsOwner, error)
	// Wakes names the object kinds whose changes may change a decision.
	Wakes() []Wake
}

// Wake ties a provider object kind to the KickRequests its changes concern:
// Keys returns wake keys (OwnerKey, StageKey, TargetKey) and the request
// controller re-evaluates the open requests indexed under them.
type Wake struct {
	Object client.Object
	Keys   func(ctx context.Context, obj client.Object) []string
}

// OwnerKey is the wake key of a GitOps owner object.
func OwnerKey(kind, namespace, name string) string {
	return "owner:" + kind + "/" + namespace + "/" + name
}

// StageKey is the wake key of a Kargo Stage, "project:stage".
func StageKey(stage string) string { return "stage:" + stage }

// TargetKey is the wake key of a workload; providers use it to wake
// requests that have no owner yet.
func TargetKey(namespace string, kind kickv1alpha1.TargetKind, name string) string {
	return "target:" + string(kind) + "/" + namespace + "/" + name
}

// ProviderKey is the wake key of every request a provider decided last
// (status.provider); a change to that provider's own settings wakes them
// all.
func ProviderKey(provider kickv1alpha1.GitOpsProvider) string {
	return "provider:" + string(provider)
}

// RequestKeys returns the wake keys a KickRequest is indexed under.
func RequestKeys(kr *kickv1alpha1.KickRequest) []string {
	keys := []string{TargetKey(kr.Namespace, kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name)}
	if kr.Status.Provider != "" {
		keys = append(keys, ProviderKey(kr.Status.Provider))
	}
	if o := kr.Status.Owner; o != nil {
		keys = append(keys, OwnerKey(o.Kind, o.Namespace, o.Name))
		if o.Stage != "" {
			keys = append(keys, StageKey(o.Stage))
		}
	}
	return keys
}

// Registry is the Gate used by the restart pipeline: it routes each policy's
// provider to the registered Provider. Provider None always allows. A
// provider that is not registered (its integration is off or its CRDs are
// absent) makes the request wait with ProviderUnavailable, because
// restarting without the owner's consent would defeat the gate.
type Registry struct {
	providers   map[kickv1alpha1.GitOpsProvider]Provider
	unavailable map[kickv1alpha1.GitOpsProvider]string
}

// NewRegistry returns a registry with no provider active.
func NewRegistry() *Registry {
	return &Registry{
		providers:   map[kickv1alpha1.GitOpsProvider]Provider{},
		unavailable: map[kickv1alpha1.GitOpsProvider]string{},
	}
}

// Register activates a provider. Call before the manager starts.
func (r *Registry) Register(p Provider) {
	r.providers[p.Name()] = p
	delete(r.unavailable, p.Name())
}

// MarkUnavailable records why a provider is not active, for status messages.
func (r *Registry) MarkUnavailable(name kickv1alpha1.GitOpsProvider, why string) {
	if _, ok := r.providers[name]; !ok {
		r.unavailable[name] = why
	}
}

// Wakes returns the wake sources of every registered provider.
func (r *Registry) Wakes() []Wake {
	var out []Wake
	for _, name := range r.names() {
		out = append(out, r.providers[name].Wakes()...)
	}
	return out
}

// autoProviders are the providers Auto asks; Kargo is never auto-detected.
var autoProviders = []kickv1alpha1.GitOpsProvider{kickv1alpha1.ProviderArgoCD, kickv1alpha1.ProviderFlux}

// Available reports whether a policy's provider can be used, and why not.
func (r *Registry) Available(name kickv1alpha1.GitOpsProvider) (bool, string) {
	switch name {
	case kickv1alpha1.ProviderNone, "":
		return true, ""
	case kickv1alpha1.ProviderAuto:
		for _, n := range autoProviders {
			if _, ok := r.providers[n]; ok {
				return true, ""
			}
		}
		return false, "provider Auto needs the Argo CD or the Flux integration, and neither is active in this manager" + r.why(autoProviders...)
	}
	if _, ok := r.providers[name]; ok {
		return true, ""
	}
	return false, fmt.Sprintf("provider %s is not active in this manager", name) + r.why(name)
}

func (r *Registry) why(names ...kickv1alpha1.GitOpsProvider) string {
	var parts []string
	for _, n := range names {
		if w := r.unavailable[n]; w != "" {
			parts = append(parts, w)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func (r *Registry) names() []kickv1alpha1.GitOpsProvider {
	names := make([]kickv1alpha1.GitOpsProvider, 0, len(r.providers))
	for n := range r.providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Decide implements Gate.
func (r *Registry) Decide(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) Decision {
	name := policy.Spec.EffectiveProvider()
	switch name {
	case kickv1alpha1.ProviderNone:
		return Decision{Reason: kickv1alpha1.GateAllowed, Provider: name, Message: "no GitOps provider configured"}
	case kickv1alpha1.ProviderAuto:
		return r.auto(ctx, w, policy, now)
	}
	if p, ok := r.providers[name]; ok {
		return p.Decide(ctx, w, policy, now)
	}
	_, why := r.Available(name)
	return Decision{
		Reason:   kickv1alpha1.GateProviderUnavailable,
		Provider: name,
		Message:  fmt.Sprintf("KickPolicy %s asks for %s", policy.Name, why),
	}
}

// auto asks every active auto-detectable provider for owners: exactly one
// owner picks its provider; several are ambiguous; none leaves the request
// waiting, because Auto promises a GitOps gate and there is nobody to ask.
func (r *Registry) auto(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) Decision {
	if ok, why := r.Available(kickv1alpha1.ProviderAuto); !ok {
		return Decision{Reason: kickv1alpha1.GateProviderUnavailable, Provider: kickv1alpha1.ProviderAuto,
			Message: fmt.Sprintf("KickPolicy %s: %s", policy.Name, why)}
	}
	var (
		owners   []kickv1alpha1.GitOpsOwner
		from     []Provider
		failures []string
		asked    []string
	)
	for _, n := range autoProviders {
		p, ok := r.providers[n]
		if !ok {
			continue
		}
		asked = append(asked, string(n))
		found, err := p.Owners(ctx, w)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		for range found {
			from = append(from, p)
		}
		owners = append(owners, found...)
	}
	switch {
	case len(owners) == 1:
		d := from[0].Decide(ctx, w, policy, now)
		if d.Owner == nil {
			d.Owner = &owners[0]
		}
		return d
	case len(owners) > 1:
		names := make([]string, len(owners))
		for i, o := range owners {
			names[i] = DescribeOwner(o)
		}
		sort.Strings(names)
		return Decision{Reason: kickv1alpha1.GateAmbiguousOwner, Provider: kickv1alpha1.ProviderAuto,
			Message: fmt.Sprintf("provider Auto found several GitOps owners of %s/%s: %s; KICK will not guess",
				w.GetNamespace(), w.GetName(), strings.Join(names, ", "))}
	case len(failures) > 0:
		return Decision{Reason: kickv1alpha1.GateProviderUnavailable, Provider: kickv1alpha1.ProviderAuto,
			Message: "provider Auto could not resolve an owner: " + strings.Join(failures, "; ")}
	}
	return Decision{Reason: kickv1alpha1.GateProviderUnavailable, Provider: kickv1alpha1.ProviderAuto,
		Message: fmt.Sprintf("provider Auto found no GitOps owner of %s/%s (asked %s); use provider None for workloads no GitOps tool manages",
			w.GetNamespace(), w.GetName(), strings.Join(asked, ", "))}
}

// DescribeOwner names an owner for messages, e.g. "Application argocd/web".
func DescribeOwner(o kickv1alpha1.GitOpsOwner) string {
	return o.Kind + " " + o.Namespace + "/" + o.Name
}
