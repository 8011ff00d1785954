package sinks

import (
	"context"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// SecretIndex is the field index of NotificationPolicies by the names of the Secrets they
// reference (in their own namespace).
const SecretIndex = "kick.notificationpolicy.secrets"

// ReferencedSecrets lists, sorted and without duplicates, the Secrets a policy reads: header
// values, bearer token, basic auth, TLS CA bundle and client certificate, PagerDuty routing key
// and signing secret.
func ReferencedSecrets(p *kickv1alpha1.NotificationPolicy) []string {
	w := p.Spec.Webhook
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" {
			seen[name] = true
		}
	}
	for _, h := range w.Headers {
		if h.ValueFrom != nil {
			add(h.ValueFrom.Name)
		}
	}
	if a := w.Auth; a != nil {
		if a.BearerToken != nil {
			add(a.BearerToken.Name)
		}
		if a.Basic != nil {
			add(a.Basic.Username.Name)
			add(a.Basic.Password.Name)
		}
	}
	if t := w.TLS; t != nil {
		if t.CABundle != nil {
			add(t.CABundle.Name)
		}
		if t.ClientCertificate != nil {
			add(t.ClientCertificate.Name)
		}
	}
	if w.PagerDuty != nil {
		add(w.PagerDuty.RoutingKey.Name)
	}
	if w.Signing != nil {
		add(w.Signing.SecretRef.Name)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RegisterIndexes adds SecretIndex to the manager's field indexer. SetupWithManager calls it.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &kickv1alpha1.NotificationPolicy{}, SecretIndex, func(o client.Object) []string {
		p, ok := o.(*kickv1alpha1.NotificationPolicy)
		if !ok {
			return nil
		}
		return ReferencedSecrets(p)
	})
}

// UsesSecret reports whether a NotificationPolicy of the Secret's namespace references it,
// from c's SecretIndex (the manager's cache). The manager caches only the Secrets something
// follows (observe.SourceCache), so the cache keeps these through it: without them the
// controller would miss a credential's creation or rotation. Answers true when the index
// cannot be read.
func UsesSecret(ctx context.Context, c client.Reader, secret client.Object) bool {
	var list kickv1alpha1.NotificationPolicyList
	if err := c.List(ctx, &list, client.InNamespace(secret.GetNamespace()),
		client.MatchingFields{SecretIndex: secret.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return true
	}
	return len(list.Items) > 0
}

// policiesUsing maps a Secret to the policies of its namespace that reference it.
func (r *Reconciler) policiesUsing(ctx context.Context, secret client.Object) []reconcile.Request {
	var list kickv1alpha1.NotificationPolicyList
	if err := r.Client.List(ctx, &list, client.InNamespace(secret.GetNamespace()),
		client.MatchingFields{SecretIndex: secret.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		r.log.Error(err, "listing NotificationPolicies that use a Secret", "namespace", secret.GetNamespace(), "secret", secret.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return reqs
}
