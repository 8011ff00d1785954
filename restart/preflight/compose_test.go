package preflight

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/freshness"
)

var now = time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)

// assessed runs the real assessment for deployment name, which consumes
// Secret db, as if db had just been written (a relevant change at now).
func assessed(name string, mutate ...func(*assess.Facts)) Consumer {
	n := kickv1alpha1.NewNanoTime(now)
	f := assess.Facts{
		Now:    now,
		Target: assess.Target{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: name, Labels: map[string]string{"app": "web"}},
		Policies: []kickv1alpha1.KickPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "default"},
			Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{
				WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
		Dependencies: []assess.Dependency{{Kind: "Secret", Name: "db", Counted: true,
			Record: &kickv1alpha1.SourceObservationSpec{Class: kickv1alpha1.ObservationRelevant, LastRelevantChangeTime: &n}}},
		Rollout: freshness.Rollout{Start: now.Add(-time.Hour), Complete: true},
	}
	for _, m := range mutate {
		m(&f)
	}
	a := assess.Assess(f)
	return Consumer{Kind: f.Target.Kind, Name: name, Assessment: &a}
}

func spec(f *assess.Facts) *kickv1alpha1.KickPolicySpec { return &f.Policies[0].Spec }

// held adds a KickHold of the workload's namespace.
func held(kind kickv1alpha1.HoldKind, name, reason string, expires time.Time) func(*assess.Facts) {
	return func(f *assess.Facts) {
		t := kickv1alpha1.HoldTarget{Kind: kind, Name: name}
		f.Holds = append(f.Holds, assess.Hold{Name: kickv1alpha1.HoldName(t), Target: t, Reason: reason, ExpiresAt: expires})
	}
}

func TestWordingPerStage(t *testing.T) {
	argo := func(reason kickv1alpha1.GateReason, until time.Time, requireReconciled bool) func(*assess.Facts) {
		return func(f *assess.Facts) {
			spec(f).GitOps = &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderArgoCD, RequireReconciled: &requireReconciled}
			f.GitOps = &gitops.Decision{Reason: reason, Provider: kickv1alpha1.ProviderArgoCD, RequeueAt: until, Message: "AppProject argocd/shop does not let it sync",
				Owner: &kickv1alpha1.GitOpsOwner{Provider: kickv1alpha1.ProviderArgoCD, Kind: "Application", Namespace: "argocd", Name: "shop-api"}}
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*assess.Facts)
		want   string
	}{
		{"allowed", nil, "kick: restarts deployment/web now (policy default)"},
		{"deny window", func(f *assess.Facts) {
			spec(f).Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowDeny, Cron: "0 22 * * *", Duration: "4h"}}}
		}, "kick: restarts deployment/web when the Deny window ends at 2026-12-02T02:00Z"},
		{"outside allow windows", func(f *assess.Facts) {
			spec(f).Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowAllow, Cron: "0 6 * * *", Duration: "1h"}}}
		}, "kick: restarts deployment/web when an Allow window opens at 2026-12-02T06:00Z"},
		{"suspended", func(f *assess.Facts) { spec(f).Suspend = true }, "kick: no restart of deployment/web while policy default is suspended"},
		{"dry run", func(f *assess.Facts) { spec(f).DryRun = true }, "kick: no restart of deployment/web: policy default is a dry run (KICK records what it would do)"},
		{"settle", func(f *assess.Facts) {
			spec(f).Restart = &kickv1alpha1.RestartSpec{Settle: &metav1.Duration{Duration: 90 * time.Second}}
		}, "kick: restarts deployment/web at 2026-12-01T22:01:30Z, once the sources are quiet for restart.settle (policy default)"},
		{"min interval", func(f *assess.Facts) {
			f.Target.RestartedAt = now.Add(-time.Minute)
			spec(f).Restart = &kickv1alpha1.RestartSpec{MinInterval: &metav1.Duration{Duration: 5 * time.Minute}}
		},
			"kick: restarts deployment/web at 2026-12-01T22:04Z, when restart.minInterval has passed (policy default)"},
		{"argo cd sync window", argo(kickv1alpha1.GateOutsideSchedule, time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), true),
			"kick: restarts deployment/web after Argo CD app shop-api is Synced (sync window closed until 2026-12-02T06:00Z)"},
		{"argo cd sync window, requireReconciled off", argo(kickv1alpha1.GateOutsideSchedule, time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), false),
			"kick: restarts deployment/web when Argo CD app shop-api may sync (sync window closed until 2026-12-02T06:00Z)"},
		{"argo cd out of sync", argo(kickv1alpha1.GateOwnerOutOfSync, time.Time{}, true), "kick: restarts deployment/web after Argo CD app shop-api is Synced"},
		{"a hold of the written secret", held(kickv1alpha1.HoldSecret, "db", "INC-42: rotating", time.Time{}),
			`kick: restarts deployment/web once KickHold hold-secret-db is released: "INC-42: rotating"`},
		{"a hold of the namespace, with an expiry", held(kickv1alpha1.HoldNamespace, "", "INC-42", now.Add(2*time.Hour)),
			`kick: restarts deployment/web once KickHold hold-namespace is released or expires (2026-12-02T00:00Z): "INC-42"`},
		{"a hold of the workload, with a long reason cut last", held(kickv1alpha1.HoldDeployment, "web", strings.Repeat("long story ", 20), time.Time{}),
			`kick: restarts deployment/web once KickHold hold-deployment-web is released: "long story long story long story long st…`},
		{"a hold of another source", held(kickv1alpha1.HoldSecret, "cache", "INC-42", time.Time{}), "kick: restarts deployment/web now (policy default)"},
		{"an expired hold", held(kickv1alpha1.HoldNamespace, "", "INC-42", now.Add(-time.Second)), "kick: restarts deployment/web now (policy default)"},
		{"rollout in progress", func(f *assess.Facts) { f.Rollout.Complete = false },
			"kick: restarts deployment/web once its current rollout completes (policy default)"},
		{"ambiguous", func(f *assess.Facts) {
			p := f.Policies[0]
			p.Name = "other"
			f.Policies = append(f.Policies, p)
		}, "kick: cannot assess deployment/web: several KickPolicies select it (default, other)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m []func(*assess.Facts)
			if tc.mutate != nil {
				m = append(m, tc.mutate)
			}
			a := Compose(Input{Operation: Update, Kind: "Secret", Consumers: []Consumer{assessed("web", m...)}})
			if len(a.Warnings) != 1 || a.Warnings[0] != tc.want {
				t.Errorf("warnings %q\nwant      %q", a.Warnings, tc.want)
			}
			if a.Denied {
				t.Error("denied without deny mode")
			}
		})
	}
}

