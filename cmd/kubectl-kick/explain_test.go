package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

const fingerprint = "0123456789abcdef0123456789abcdef"

// scene builds the facts explain works from, without a cluster.
type scene struct {
	deploy   *appsv1.Deployment
	rsAt     time.Time
	policies []kickv1alpha1.KickPolicy
	deps     []depFacts
	requests []kickv1alpha1.KickRequest
	now      time.Time
}

func newScene() *scene {
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web", Generation: 1, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "app:1", EnvFrom: []corev1.EnvFromSource{
						{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
					}}},
				},
			},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1},
	}
	return &scene{
		deploy:   d,
		rsAt:     t0,
		policies: []kickv1alpha1.KickPolicy{policyFor("web-only", "web")},
		deps: []depFacts{{
			dep:    discovery.Dependency{APIVersion: "v1", Kind: "Secret", Name: "db"},
			fields: []string{"containers[app].envFrom"},
			labels: map[string]string{"tier": "db"},
			record: record("Secret", "db", kickv1alpha1.ObservationBaseline, t0.Add(-time.Hour), t0.Add(-time.Hour+time.Second/2)),
		}},
		now: t0.Add(10 * time.Minute),
	}
}

func policyFor(name, app string) kickv1alpha1.KickPolicy {
	return kickv1alpha1.KickPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{
			WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}},
	}
}

func record(kind, name string, class kickv1alpha1.ObservationClass, changed, seen time.Time) *kickv1alpha1.SourceObservation {
	rec := &kickv1alpha1.SourceObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: kickv1alpha1.ObservationName(kind, name)},
		Spec: kickv1alpha1.SourceObservationSpec{
			Source:              kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: kickv1alpha1.SourceKind(kind), Name: name},
			Class:               class,
			RelevantFingerprint: fingerprint,
		},
	}
	c := kickv1alpha1.NewNanoTime(changed)
	rec.Spec.LastRelevantChangeTime = &c
	if class == kickv1alpha1.ObservationBaseline {
		s := kickv1alpha1.NewNanoTime(seen)
		rec.Spec.BaselineObservedAt = &s
	}
	return rec
}

func (s *scene) facts() *facts {
	d := s.deploy.DeepCopy()
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc"}
	rs := appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-abc", CreationTimestamp: metav1.NewTime(s.rsAt),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Template: *tmpl},
	}
	return &facts{
		now: s.now, namespace: "shop", kind: kickv1alpha1.TargetDeployment, name: "web",
		workload: d, rollout: freshness.Deployment(d, freshness.ReplicaSetRefs(rs)),
		policies: s.policies, deps: s.deps, requests: s.requests,
	}
}

func (s *scene) relevantChange(at time.Time) {
	s.deps[0].record = record("Secret", "db", kickv1alpha1.ObservationRelevant, at, time.Time{})
}

func explainText(t *testing.T, e *explanation) string {
	t.Helper()
	var out bytes.Buffer
	printExplanation(&out, e)
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{out.String(), string(b)} {
		if strings.Contains(s, fingerprint) {
			t.Fatalf("output shows a fingerprint:\n%s", s)
		}
	}
	return out.String()
}

func TestExplainVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(*scene)
		verdict  string
		summary  string
		contains []string
	}{
		{
			name: "fresh: the baseline predates the rollout", verdict: string(assess.Fresh), summary: "nothing to do: fresh",
			contains: []string{
				"KickPolicy:     web-only",
				"Secret/db  containers[app].envFrom  in scope  changed between 2026-05-01T09:00:00Z and 2026-05-01T09:00:00.5Z (baseline",
				"Rollout:        started 2026-05-01T10:00:00Z (σ); complete: rollout of ReplicaSet web-abc complete",
				"Verdict:        fresh: dependency changed at",
				"schedule:     open: no schedule windows",
				"gitOps:       provider None: no GitOps gate",
				"minInterval:  30s: no restart stamp on the pod template",
				"KickRequest:    none for this workload",
			},
		},
		{
			name: "stale under a dry-run policy", verdict: string(assess.Stale),
			summary: "would restart now (dry run: KICK records phase DryRun and patches nothing)",
			setup: func(s *scene) {
				s.policies[0].Spec.DryRun = true
				s.relevantChange(t0.Add(5*time.Minute + 123*time.Millisecond))
			},
			contains: []string{
				"changed at 2026-05-01T10:05:00.123Z (seen by KICK)",
				"Latest change:  2026-05-01T10:05:00.123Z (Λ, from Secret/db)",
				"Verdict:        stale: dependency changed at 2026-05-01T10:05:00.123Z, after the rollout started at 2026-05-01T10:00:00Z: restart needed",
				"dryRun:       yes",
			},
		},
		{
			name: "stale inside a Deny window", verdict: string(assess.Stale),
			summary: "waiting for OutsideSchedule until 2026-05-01T12:00:00Z",
			setup: func(s *scene) {
				s.policies[0].Spec.Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowDeny, Cron: "0 10 * * *", Duration: "2h"}}}
				s.relevantChange(t0.Add(5 * time.Minute))
			},
			contains: []string{"schedule:     closed: waiting for OutsideSchedule until 2026-05-01T12:00:00Z (inside Deny window 0 until 2026-05-01T12:00:00Z)"},
		},
		{
			name: "stale within minInterval of the last restart", verdict: string(assess.Stale),
			summary: "waiting for MinIntervalNotElapsed until 2026-05-01T10:10:20Z",
			setup: func(s *scene) {
				s.deploy.Spec.Template.Annotations = map[string]string{freshness.RestartedAtAnnotation: freshness.FormatStamp(t0.Add(9*time.Minute + 50*time.Second))}
				s.relevantChange(t0.Add(9*time.Minute + 55*time.Second))
			},
			contains: []string{"minInterval:  30s: last restart stamped 2026-05-01T10:09:50Z; waiting for MinIntervalNotElapsed until 2026-05-01T10:10:20Z"},
		},
		{
			name: "stale, suspended", verdict: string(assess.Stale), summary: "waiting for Suspended",
			setup: func(s *scene) {
				s.policies[0].Spec.Suspend = true
				s.relevantChange(t0.Add(time.Minute))
			},
			contains: []string{"suspend:      closed: waiting for Suspended (the policy starts no restarts until spec.suspend is unset)"},
		},
		{
			name: "stale, GitOps provider without a recorded decision", verdict: string(assess.Stale),
			summary: "would restart now if the GitOps gate allows it (provider ArgoCD)",
			setup: func(s *scene) {
				s.policies[0].Spec.GitOps = &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderArgoCD}
				s.relevantChange(t0.Add(time.Minute))
			},
			contains: []string{"gitOps:       provider ArgoCD: decided by the manager when a change arrives (provider ArgoCD)"},
		},
		{
			name: "stale, GitOps provider with the manager's decision on the open request", verdict: string(assess.Stale),
			summary: "waiting for OwnerOutOfSync until 2026-05-01T10:15:00Z",
			setup: func(s *scene) {
				s.policies[0].Spec.GitOps = &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderArgoCD}
				s.relevantChange(t0.Add(time.Minute))
				kr := kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "deployment-web", Namespace: "shop"}}
				kr.Spec.TargetRef = kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}
				kr.Status.Phase = kickv1alpha1.PhaseWaitingForApplicationSync
				kr.Status.Owner = &kickv1alpha1.GitOpsOwner{Provider: kickv1alpha1.ProviderArgoCD, Kind: "Application", Namespace: "argocd", Name: "shop"}
				kr.Status.Gate = &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateOwnerOutOfSync, Message: "Application argocd/shop is OutOfSync",
					RequeueAt: ptr.To(metav1.NewTime(t0.Add(15 * time.Minute)))}
				s.requests = append(s.requests, kr)
			},
			contains: []string{
				"last decision on kickrequest/deployment-web: OwnerOutOfSync: Application argocd/shop is OutOfSync (requeue at 2026-05-01T10:15:00Z); owner Application argocd/shop",
				"KickRequest:    deployment-web (open), phase WaitingForApplicationSync, reason OwnerOutOfSync: Application argocd/shop is OutOfSync; requeue at 2026-05-01T10:15:00Z\n",
			},
		},
		{
			name: "rollout in progress", verdict: string(assess.InProgress), summary: "waiting for RolloutInProgress: 0 of 1 replicas updated",
			setup: func(s *scene) {
				s.deploy.Status.UpdatedReplicas = 0
				s.relevantChange(t0.Add(time.Minute))
			},
			contains: []string{"Verdict:        rollout in progress: rollout not complete (RolloutInProgress)"},
		},
		{
			name: "not selected", verdict: string(assess.CannotAssess),
			summary: "cannot assess: no KickPolicy in namespace shop selects Deployment/web",
			setup:   func(s *scene) { s.policies = nil },
			contains: []string{
				"KickPolicy:     not selected by any KickPolicy in shop",
				"scope unknown (no single KickPolicy selects the workload)",
				"Gate:           not evaluated",
				"Latest change:  unknown: without a single KickPolicy the dependency scope is unknown (Λ)",
			},
		},
		{
			name: "selected by several", verdict: string(assess.CannotAssess),
			summary:  "cannot assess: KickPolicies a and b all select Deployment/web; KICK restarts a workload only when exactly one policy selects it, so narrow their workloadSelectors",
			setup:    func(s *scene) { s.policies = []kickv1alpha1.KickPolicy{policyFor("b", "web"), policyFor("a", "web")} },
			contains: []string{"KickPolicy:     selected by several: a, b — KICK will not restart it (AmbiguousPolicy)"},
		},
		{
			name: "a change outside the dependencySelector does not count", verdict: string(assess.Fresh), summary: "nothing to do: fresh",
			setup: func(s *scene) {
				s.policies[0].Spec.Discovery.DependencySelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kick": "yes"}}
				s.relevantChange(t0.Add(time.Minute))
			},
			contains: []string{
				"out of scope (outside the policy's dependencySelector)",
				"Latest change:  none recorded for a dependency in scope (Λ)",
			},
		},
		{
			name: "missing source without a record", verdict: string(assess.Fresh), summary: "nothing to do: fresh",
			setup: func(s *scene) {
				s.deps[0].record, s.deps[0].labels, s.deps[0].missing = nil, nil, true
			},
			contains: []string{"Secret/db  containers[app].envFrom  in scope  source missing; no record yet (baseline not observed)"},
		},
		{
			name: "unreadable records", verdict: string(assess.CannotAssess),
			summary: `cannot assess: cannot read the observation record of Secret/db: permission denied: you need "get" on sourceobservations.kick.corewire.io in namespace shop (ask for a Role granting it)`,
			setup: func(s *scene) {
				s.deps[0].record = nil
				s.deps[0].recordErr = readError("get", "sourceobservations.kick.corewire.io", "shop", forbidden())
			},
			contains: []string{"record unreadable: permission denied"},
		},
		{
			name: "the open request's change counts", verdict: string(assess.Stale), summary: "would restart now",
			setup: func(s *scene) {
				kr := kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "deployment-web", Namespace: "shop",
					Annotations: map[string]string{kickv1alpha1.ChangeAnnotation: "2026-05-01T10:09:00.5Z"}}}
				kr.Spec.TargetRef = kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}
				kr.Status.Phase = kickv1alpha1.PhasePending
				s.requests = append(s.requests, kr)
			},
			contains: []string{
				"Latest change:  2026-05-01T10:09:00.5Z (Λ, from kickrequest/deployment-web (kick.corewire.io/change))",
				"KickRequest:    deployment-web (open), phase Pending\n",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene()
			if tc.setup != nil {
				tc.setup(s)
			}
			e := analyze(s.facts())
			out := explainText(t, e)
			if e.Verdict != tc.verdict || e.Summary != tc.summary {
				t.Errorf("verdict %q, summary %q; want %q, %q", e.Verdict, e.Summary, tc.verdict, tc.summary)
			}
			if !strings.Contains(out, "Summary:        "+tc.summary+"\n") {
				t.Errorf("summary line missing")
			}
			for _, want := range tc.contains {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

func TestExplainPicksTheOpenRequest(t *testing.T) {
	mk := func(name string, created time.Time, phase kickv1alpha1.KickRequestPhase, completed time.Time) kickv1alpha1.KickRequest {
		kr := kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		kr.Status.Phase = phase
		if !completed.IsZero() {
			kr.Status.CompletionTime = ptr.To(metav1.NewTime(completed))
		}
		return kr
	}
	done1 := mk("a", t0, kickv1alpha1.PhaseSucceeded, t0.Add(time.Minute))
	done2 := mk("b", t0, kickv1alpha1.PhaseFailed, t0.Add(2*time.Minute))
	open1 := mk("c", t0.Add(time.Second), kickv1alpha1.PhaseWaitingForGate, time.Time{})
	open2 := mk("d", t0.Add(2*time.Second), kickv1alpha1.PhasePending, time.Time{})
	if kr := assess.CurrentRequest([]kickv1alpha1.KickRequest{done1, open2, done2, open1}); kr == nil || kr.Name != "c" {
		t.Fatalf("picked %v, want the oldest open request c", kr)
	}
	if kr := assess.CurrentRequest([]kickv1alpha1.KickRequest{done1, done2}); kr == nil || kr.Name != "b" {
		t.Fatalf("picked %v, want the request that finished last, b", kr)
	}
	if kr := assess.CurrentRequest(nil); kr != nil {
		t.Fatalf("picked %v from none", kr)
	}
}

func TestDependencyFields(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}}},
		Containers: []corev1.Container{{Name: "app",
			Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "a"}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "b"}}},
			},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			}}}},
			{Name: "vault", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: discovery.SecretsStoreDriver,
				VolumeAttributes: map[string]string{discovery.SecretProviderClassAttribute: "spc"}}}},
		},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
	}
	got := dependencyFields(spec)
	want := map[string]string{
		"Secret/db":               "initContainers[init].env,containers[app].envFrom",
		"ConfigMap/cfg":           "containers[app].env,volumes[all].projected",
		"Secret/tls":              "volumes[certs]",
		"SecretProviderClass/spc": "volumes[vault].csi",
	}
	deps := discovery.FromPodSpec(spec)
	if len(deps) != len(want) || len(got) != len(want) {
		t.Fatalf("dependencies %v, fields %v", deps, got)
	}
	for _, d := range deps {
		if f := strings.Join(got[d], ","); f != want[d.String()] {
			t.Errorf("%s: fields %q, want %q", d, f, want[d.String()])
		}
	}
	for _, fs := range got {
		for _, f := range fs {
			if strings.Contains(f, "password") || strings.Contains(f, "PASSWORD") {
				t.Fatalf("a field names a key or variable: %q", f)
			}
		}
	}
}

