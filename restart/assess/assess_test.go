package assess

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/freshness"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func testPolicy(name string, mutate ...func(*kickv1alpha1.KickPolicySpec)) kickv1alpha1.KickPolicy {
	p := kickv1alpha1.KickPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{
			WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}},
	}
	for _, m := range mutate {
		m(&p.Spec)
	}
	return p
}

func relevant(at time.Time) *kickv1alpha1.SourceObservationSpec {
	n := kickv1alpha1.NewNanoTime(at)
	return &kickv1alpha1.SourceObservationSpec{Class: kickv1alpha1.ObservationRelevant, LastRelevantChangeTime: &n}
}

func baseline(at, seen time.Time) *kickv1alpha1.SourceObservationSpec {
	n, s := kickv1alpha1.NewNanoTime(at), kickv1alpha1.NewNanoTime(seen)
	return &kickv1alpha1.SourceObservationSpec{Class: kickv1alpha1.ObservationBaseline, LastRelevantChangeTime: &n, BaselineObservedAt: &s}
}

// baseFacts: web, selected by one policy, consumes Secret db changed one
// minute after a complete rollout started at t0; now is t0+10m.
func baseFacts() Facts {
	return Facts{
		Now:      t0.Add(10 * time.Minute),
		Target:   Target{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "web", Labels: map[string]string{"app": "web"}},
		Policies: []kickv1alpha1.KickPolicy{testPolicy("p")},
		Dependencies: []Dependency{
			{Kind: "Secret", Name: "db", Counted: true, Record: relevant(t0.Add(time.Minute))},
		},
		Rollout: freshness.Rollout{Start: t0, Complete: true},
	}
}