func TestNoWarningForUnmanagedOrOutOfScope(t *testing.T) {
	notSelected := assessed("web", func(f *assess.Facts) { f.Target.Labels = nil })
	outOfScope := assessed("web", func(f *assess.Facts) {
		spec(f).Discovery.DependencySelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kick": "yes"}}
	})
	for _, in := range []Input{
		{Operation: Update, Kind: "Secret"},
		{Operation: Update, Kind: "Secret", Consumers: []Consumer{notSelected}},
		{Operation: Create, Kind: "Secret", Consumers: []Consumer{outOfScope}},
	} {
		if a := Compose(in); len(a.Warnings) != 0 || len(a.Audit) != 0 {
			t.Errorf("%+v: answer %+v, want none", in, a)
		}
	}
}

func TestUnchangedSaysNoRestart(t *testing.T) {
	a := Compose(Input{Operation: Update, Kind: "ConfigMap", Unchanged: true, Consumers: []Consumer{assessed("web")}})
	if len(a.Warnings) != 1 || a.Warnings[0] != "kick: no restart: data unchanged" || a.Audit[AuditDecision] != "NoRestart" {
		t.Errorf("answer %+v", a)
	}
}

func TestCannotAssess(t *testing.T) {
	a := Compose(Input{Operation: Update, Kind: "Secret", CannotAssess: "cache not ready", Consumers: []Consumer{assessed("web")}})
	if len(a.Warnings) != 1 || a.Warnings[0] != "kick: cannot assess (cache not ready)" {
		t.Errorf("answer %+v", a)
	}
}

func TestDeleteWarnsAboutConsumers(t *testing.T) {
	a := Compose(Input{Operation: Delete, Kind: "Secret", Consumers: []Consumer{{Kind: kickv1alpha1.TargetStatefulSet, Name: "db"}}})
	want := "kick: statefulset/db uses this secret: its new pods fail to start without it (unless optional)"
	if len(a.Warnings) != 1 || a.Warnings[0] != want {
		t.Errorf("warnings %q, want %q", a.Warnings, want)
	}
}

func TestManyConsumersAreSummarised(t *testing.T) {
	var consumers []Consumer
	for i := range 16 {
		consumers = append(consumers, assessed(fmt.Sprintf("web-%02d", i)))
	}
	a := Compose(Input{Operation: Update, Kind: "Secret", Consumers: consumers})
	if len(a.Warnings) != MaxWarnings {
		t.Fatalf("%d warnings, want %d: %q", len(a.Warnings), MaxWarnings, a.Warnings)
	}
	if a.Warnings[0] != "kick: plan of policy default: restarts 16 workloads at once" {
		t.Errorf("plan %q", a.Warnings[0])
	}
	if last := a.Warnings[MaxWarnings-1]; !strings.HasPrefix(last, "kick: … and 13 more (13 of them restart") {
		t.Errorf("summary %q", last)
	}
	for i := range 16 {
		if !strings.Contains(a.Audit[AuditConsumers], fmt.Sprintf("deployment/web-%02d now", i)) {
			t.Errorf("audit annotation misses web-%02d: %s", i, a.Audit[AuditConsumers])
		}
	}
	if a.Audit[AuditDecision] != "Restart" {
		t.Errorf("decision %q", a.Audit[AuditDecision])
	}
	if want := "plan of policy default: restarts 16 workloads at once"; a.Audit[AuditPlan] != want {
		t.Errorf("plan %q, want %q", a.Audit[AuditPlan], want)
	}
}