func TestSinceWaitsForKICKsAnswer(t *testing.T) {
	kr := &kickv1alpha1.KickRequest{Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseSucceeded, ObservedChange: "old"}}
	mark := since{change: "new"}
	if mark.done(kr) || mark.declinedReopen(kr) != nil {
		t.Fatal("the outcome from before the reopen counted")
	}
	// KICK reopened and ended in one write (a dry run).
	kr.Status.ObservedChange, kr.Status.Phase = "new", kickv1alpha1.PhaseDryRun
	kr.Status.Conditions = []metav1.Condition{{Type: kickv1alpha1.ConditionReopened, Status: "True", Reason: kickv1alpha1.ReasonNewChange}}
	if !mark.done(kr) || mark.declinedReopen(kr) != nil {
		t.Fatal("the new outcome did not count")
	}
	kr.Status.Conditions[0].Status, kr.Status.Conditions[0].Reason = "False", kickv1alpha1.ReasonAlreadyCarried
	if mark.declinedReopen(kr) == nil {
		t.Fatal("a declined reopen was not reported")
	}
	if !(since{}).done(kr) {
		t.Fatal("a request this command did not reopen waits for any terminal phase")
	}
}

func TestNotReopenedOutput(t *testing.T) {
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "deployment-web"}}
	kr.Spec.TargetRef = kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}
	kr.Status.Phase = kickv1alpha1.PhaseSucceeded
	var out, errOut bytes.Buffer
	carried := &metav1.Condition{Reason: kickv1alpha1.ReasonAlreadyCarried, Message: "already carried"}
	if code := notReopened(kr, carried, t0, &out, &errOut); code != 0 {
		t.Fatalf("code %d", code)
	}
	if got := out.String(); got != "10:00:00 NotReopened     already carried\nkickrequest/deployment-web finished: not reopened, nothing to restart (it stays Succeeded)\n" {
		t.Fatalf("stdout %q", got)
	}
	kr.Status.Phase = kickv1alpha1.PhaseFailed
	out.Reset()
	unselected := &metav1.Condition{Reason: string(kickv1alpha1.GateNotSelected), Message: "no KickPolicy selects it"}
	if code := notReopened(kr, unselected, t0, &out, &errOut); code != 1 {
		t.Fatalf("code %d", code)
	}
	if got := errOut.String(); got != "kubectl kick: restart of deployment/web failed: KICK did not reopen kickrequest/deployment-web (it stays Failed): NotSelected: no KickPolicy selects it\n" {
		t.Fatalf("stderr %q", got)
	}
}