func TestAssessDecisionTable(t *testing.T) {
	allowed := &gitops.Decision{Reason: kickv1alpha1.GateAllowed, Provider: kickv1alpha1.ProviderArgoCD}
	outOfSync := &gitops.Decision{Reason: kickv1alpha1.GateOwnerOutOfSync, Message: "Application argocd/shop is OutOfSync",
		Provider: kickv1alpha1.ProviderArgoCD, RequeueAt: t0.Add(time.Hour)}
	window := func(kind kickv1alpha1.WindowType, schedule, duration string) func(*kickv1alpha1.KickPolicySpec) {
		return func(s *kickv1alpha1.KickPolicySpec) {
			s.Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kind, Cron: schedule, Duration: duration}}}
		}
	}
	argo := func(s *kickv1alpha1.KickPolicySpec) {
		s.GitOps = &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderArgoCD}
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*Facts)
		verdict Verdict
		carried bool
		allowed bool
		stage   Stage
		reason  kickv1alpha1.GateReason
		until   time.Time
		summary string
	}{
		{name: "stale and allowed", verdict: Stale, allowed: true, summary: "would restart now"},
		{name: "fresh", mutate: func(f *Facts) { f.Dependencies[0].Record = relevant(t0.Add(-time.Minute)) },
			verdict: Fresh, carried: true, allowed: true, summary: "nothing to do: fresh"},
		{name: "change at exactly the start is carried", mutate: func(f *Facts) { f.Dependencies[0].Record = relevant(t0) },
			verdict: Fresh, carried: true, allowed: true},
		{name: "no record at all", mutate: func(f *Facts) { f.Dependencies[0].Record = nil },
			verdict: Fresh, carried: true, allowed: true},
		{name: "rollout in progress", mutate: func(f *Facts) { f.Rollout.Complete = false; f.Rollout.Reason = "RolloutInProgress" },
			verdict: InProgress, allowed: true, summary: "waiting for RolloutInProgress"},
		{name: "rollout in progress with pods newer than the change", mutate: func(f *Facts) {
			f.Rollout.Complete = false
			f.Rollout.Since = t0.Add(2 * time.Minute)
		}, verdict: InProgress, carried: true, allowed: true},
		{name: "not selected", mutate: func(f *Facts) { f.Target.Labels = map[string]string{"app": "other"} },
			verdict: CannotAssess, summary: "cannot assess: no KickPolicy in namespace shop selects Deployment/web"},
		{name: "selected by two", mutate: func(f *Facts) { f.Policies = append(f.Policies, testPolicy("q")) },
			verdict: CannotAssess, summary: "cannot assess: KickPolicies p and q all select Deployment/web"},
		{name: "unreadable record", mutate: func(f *Facts) { f.Dependencies[0].RecordErr = errors.New("forbidden") },
			verdict: CannotAssess, allowed: true, summary: "cannot assess: cannot read the observation record of Secret/db"},
		{name: "rollout unreadable", mutate: func(f *Facts) { f.RolloutErr = errors.New("timeout") },
			verdict: CannotAssess, allowed: true, summary: "cannot assess: cannot inspect the rollout"},
		{name: "out of the dependencySelector", mutate: func(f *Facts) {
			f.Policies[0].Spec.Discovery.DependencySelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kick": "yes"}}
		}, verdict: Fresh, carried: true, allowed: true},
		{name: "in the dependencySelector", mutate: func(f *Facts) {
			f.Policies[0].Spec.Discovery.DependencySelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kick": "yes"}}
			f.Dependencies[0].Labels = map[string]string{"kick": "yes"}
		}, verdict: Stale, allowed: true},
		{name: "a dependency the check does not count", mutate: func(f *Facts) { f.Dependencies[0].Counted = false },
			verdict: Fresh, carried: true, allowed: true},
		{name: "suspended comes first", mutate: func(f *Facts) {
			f.Policies[0].Spec.Suspend = true
			f.Policies[0].Spec.Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowDeny, Cron: "* * * * *", Duration: "1h"}}}
		}, verdict: Stale, stage: StageSuspend, reason: kickv1alpha1.GateSuspended, summary: "waiting for Suspended"},
		{name: "deny window", mutate: func(f *Facts) { window(kickv1alpha1.WindowDeny, "0 10 * * *", "1h")(&f.Policies[0].Spec) },
			verdict: Stale, stage: StageSchedule, reason: kickv1alpha1.GateOutsideSchedule, until: t0.Add(time.Hour),
			summary: "waiting for OutsideSchedule until 2026-05-01T11:00:00Z"},
		{name: "bad window", mutate: func(f *Facts) { window(kickv1alpha1.WindowAllow, "not cron", "1h")(&f.Policies[0].Spec) },
			verdict: Stale, stage: StageSchedule, reason: kickv1alpha1.GateConfigurationError},
		{name: "minInterval before GitOps", mutate: func(f *Facts) {
			argo(&f.Policies[0].Spec)
			f.GitOps = outOfSync
			f.Target.RestartedAt = f.Now.Add(-10 * time.Second)
		}, verdict: Stale, stage: StageMinInterval, reason: kickv1alpha1.GateMinIntervalNotElapsed, until: t0.Add(10*time.Minute + 20*time.Second)},
		{name: "GitOps holds back", mutate: func(f *Facts) { argo(&f.Policies[0].Spec); f.GitOps = outOfSync },
			verdict: Stale, stage: StageGitOps, reason: kickv1alpha1.GateOwnerOutOfSync, until: t0.Add(time.Hour)},
		{name: "GitOps allows", mutate: func(f *Facts) { argo(&f.Policies[0].Spec); f.GitOps = allowed },
			verdict: Stale, allowed: true},
		{name: "GitOps not asked", mutate: func(f *Facts) { argo(&f.Policies[0].Spec) },
			verdict: Stale, stage: StageGitOps, summary: "would restart now if the GitOps gate allows it (provider ArgoCD)"},
		{name: "dry run passes the gate", mutate: func(f *Facts) { f.Policies[0].Spec.DryRun = true },
			verdict: Stale, allowed: true, summary: "would restart now (dry run"},
		{name: "settling", mutate: func(f *Facts) {
			f.Policies[0].Spec.Restart = &kickv1alpha1.RestartSpec{Settle: &metav1.Duration{Duration: time.Hour}}
		}, verdict: Stale, stage: StageSettle, reason: kickv1alpha1.GateSettling, until: t0.Add(61 * time.Minute)},
		{name: "settled", mutate: func(f *Facts) {
			f.Policies[0].Spec.Restart = &kickv1alpha1.RestartSpec{Settle: &metav1.Duration{Duration: 5 * time.Minute}}
		}, verdict: Stale, allowed: true},
		{name: "a person's request stands for its own change", mutate: func(f *Facts) {
			f.Dependencies[0].Record = relevant(t0.Add(-time.Minute))
			f.Request = &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "deployment-web",
				Annotations: map[string]string{kickv1alpha1.ChangeAnnotation: t0.Add(5 * time.Minute).Format(time.RFC3339Nano)}}}
		}, verdict: Stale, allowed: true},
		{name: "halted: a restart for the same change failed", mutate: func(f *Facts) {
			f.Halts = []Halt{{Source: "Secret/db", Change: t0.Add(time.Minute), Workload: "Deployment api", Request: "deployment-api", Reason: "ProgressDeadlineExceeded"}}
		}, verdict: Stale, stage: StageHalt, reason: kickv1alpha1.GateRolloutHalted},
		{name: "halt before GitOps", mutate: func(f *Facts) {
			argo(&f.Policies[0].Spec)
			f.GitOps = outOfSync
			f.Halts = []Halt{{Source: "Secret/db", Change: t0.Add(time.Minute)}}
		}, verdict: Stale, stage: StageHalt, reason: kickv1alpha1.GateRolloutHalted},
		{name: "a newer change of the source ends the halt", mutate: func(f *Facts) {
			f.Halts = []Halt{{Source: "Secret/db", Change: t0.Add(30 * time.Second)}}
		}, verdict: Stale, allowed: true},
		{name: "a halt of another source", mutate: func(f *Facts) {
			f.Halts = []Halt{{Source: "ConfigMap/db", Change: t0.Add(time.Minute)}}
		}, verdict: Stale, allowed: true},
		{name: "a halted change the pods already carry", mutate: func(f *Facts) {
			f.Dependencies = append(f.Dependencies, Dependency{Kind: "Secret", Name: "tls", Counted: true, Record: relevant(t0.Add(-time.Minute))})
			f.Halts = []Halt{{Source: "Secret/tls", Change: t0.Add(-time.Minute)}}
			f.Rollout.Since = t0
		}, verdict: Stale, allowed: true},
		{name: "a hold of the namespace", mutate: func(f *Facts) {
			f.Holds = []Hold{{Name: "hold-namespace", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldNamespace}, Reason: "INC-42"}}
		}, verdict: Stale, stage: StageHold, reason: kickv1alpha1.GateHeld},
		{name: "a hold of the workload", mutate: func(f *Facts) {
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldDeployment, Name: "web"}, Reason: "INC-42"}}
		}, verdict: Stale, stage: StageHold, reason: kickv1alpha1.GateHeld},
		{name: "a hold of another workload, or of a workload of another kind", mutate: func(f *Facts) {
			f.Holds = []Hold{{Name: "a", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldDeployment, Name: "api"}, Reason: "x"},
				{Name: "b", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldStatefulSet, Name: "web"}, Reason: "x"}}
		}, verdict: Stale, allowed: true},
		{name: "a hold of the changed source", mutate: func(f *Facts) {
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "db"}, Reason: "INC-42"}}
		}, verdict: Stale, stage: StageHold, reason: kickv1alpha1.GateHeld},
		{name: "a hold of a source the pods already carry", mutate: func(f *Facts) {
			f.Dependencies = append(f.Dependencies, Dependency{Kind: "ConfigMap", Name: "flags", Counted: true, Record: relevant(t0.Add(-time.Minute))})
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldConfigMap, Name: "flags"}, Reason: "x"}}
			f.Rollout.Since = t0
		}, verdict: Stale, allowed: true},
		{name: "a hold of a ConfigMap of the changed Secret's name", mutate: func(f *Facts) {
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldConfigMap, Name: "db"}, Reason: "x"}}
		}, verdict: Stale, allowed: true},
		{name: "an expired hold", mutate: func(f *Facts) {
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldNamespace}, Reason: "x", ExpiresAt: t0.Add(10 * time.Minute)}}
		}, verdict: Stale, allowed: true},
		{name: "a hold that expires", mutate: func(f *Facts) {
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldNamespace}, Reason: "x", ExpiresAt: t0.Add(time.Hour)}}
		}, verdict: Stale, stage: StageHold, reason: kickv1alpha1.GateHeld, until: t0.Add(time.Hour)},
		{name: "a hold comes before the schedule, the halt and GitOps", mutate: func(f *Facts) {
			argo(&f.Policies[0].Spec)
			f.GitOps = outOfSync
			f.Halts = []Halt{{Source: "Secret/db", Change: t0.Add(time.Minute)}}
			f.Policies[0].Spec.Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowDeny, Cron: "* * * * *", Duration: "1h"}}}
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "db"}, Reason: "x"}}
		}, verdict: Stale, stage: StageHold, reason: kickv1alpha1.GateHeld},
		{name: "a held source: a change the records do not show yet waits for its record", mutate: func(f *Facts) {
			f.Dependencies[0].Record = relevant(t0.Add(-time.Minute))
			f.Handed = freshness.At(t0.Add(10*time.Minute - time.Second))
			f.Rollout.Since = t0
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "db"}, Reason: "x"}}
		}, verdict: Stale, stage: StageHold, reason: kickv1alpha1.GateHeld, until: t0.Add(10*time.Minute - time.Second + RecordLag)},
		{name: "a hold of a source the workload does not consume does not wait for records", mutate: func(f *Facts) {
			f.Dependencies[0].Record = relevant(t0.Add(-time.Minute))
			f.Handed = freshness.At(t0.Add(10*time.Minute - time.Second))
			f.Rollout.Since = t0
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "other"}, Reason: "x"}}
		}, verdict: Stale, allowed: true},
		{name: "a held source: a person's request passes once no record shows its change", mutate: func(f *Facts) {
			f.Dependencies[0].Record = relevant(t0.Add(-time.Minute))
			f.Handed = freshness.At(t0.Add(10*time.Minute - RecordLag))
			f.Rollout.Since = t0
			f.Holds = []Hold{{Name: "h", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "db"}, Reason: "x"}}
		}, verdict: Stale, allowed: true},
		{name: "no restart slot", mutate: func(f *Facts) {
			f.Budget = &Budget{Message: "5 of 5 restarts of KickPolicy p in progress (restart.maxConcurrent); 37 waiting"}
		}, verdict: Stale, stage: StageBudget, reason: kickv1alpha1.GateRestartBudget},
		{name: "the budget comes last", mutate: func(f *Facts) {
			argo(&f.Policies[0].Spec)
			f.GitOps = outOfSync
			f.Budget = &Budget{Message: "full"}
		}, verdict: Stale, stage: StageGitOps, reason: kickv1alpha1.GateOwnerOutOfSync, until: t0.Add(time.Hour)},
		{name: "an earlier wave has not restarted yet", mutate: func(f *Facts) {
			waved(f, 0)
			f.Waves.Earlier["Secret/db"][0].Since = t0
		}, verdict: Stale, stage: StageWave, reason: kickv1alpha1.GateEarlierWave},
		{name: "an earlier wave is still rolling out", mutate: func(f *Facts) {
			waved(f, 0)
			f.Waves.Earlier["Secret/db"][0].Complete = false
		}, verdict: Stale, stage: StageWave, reason: kickv1alpha1.GateEarlierWave},
		{name: "an earlier wave bakes", mutate: func(f *Facts) {
			waved(f, 5*time.Minute)
		}, verdict: Stale, stage: StageWave, reason: kickv1alpha1.GateEarlierWave, until: t0.Add(13 * time.Minute)},
		{name: "an earlier wave has baked", mutate: func(f *Facts) {
			waved(f, time.Minute)
		}, verdict: Stale, allowed: true},
		{name: "the wave comes before GitOps", mutate: func(f *Facts) {
			waved(f, 0)
			f.Waves.Earlier["Secret/db"][0].Complete = false
			argo(&f.Policies[0].Spec)
			f.GitOps = outOfSync
		}, verdict: Stale, stage: StageWave, reason: kickv1alpha1.GateEarlierWave},
		{name: "a halt comes before the wave", mutate: func(f *Facts) {
			waved(f, 0)
			f.Waves.Earlier["Secret/db"][0].Complete = false
			f.Halts = []Halt{{Source: "Secret/db", Change: t0.Add(time.Minute)}}
		}, verdict: Stale, stage: StageHalt, reason: kickv1alpha1.GateRolloutHalted},
		{name: "a released failure does not hold the next wave", mutate: func(f *Facts) {
			waved(f, 0)
			f.Waves.Earlier["Secret/db"][0].Complete = false
			f.Waves.Earlier["Secret/db"][0].Released = true
		}, verdict: Stale, allowed: true},
		{name: "the first wave goes at once", mutate: func(f *Facts) {
			waved(f, 0)
			f.Target.Labels["tier"] = "canary"
			f.Waves = nil
		}, verdict: Stale, allowed: true},
		{name: "a change the records do not show yet", mutate: func(f *Facts) {
			waved(f, 0)
			f.Dependencies[0].Record = relevant(t0.Add(-time.Minute))
			f.Handed = freshness.At(t0.Add(10*time.Minute - time.Second))
		}, verdict: Stale, stage: StageWave, reason: kickv1alpha1.GateEarlierWave, until: t0.Add(10*time.Minute - time.Second + RecordLag)},
		{name: "a change no record shows is a person's", mutate: func(f *Facts) {
			waved(f, 0)
			f.Dependencies[0].Record = relevant(t0.Add(-time.Minute))
			f.Handed = freshness.At(t0.Add(10*time.Minute - RecordLag))
		}, verdict: Stale, allowed: true},
		{name: "a later wave the manager has not judged", mutate: func(f *Facts) {
			waved(f, 0)
			f.Waves = nil
		}, verdict: Stale, stage: StageWave},
		{name: "a handed change the cache does not show yet", mutate: func(f *Facts) {
			f.Dependencies[0].Record = nil
			f.Handed = freshness.At(t0.Add(time.Second))
		}, verdict: Stale, allowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := baseFacts()
			if tc.mutate != nil {
				tc.mutate(&f)
			}
			a := Assess(f)
			if a.Verdict != tc.verdict || a.Carried != tc.carried {
				t.Errorf("verdict %s carried %v (%s); want %s carried %v", a.Verdict, a.Carried, a.VerdictMessage, tc.verdict, tc.carried)
			}
			if a.Selection.State == Selected && (a.Gate.Allowed != tc.allowed || a.Gate.Stage != tc.stage || a.Gate.Reason != tc.reason && !tc.allowed) {
				t.Errorf("gate allowed %v stage %q reason %q (%s); want %v %q %q", a.Gate.Allowed, a.Gate.Stage, a.Gate.Reason, a.Gate.Message, tc.allowed, tc.stage, tc.reason)
			}
			if !a.Gate.Until.Equal(tc.until) {
				t.Errorf("gate until %v, want %v", a.Gate.Until, tc.until)
			}
			if !strings.HasPrefix(a.Summary, tc.summary) {
				t.Errorf("summary %q, want prefix %q", a.Summary, tc.summary)
			}
			if a.Selection.State == Selected && len(a.Gate.Stages) != 10 {
				t.Errorf("%d stages evaluated, want all 10", len(a.Gate.Stages))
			}
		})
	}
}