func TestConsumersBeyondMaxAssessedAreNamed(t *testing.T) {
	var consumers, rest []Consumer
	for i := range 6 {
		consumers = append(consumers, assessed(fmt.Sprintf("web-%02d", i)))
	}
	for i := range 3 {
		rest = append(rest, Consumer{Kind: kickv1alpha1.TargetStatefulSet, Name: fmt.Sprintf("db-%d", i)})
	}
	a := Compose(Input{Operation: Update, Kind: "Secret", Consumers: consumers, NotAssessed: rest})
	want := "kick: … and 3 more (3 of them restart) and 3 not assessed (over 200 consumers); see the audit annotation"
	if len(a.Warnings) != MaxWarnings || a.Warnings[MaxWarnings-1] != want {
		t.Errorf("warnings %q, want the last to be %q", a.Warnings, want)
	}
	if got := a.Audit[AuditConsumers]; !strings.HasSuffix(got, "restarts deployment/web-05 now (policy default); not assessed: statefulset/db-0; statefulset/db-1; statefulset/db-2") {
		t.Errorf("audit annotation %q", got)
	}
	if a.Audit[AuditDecision] != "Restart" {
		t.Errorf("decision %q", a.Audit[AuditDecision])
	}
	if want := "plan of policy default: restarts 6 workloads at once, and 3 consumers not assessed"; a.Audit[AuditPlan] != want {
		t.Errorf("plan %q, want %q", a.Audit[AuditPlan], want)
	}
	// None assessed restarts: the decision says some were not assessed.
	a = Compose(Input{Operation: Update, Kind: "Secret", NotAssessed: rest})
	if want := "kick: … and 3 more consumers, not assessed (over 200); see the audit annotation"; len(a.Warnings) != 1 || a.Warnings[0] != want {
		t.Errorf("warnings %q, want %q", a.Warnings, want)
	}
	if a.Audit[AuditDecision] != "NotAllAssessed" {
		t.Errorf("decision %q", a.Audit[AuditDecision])
	}
}

func TestLengthCap(t *testing.T) {
	long := strings.Repeat("ä", 240)
	a := Compose(Input{Operation: Update, Kind: "Secret", Consumers: []Consumer{assessed(long)}})
	w := a.Warnings[0]
	if n := utf8.RuneCountInString(w); n >= 120 || !utf8.ValidString(w) || !strings.HasSuffix(w, "…") {
		t.Errorf("warning of %d characters (valid %v): %q", n, utf8.ValidString(w), w)
	}
	var many []Consumer
	for i := range 400 {
		many = append(many, assessed(fmt.Sprintf("%s-%d", strings.Repeat("x", 200), i)))
	}
	if n := len(Compose(Input{Operation: Update, Kind: "Secret", Consumers: many}).Audit[AuditConsumers]); n > MaxAudit {
		t.Errorf("audit annotation of %d bytes, over %d", n, MaxAudit)
	}
}

func TestDenyMode(t *testing.T) {
	deny := assessed("web", func(f *assess.Facts) {
		spec(f).Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowDeny, Cron: "0 22 * * *", Duration: "4h"}}}
	})
	allow := assessed("web", func(f *assess.Facts) {
		spec(f).Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowAllow, Cron: "0 6 * * *", Duration: "1h"}}}
	})
	for _, tc := range []struct {
		in     Input
		denied bool
	}{
		{Input{Operation: Update, Kind: "Secret", DenyInDenyWindows: true, Consumers: []Consumer{deny}}, true},
		{Input{Operation: Update, Kind: "Secret", Consumers: []Consumer{deny}}, false},
		{Input{Operation: Update, Kind: "Secret", DenyInDenyWindows: true, Unchanged: true, Consumers: []Consumer{deny}}, false},
		{Input{Operation: Update, Kind: "ConfigMap", DenyInDenyWindows: true, Consumers: []Consumer{deny}}, false},
		{Input{Operation: Create, Kind: "Secret", DenyInDenyWindows: true, Consumers: []Consumer{deny}}, false},
		{Input{Operation: Update, Kind: "Secret", DenyInDenyWindows: true, Consumers: []Consumer{allow}}, false},
	} {
		a := Compose(tc.in)
		if a.Denied != tc.denied {
			t.Errorf("%+v: denied %v, want %v (%s)", tc.in, a.Denied, tc.denied, a.Message)
		}
		if a.Denied && !strings.Contains(a.Message, "deployment/web is inside a Deny window") {
			t.Errorf("message %q", a.Message)
		}
	}
}

func TestWhen(t *testing.T) {
	for in, want := range map[time.Time]string{
		time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC):                    "2026-12-02T02:00Z",
		time.Date(2026, 12, 2, 2, 0, 5, 0, time.UTC):                    "2026-12-02T02:00:05Z",
		time.Date(2026, 12, 2, 3, 0, 0, 0, time.FixedZone("CET", 3600)): "2026-12-02T02:00Z",
	} {
		if got := When(in); got != want {
			t.Errorf("When(%v) = %q, want %q", in, got, want)
		}
	}
}