func forbidden() error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "kick.corewire.io", Resource: "sourceobservations"}, "x", errors.New("not allowed"))
}

// Explain shows every gate stage in the manager's order, the settle stage
// and the fan-out's halt and budget included, each with its own reason.
func TestExplainShowsSettleHaltAndBudget(t *testing.T) {
	s := newScene()
	s.relevantChange(t0.Add(time.Minute))
	s.policies[0].Spec.Restart = &kickv1alpha1.RestartSpec{MaxConcurrent: ptr.To(intstr.FromInt32(5))}
	out := explainText(t, analyze(s.facts()))
	for _, want := range []string{
		"hold:         open: no KickHold freezes this restart", "settle:", "halt:         open: no failed restart halts", "waves:        open: no restart waves",
		"budget:       open: restart.maxConcurrent 5: the manager counts",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	order := []string{"suspend:", "hold:", "settle:", "schedule:", "minInterval:", "halt:", "waves:", "gitOps:", "budget:"}
	last := -1
	for _, label := range order {
		at := strings.Index(out, "  "+label)
		if at < last {
			t.Errorf("stage %s out of the manager's order:\n%s", label, out)
		}
		last = at
	}

	// A failed restart of the same change of Secret db halts this one.
	f := s.facts()
	f.halts = []assess.Halt{{Source: "Secret/db", Change: t0.Add(time.Minute), Workload: "Deployment shop/api", Request: "deployment-api", Reason: kickv1alpha1.ReasonProgressDeadlineExceeded}}
	e := analyze(f)
	if e.Gate.Reason != string(kickv1alpha1.GateRolloutHalted) || e.Gate.Stage != string(assess.StageHalt) {
		t.Errorf("gate %s at stage %s, want RolloutHalted at Halt", e.Gate.Reason, e.Gate.Stage)
	}
	if out := explainText(t, e); !strings.Contains(out, "halt:         closed: waiting for RolloutHalted (Secret/db: halted after Deployment shop/api failed its rollout") {
		t.Errorf("the halt is not shown:\n%s", out)
	}

	// The manager's recorded wait for a slot shows as the budget stage.
	kr := kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "deployment-web", CreationTimestamp: metav1.NewTime(t0)}}
	kr.Spec.TargetRef = kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}
	kr.Status.Phase = kickv1alpha1.PhaseWaitingForGate
	kr.Status.Gate = &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateRestartBudget, Stage: string(assess.StageBudget),
		Message: "waiting for a restart slot: 5 of 5 restarts of KickPolicy web-only in progress (restart.maxConcurrent); 37 waiting"}
	s.requests = []kickv1alpha1.KickRequest{kr}
	e = analyze(s.facts())
	if e.Gate.Reason != string(kickv1alpha1.GateRestartBudget) {
		t.Errorf("gate %s, want RestartBudget", e.Gate.Reason)
	}
	if out := explainText(t, e); !strings.Contains(out, "budget:       closed: waiting for RestartBudget (waiting for a restart slot: 5 of 5 restarts of KickPolicy web-only in progress (restart.maxConcurrent); 37 waiting)") {
		t.Errorf("the budget wait is not shown:\n%s", out)
	}
}