// waved orders the policy's restarts in two waves, "canary" (tier=canary,
// with bake) and "rest", putting web in "rest", with one canary that runs
// the change of Secret db since t0+2m and whose request completed at
// t0+8m.
func waved(f *Facts, bake time.Duration) {
	f.Policies[0].Spec.Restart = &kickv1alpha1.RestartSpec{Waves: []kickv1alpha1.RestartWave{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, Bake: &metav1.Duration{Duration: bake}},
		{Name: "rest"},
	}}
	f.Waves = &Waves{Earlier: map[string][]WaveMember{"Secret/db": {
		{Workload: "Deployment shop/web-canary", Wave: 0, Since: t0.Add(2 * time.Minute), Complete: true, CompletedAt: t0.Add(8 * time.Minute)},
	}}}
}

func TestWaveMessages(t *testing.T) {
	f := baseFacts()
	waved(&f, 0)
	f.Waves.Earlier["Secret/db"] = append(f.Waves.Earlier["Secret/db"],
		WaveMember{Workload: "Deployment shop/a", Since: t0},
		WaveMember{Workload: "Deployment shop/b", Since: t0},
	)
	a := Assess(f)
	want := `wave "rest" (2 of 3) waits for wave "canary" (1 of 3) to roll out the change of Secret/db: 2 of 3 workloads have not restarted yet (Deployment shop/a, Deployment shop/b)`
	if a.Gate.Message != want {
		t.Errorf("message\n %s\nwant\n %s", a.Gate.Message, want)
	}
	notYet := a.Gate.Message

	f = baseFacts()
	waved(&f, 5*time.Minute)
	a = Assess(f)
	if want := `wave "rest" (2 of 3) waits for wave "canary" (1 of 3) to bake (restart.waves bake 5m0s) until 2026-05-01T10:13:00Z`; a.Gate.Message != want {
		t.Errorf("message\n %s\nwant\n %s", a.Gate.Message, want)
	}

	rolling := baseFacts()
	waved(&rolling, 0)
	rolling.Waves.Earlier["Secret/db"][0].Complete = false
	if r := Assess(rolling); !SameWave(r.Gate.Message, notYet) || SameWave(r.Gate.Message, a.Gate.Message) {
		t.Errorf("SameWave: %q and %q are one wait; %q is another", r.Gate.Message, notYet, a.Gate.Message)
	}

	// A workload no wave selects goes last; a member in the same wave as
	// the workload, or a later one, never holds it.
	f = baseFacts()
	waved(&f, 0)
	f.Policies[0].Spec.Restart.Waves[1].Selector = metav1.LabelSelector{MatchLabels: map[string]string{"tier": "backend"}}
	f.Waves.Earlier["Secret/db"] = append(f.Waves.Earlier["Secret/db"], WaveMember{Workload: "Deployment shop/api", Wave: 1, Since: t0})
	a = Assess(f)
	if !strings.HasPrefix(a.Gate.Message, `the workloads no wave selects (3 of 3) waits for wave "rest" (2 of 3) to roll out the change of Secret/db: 1 of 1 workloads`) {
		t.Errorf("message %s", a.Gate.Message)
	}

	// A selector that cannot be parsed is a configuration error.
	f = baseFacts()
	waved(&f, 0)
	f.Policies[0].Spec.Restart.Waves[0].Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
	a = Assess(f)
	if a.Gate.Reason != kickv1alpha1.GateConfigurationError || !strings.Contains(a.Gate.Message, "restart.waves[0] (canary)") {
		t.Errorf("reason %s message %s", a.Gate.Reason, a.Gate.Message)
	}
}

