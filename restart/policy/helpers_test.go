package policy

import (
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

const ns = "shop"

type option func(*kickv1alpha1.KickPolicy)

var uids atomic.Int64

// pol builds a stored-looking policy: a fresh UID and generation 1, so the
// compile cache is exercised as with objects read from the API server.
func pol(name string, opts ...option) kickv1alpha1.KickPolicy {
	p := kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("uid-%s-%d", name, uids.Add(1))), Generation: 1,
	}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func discovery(p *kickv1alpha1.KickPolicy) *kickv1alpha1.DiscoverySpec {
	if p.Spec.Discovery == nil {
		p.Spec.Discovery = &kickv1alpha1.DiscoverySpec{}
	}
	return p.Spec.Discovery
}

func workloads(sel *metav1.LabelSelector) option {
	return func(p *kickv1alpha1.KickPolicy) { discovery(p).WorkloadSelector = sel }
}

func deps(sel *metav1.LabelSelector) option {
	return func(p *kickv1alpha1.KickPolicy) { discovery(p).DependencySelector = sel }
}

func match(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func expr(key string, op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

// invalid is a selector LabelSelectorAsSelector refuses.
var invalid = expr("app", "Near", "web")

func deleting(p *kickv1alpha1.KickPolicy) {
	t := metav1.NewTime(time.Unix(1700000000, 0))
	p.DeletionTimestamp = &t
	p.Finalizers = []string{"example.com/hold"}
}

func suspended(p *kickv1alpha1.KickPolicy) { p.Spec.Suspend = true }

func windows(ws ...kickv1alpha1.ScheduleWindow) option {
	return func(p *kickv1alpha1.KickPolicy) {
		p.Spec.Schedule = &kickv1alpha1.ScheduleSpec{Windows: ws}
	}
}

func allow(cron, dur, tz string) kickv1alpha1.ScheduleWindow {
	return kickv1alpha1.ScheduleWindow{Type: kickv1alpha1.WindowAllow, Cron: cron, Duration: dur, TimeZone: tz}
}

func generation(g int64) option { return func(p *kickv1alpha1.KickPolicy) { p.Generation = g } }

func lbl(kv ...string) map[string]string { return match(kv...).MatchLabels }

func dep(name string, kv ...string) Workload {
	return Workload{Kind: kickv1alpha1.TargetDeployment, Namespace: ns, Name: name, Labels: lbl(kv...)}
}