// A workload behind an earlier wave: explain cannot read the earlier
// waves' rollouts itself, says so, and shows the wait the manager recorded.
func TestExplainShowsTheWave(t *testing.T) {
	s := newScene()
	s.relevantChange(t0.Add(time.Minute))
	s.policies[0].Spec.Restart = &kickv1alpha1.RestartSpec{Waves: []kickv1alpha1.RestartWave{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}}}}
	out := explainText(t, analyze(s.facts()))
	if want := `waves:        closed: waiting for Unknown (decided by the manager from its caches)`; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	kr := kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "deployment-web", CreationTimestamp: metav1.NewTime(t0)}}
	kr.Spec.TargetRef = kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}
	kr.Status.Phase = kickv1alpha1.PhaseWaitingForGate
	kr.Status.Gate = &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateEarlierWave, Stage: string(assess.StageWave),
		Message: `the workloads no wave selects (2 of 2) waits for wave "canary" (1 of 2) to roll out the change of Secret/db: 1 of 1 workloads are still rolling out (Deployment shop/web-canary)`}
	s.requests = []kickv1alpha1.KickRequest{kr}
	out = explainText(t, analyze(s.facts()))
	if want := `waves:        closed: waiting for EarlierWave (at the manager's last evaluation: the workloads no wave selects (2 of 2) waits for wave "canary"`; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// A KickHold shows as the hold stage, right after suspend: a hold of the