func TestEarlierWave(t *testing.T) {
	f := baseFacts()
	waved(&f, 0)
	p := f.Policies[0]
	other := testPolicy("q", func(s *kickv1alpha1.KickPolicySpec) {
		s.Discovery.WorkloadSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}
	})
	policies := []kickv1alpha1.KickPolicy{p, other}
	for _, tc := range []struct {
		labels map[string]string
		wave   int
		ok     bool
	}{
		{labels: map[string]string{"app": "web", "tier": "canary"}, wave: 0, ok: true},
		{labels: map[string]string{"app": "web"}, ok: false},                                // its own wave
		{labels: map[string]string{"app": "db", "tier": "canary"}, ok: false},               // another policy's (none)
		{labels: map[string]string{"app": "web", "tier": "canary", "team": "x"}, ok: false}, // two policies
	} {
		wave, ok := EarlierWave(&p, policies, 1, tc.labels)
		if wave != tc.wave || ok != tc.ok {
			t.Errorf("%v: wave %d %v, want %d %v", tc.labels, wave, ok, tc.wave, tc.ok)
		}
	}
}

func TestLatestAndWhereItComesFrom(t *testing.T) {
	f := baseFacts()
	f.Dependencies = append(f.Dependencies,
		Dependency{Kind: "ConfigMap", Name: "cfg", Counted: true, Record: relevant(t0.Add(3 * time.Minute))},
		Dependency{Kind: "Secret", Name: "old", Counted: true, Record: baseline(t0.Add(-time.Hour), t0.Add(-time.Hour+time.Second/2))})
	a := Assess(f)
	if !a.Latest.Latest.Equal(t0.Add(3*time.Minute)) || a.LatestFrom != "ConfigMap/cfg" {
		t.Errorf("Λ = %v from %q, want the ConfigMap's change", a.Latest, a.LatestFrom)
	}
	if a.Dependencies[2].Record != RecordBaseline || !a.Dependencies[2].Change.Latest.Equal(t0.Add(-time.Hour+time.Second/2)) {
		t.Errorf("baseline dependency: %+v", a.Dependencies[2])
	}
	f.Request = &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "r",
		Annotations: map[string]string{kickv1alpha1.ChangeAnnotation: t0.Add(4 * time.Minute).Format(time.RFC3339Nano)}}}
	if a := Assess(f); a.LatestFrom != "kickrequest/r ("+kickv1alpha1.ChangeAnnotation+")" {
		t.Errorf("Λ from %q, want the request's annotation", a.LatestFrom)
	}
}

