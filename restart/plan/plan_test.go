package plan

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func policy(name string, maxConcurrent *intstr.IntOrString, waves ...kickv1alpha1.RestartWave) *kickv1alpha1.KickPolicy {
	return &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kickv1alpha1.KickPolicySpec{Restart: &kickv1alpha1.RestartSpec{MaxConcurrent: maxConcurrent, Waves: waves}}}
}

func restarts(p *kickv1alpha1.KickPolicy, n int, labels map[string]string, rollout time.Duration) []Restart {
	out := make([]Restart, n)
	for i := range out {
		out[i] = Restart{Policy: p, Labels: labels, Rollout: rollout}
	}
	return out
}

func TestPlan(t *testing.T) {
	five := intstr.FromInt32(5)
	canary := kickv1alpha1.RestartWave{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}},
		Bake: &metav1.Duration{Duration: 2 * time.Minute}}
	waved := policy("web-tls", &five, canary)
	var fanout []Restart
	fanout = append(fanout, restarts(waved, 2, map[string]string{"tier": "canary"}, 12*time.Second)...)
	fanout = append(fanout, restarts(waved, 210, nil, 12*time.Second)...)

	for _, tc := range []struct {
		name string
		in   Input
		want []string
	}{
		{name: "waves and a budget", in: Input{Restarts: fanout},
			// canary: 1 round of 12s, bake 2m; rest: 42 rounds of 12s.
			want: []string{"restarts 212 workloads, 5 at a time, wave canary (2) first (bake 2m), then 210 more: about 10m36s (rollouts took 12s)"}},
		{name: "the cluster cap is lower", in: Input{Restarts: fanout, ClusterLimit: 2},
			want: []string{"restarts 212 workloads, 2 at a time, wave canary (2) first (bake 2m), then 210 more: about 23m12s (rollouts took 12s)"}},
		{name: "no budget, no waves, no rollout known", in: Input{Restarts: restarts(policy("all", nil), 40, nil, 0)},
			want: []string{"restarts 40 workloads at once"}},
		{name: "a cap above the fan-out is no cap", in: Input{Restarts: restarts(policy("few", &five), 3, nil, time.Minute)},
			want: []string{"restarts 3 workloads at once: about 1m (rollouts took 1m)"}},
		{name: "one workload", in: Input{Restarts: restarts(policy("one", nil), 1, nil, 0)},
			want: []string{"restarts 1 workload"}},
		{name: "two policies, the bigger first", in: Input{Restarts: append(restarts(policy("a", nil), 1, nil, 0), restarts(policy("b", nil), 2, nil, 0)...)},
			want: []string{"restarts 2 workloads at once", "restarts 1 workload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Make(tc.in)
			if len(got) != len(tc.want) {
				t.Fatalf("%d plans, want %d: %v", len(got), len(tc.want), got)
			}
			for i := range got {
				if s := got[i].String(); s != tc.want[i] {
					t.Errorf("plan %d:\n got %s\nwant %s", i, s, tc.want[i])
				}
			}
		})
	}
}