// namespace or of the workload holds the restart, a hold of a source
// holds it only while it would bring in that source's change, an expired
// hold or one of another workload does not, and unreadable holds leave
// the stage unknown instead of failing the command.
func TestExplainShowsTheHold(t *testing.T) {
	expiry := t0.Add(2 * time.Hour)
	hold := func(kind kickv1alpha1.HoldKind, name, reason string, expires time.Time) assess.Hold {
		target := kickv1alpha1.HoldTarget{Kind: kind, Name: name}
		return assess.Hold{Name: kickv1alpha1.HoldName(target), Target: target, Reason: reason, ExpiresAt: expires}
	}
	for _, tc := range []struct {
		name    string
		stale   bool
		holds   []assess.Hold
		err     error
		reason  string // the gate's reason
		line    string
		summary string
	}{
		{
			name: "a namespace hold holds a stale workload", stale: true,
			holds:  []assess.Hold{hold(kickv1alpha1.HoldNamespace, "", "INC-42: freeze", time.Time{})},
			reason: string(kickv1alpha1.GateHeld),
			line: `hold:         closed: waiting for Held (held by KickHold hold-namespace (Namespace): "INC-42: freeze"; ` +
				`it holds every restart in namespace shop until it is released (kubectl kick release -n shop namespace))`,
			summary: "waiting for Held",
		},
		{
			name: "a hold of the workload, with an expiry", stale: true,
			holds:  []assess.Hold{hold(kickv1alpha1.HoldDeployment, "web", "canary under watch", expiry)},
			reason: string(kickv1alpha1.GateHeld),
			line: `hold:         closed: waiting for Held until 2026-05-01T12:00:00Z (held by KickHold hold-deployment-web (Deployment/web): "canary under watch"; ` +
				`it holds every restart of Deployment shop/web until it is released (kubectl kick release -n shop deployment/web) or expires at 2026-05-01T12:00:00Z)`,
			summary: "waiting for Held until 2026-05-01T12:00:00Z",
		},
		{
			name: "a source hold holds the restart that brings in its change", stale: true,
			holds:  []assess.Hold{hold(kickv1alpha1.HoldSecret, "db", "INC-42: rotating", time.Time{})},
			reason: string(kickv1alpha1.GateHeld),
			line: `hold:         closed: waiting for Held (held by KickHold hold-secret-db (Secret/db): "INC-42: rotating"; ` +
				`it holds restarts that bring in a change of Secret/db until it is released (kubectl kick release -n shop secret/db))`,
			summary: "waiting for Held",
		},
		{
			name:    "a source hold does not concern a fresh workload",
			holds:   []assess.Hold{hold(kickv1alpha1.HoldSecret, "db", "INC-42: rotating", time.Time{})},
			reason:  string(kickv1alpha1.GateAllowed),
			line:    "hold:         open: no KickHold freezes this restart; KickHolds in shop: hold-secret-db (Secret/db)\n",
			summary: "nothing to do: fresh",
		},
		{
			name: "an expired hold and a hold of another workload hold nothing", stale: true,
			holds: []assess.Hold{hold(kickv1alpha1.HoldDeployment, "api", "api only", time.Time{}),
				hold(kickv1alpha1.HoldNamespace, "", "over", t0.Add(5*time.Minute))},
			reason: string(kickv1alpha1.GateAllowed),
			line: "hold:         open: no KickHold freezes this restart; KickHolds in shop: hold-deployment-api (Deployment/api), " +
				"hold-namespace (Namespace, expired at 2026-05-01T10:05:00Z)\n",
			summary: "would restart now",
		},
		{
			name: "holds the caller may not list are unknown", stale: true,
			err:    readError("list", "kickholds.kick.corewire.io", "shop", forbidden()),
			reason: gateUnknown,
			line: `hold:         unknown: cannot read the namespace's KickHolds: permission denied: you need "list" on kickholds.kick.corewire.io in namespace shop ` +
				`(ask for a Role granting it); the manager applies any hold`,
			summary: "would restart now unless a KickHold holds it (the KickHolds could not be read)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene()
			if tc.stale {
				s.relevantChange(t0.Add(time.Minute))
			}
			f := s.facts()
			f.holds, f.holdsErr = tc.holds, tc.err
			e := analyze(f)
			out := explainText(t, e)
			if e.Gate.Reason != tc.reason || e.Summary != tc.summary {
				t.Errorf("gate %s, summary %q; want %s, %q", e.Gate.Reason, e.Summary, tc.reason, tc.summary)
			}
			if !strings.Contains(out, tc.line) {
				t.Errorf("output lacks\n%s\n%s", tc.line, out)
			}
			if tc.reason == string(kickv1alpha1.GateHeld) && e.Gate.Stage != string(assess.StageHold) {
				t.Errorf("stage %s, want Hold", e.Gate.Stage)
			}
			// -o json carries the holds and the stage.
			var j struct {
				Holds []struct {
					Name, Reason, Release string
					Active                bool
					Target                struct{ Kind, Name string }
				}
				HoldsError string
				Gate       struct{ Hold struct{ Open bool } }
			}
			b, _ := json.Marshal(e)
			if err := json.Unmarshal(b, &j); err != nil {
				t.Fatal(err)
			}
			if len(j.Holds) != len(tc.holds) || (tc.err != nil) != (j.HoldsError != "") || j.Gate.Hold.Open != (tc.reason == string(kickv1alpha1.GateAllowed)) {
				t.Errorf("json %s", b)
			}
			for i, h := range j.Holds {
				want := tc.holds[i]
				if h.Name != want.Name || h.Reason != want.Reason || h.Target.Kind != string(want.Target.Kind) || h.Target.Name != want.Target.Name ||
					h.Active != (want.ExpiresAt.IsZero() || f.now.Before(want.ExpiresAt)) || !strings.HasPrefix(h.Release, "kubectl kick release -n shop ") {
					t.Errorf("json hold %d: %+v, want %+v", i, h, want)
				}
			}
		})
	}
}