func TestReopen(t *testing.T) {
	finished := func(phase kickv1alpha1.KickRequestPhase, reported time.Time) *kickv1alpha1.KickRequest {
		m := metav1.NewMicroTime(reported)
		return &kickv1alpha1.KickRequest{Status: kickv1alpha1.KickRequestStatus{Phase: phase, LatestObservedDependencyChange: &m}}
	}
	f := baseFacts()
	a := Assess(f)
	if v := a.Reopen(finished(kickv1alpha1.PhaseSucceeded, t0)); !v.Reopen || v.Reason != kickv1alpha1.ReasonNewChange {
		t.Errorf("stale after success: %+v", v)
	}
	if v := a.Reopen(finished(kickv1alpha1.PhaseDryRun, t0.Add(time.Minute))); v.Reopen || v.Reason != kickv1alpha1.ReasonNoNewerChange {
		t.Errorf("dry run that reported this change: %+v", v)
	}
	if v := a.Reopen(finished(kickv1alpha1.PhaseDryRun, t0)); !v.Reopen {
		t.Errorf("dry run with a newer change: %+v", v)
	}
	f.Rollout.Start = t0.Add(2 * time.Minute)
	a = Assess(f)
	if v := a.Reopen(finished(kickv1alpha1.PhaseSucceeded, t0)); v.Reopen || v.Reason != kickv1alpha1.ReasonAlreadyCarried {
		t.Errorf("carried: %+v", v)
	}
	f.Target.Labels = nil
	a = Assess(f)
	if v := a.Reopen(finished(kickv1alpha1.PhaseSucceeded, t0)); v.Reopen || v.Reason != string(kickv1alpha1.GateNotSelected) {
		t.Errorf("not selected: %+v", v)
	}
}

func TestChangeAnnotationRoundTrip(t *testing.T) {
	for _, c := range []freshness.Change{
		freshness.At(t0.Add(123456789)),
		{Earliest: t0, Latest: t0.Add(time.Second / 3)},
	} {
		if got := ParseChange(FormatChange(c)); got != c {
			t.Errorf("round trip of %v gave %v", c, got)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-05-01T10:00:00Z/not-a-time"} {
		got := ParseChange(bad)
		if bad == "2026-05-01T10:00:00Z/not-a-time" {
			if got != freshness.At(t0) {
				t.Errorf("%q: %v, want the first bound alone", bad, got)
			}
			continue
		}
		if !got.IsZero() {
			t.Errorf("%q parsed as %v", bad, got)
		}
	}
}

func TestCurrentRequest(t *testing.T) {
	mk := func(name string, created time.Time, phase kickv1alpha1.KickRequestPhase) kickv1alpha1.KickRequest {
		return kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
			Status: kickv1alpha1.KickRequestStatus{Phase: phase}}
	}
	reqs := []kickv1alpha1.KickRequest{
		mk("done", t0, kickv1alpha1.PhaseSucceeded),
		mk("young", t0.Add(2*time.Second), kickv1alpha1.PhasePending),
		mk("old", t0.Add(time.Second), kickv1alpha1.PhaseWaitingForGate),
	}
	if got := CurrentRequest(reqs); got == nil || got.Name != "old" {
		t.Errorf("current = %v, want the oldest open request", got)
	}
	if got := CurrentRequest(reqs[:1]); got == nil || got.Name != "done" {
		t.Errorf("current = %v, want the finished one", got)
	}
	if CurrentRequest(nil) != nil {
		t.Error("no requests, yet a current one")
	}
}

// The wave stage names what holds the restart (source, change, earlier
// wave, step), so the manager can wake together the requests held alike.
func TestWaveHoldNamesTheGroup(t *testing.T) {
	rolling := baseFacts()
	waved(&rolling, 0)
	rolling.Waves.Earlier["Secret/db"][0].Complete = false
	baking := baseFacts()
	waved(&baking, 5*time.Minute)
	var holds []*WaveHold
	for _, f := range []Facts{rolling, baking} {
		r, ok := Assess(f).Gate.StageResult(StageWave)
		if !ok || r.Open || r.Wave == nil {
			t.Fatalf("wave stage %+v, want held with a WaveHold", r)
		}
		holds = append(holds, r.Wave)
	}
	if h := holds[0]; h.Source != "Secret/db" || h.Wave != 0 || h.Baking || h.Change.IsZero() {
		t.Errorf("rolling out: %+v", h)
	}
	if h := holds[1]; h.Source != "Secret/db" || h.Wave != 0 || !h.Baking || !h.Change.Equal(holds[0].Change) {
		t.Errorf("baking: %+v", h)
	}
	done := baseFacts()
	waved(&done, 0)
	if r, _ := Assess(done).Gate.StageResult(StageWave); !r.Open || r.Wave != nil {
		t.Errorf("every earlier wave done: %+v", r)
	}
}

// A canary that dropped out of availability during the bake and came back
// starts the bake again from its return, even when no look saw it out.
func TestBakeRestartsWhenAMemberCameBack(t *testing.T) {
	f := baseFacts()
	waved(&f, 5*time.Minute) // completed at t0+8m: baked until t0+13m
	f.Now = t0.Add(12 * time.Minute)
	f.Waves.Earlier["Secret/db"][0].AvailableSince = t0.Add(11 * time.Minute)
	a := Assess(f)
	if want := t0.Add(16 * time.Minute); a.Gate.Stage != StageWave || !a.Gate.Until.Equal(want) {
		t.Errorf("stage %s until %s, want the wave stage until %s (5m from the return)", a.Gate.Stage, a.Gate.Until, want)
	}
	f.Waves.Earlier["Secret/db"][0].AvailableSince = t0 // available all along
	if a := Assess(f); !a.Gate.Until.Equal(t0.Add(13 * time.Minute)) {
		t.Errorf("until %s, want %s", a.Gate.Until, t0.Add(13*time.Minute))
	}
	// A hostile tenant writes its Deployment's Available condition a year
	// ahead: the bake counts from now at the latest, never from then.
	f.Waves.Earlier["Secret/db"][0].AvailableSince = f.Now.AddDate(1, 0, 0)
	if a, want := Assess(f), f.Now.Add(5*time.Minute); !a.Gate.Until.Equal(want) {
		t.Errorf("forged future availability: until %s, want %s (5m from now)", a.Gate.Until, want)
	}
}
