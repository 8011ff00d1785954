package kubectlkick

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/integration/cluster"
)

// rotate changes a Secret's data.
func (f *fx) rotate(name, value string) {
	f.T.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"stringData":{"password":%q}}`, value)))
	if err := f.Env.Client.Patch(f.Ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: name}}, patch); err != nil {
		f.T.Fatal(err)
	}
}

// waitRequest waits until the KickRequest exists and cond holds for it.
func (f *fx) waitRequest(name, what string, cond func(*kickv1alpha1.KickRequest) bool) *kickv1alpha1.KickRequest {
	f.T.Helper()
	var kr kickv1alpha1.KickRequest
	cluster.Eventually(f.T, 60*time.Second, "kickrequest/"+name+" "+what, func() (bool, error) {
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &kr); err != nil {
			return false, err
		}
		return cond(&kr), fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, kr.Status.Gate)
	})
	return &kr
}

// record returns the observation record of a Secret once it exists.
func (f *fx) record(secret string, cond func(*kickv1alpha1.SourceObservation) bool) *kickv1alpha1.SourceObservation {
	f.T.Helper()
	var rec kickv1alpha1.SourceObservation
	name := kickv1alpha1.ObservationName("Secret", secret)
	cluster.Eventually(f.T, 60*time.Second, "the observation record of Secret "+secret, func() (bool, error) {
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &rec); err != nil {
			return false, err
		}
		return cond(&rec), fmt.Errorf("record %+v", rec.Spec)
	})
	return &rec
}

// mustContain fails the test for each wanted text the output lacks.
func mustContain(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// noSecrets fails when an output shows Secret data, key names or a
// fingerprint.
func noSecrets(t *testing.T, out string, fingerprints ...string) {
	t.Helper()
	for _, s := range append([]string{"password", "alpha", "beta", "gamma"}, fingerprints...) {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("output shows %q", s)
		}
	}
}

// otherKinds creates a StatefulSet "<app>-sts" and a DaemonSet "<app>-ds"
// labelled app=<app> that mount the Secret, and waits until both have
// rolled out.
func (f *fx) otherKinds(app, secret string) {
	f.T.Helper()
	labels := map[string]string{"app": app}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "db", MountPath: "/db"}}}},
			Volumes: []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
		},
	}
	f.Create(&appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-sts", Labels: labels},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(1)), ServiceName: app + "-sts",
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	})
	f.Create(&appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-ds", Labels: labels},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	})
	cluster.Eventually(f.T, 60*time.Second, "StatefulSet and DaemonSet "+app+" to roll out", func() (bool, error) {
		var sts appsv1.StatefulSet
		var ds appsv1.DaemonSet
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: app + "-sts"}, &sts); err != nil {
			return false, err
		}
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: app + "-ds"}, &ds); err != nil {
			return false, err
		}
		ok := sts.Status.ObservedGeneration == sts.Generation && sts.Status.ReadyReplicas == 1 && sts.Status.UpdatedReplicas == 1 &&
			ds.Status.ObservedGeneration == ds.Generation && ds.Status.DesiredNumberScheduled > 0 &&
			ds.Status.NumberAvailable == ds.Status.DesiredNumberScheduled && ds.Status.UpdatedNumberScheduled == ds.Status.DesiredNumberScheduled
		return ok, fmt.Errorf("statefulset %+v, daemonset %+v", sts.Status, ds.Status)
	})
}

func TestExplain(t *testing.T) {
	env := cluster.Get(t)
	f := newFx(t)
	env.StartManager(t, "kick-system")

	// A Deny window that started a minute ago and ends in two hours, read
	// in UTC: the gate is closed now and opens at a known instant.
	start := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	denyUntil := start.Add(2 * time.Hour)

	f.Policy("plain", "discovery: {workloadSelector: {matchLabels: {app: fresh}}}\nrestart: {minInterval: 0s}")
	f.Policy("dry", "discovery: {workloadSelector: {matchLabels: {app: stale}}}\ndryRun: true")
	f.Policy("gated", fmt.Sprintf("discovery: {workloadSelector: {matchLabels: {app: gated}}}\n"+
		"schedule: {windows: [{type: Deny, cron: \"%d %d * * *\", duration: 2h, timeZone: UTC}]}", start.Minute(), start.Hour()))
	f.Policy("b", "discovery: {workloadSelector: {matchLabels: {app: contested}}}")
	f.Policy("a", "discovery: {workloadSelector: {matchLabels: {app: contested}}}")
	for _, app := range []string{"fresh", "stale", "gated", "lonely", "contested"} {
		f.Secret(app+"-db", map[string]string{"password": "alpha"}, nil)
	}
	for _, app := range []string{"fresh", "stale", "gated", "lonely", "contested"} {
		f.deployment(app, app+"-db")
	}

	// (1) Fresh: selected, nothing changed since the rollout.
	rec := f.record("fresh-db", func(r *kickv1alpha1.SourceObservation) bool { return r.Spec.LastRelevantChangeTime != nil })
	code, out, _ := f.kick("explain", "Deploy/fresh")
	if code != 0 {
		t.Fatalf("explain of a fresh workload = %d, want 0", code)
	}
	mustContain(t, "explain deployment/fresh", out,
		"Workload:       Deployment "+f.NS+"/fresh\n",
		"KickPolicy:     plain\n",
		"Secret/fresh-db  containers[app].envFrom  in scope  changed ",
		"(baseline: the source's last write",
		"Rollout:        started ",
		"Verdict:        fresh: ",
		"schedule:     open: no schedule windows",
		"gitOps:       provider None: no GitOps gate",
		"minInterval:  0s: no restart stamp on the pod template",
		"Summary:        nothing to do: fresh\n")
	noSecrets(t, out, rec.Spec.RelevantFingerprint)

	// The other kinds: a StatefulSet and a DaemonSet the same policy
	// selects, consuming the Secret through a volume.
	f.otherKinds("fresh", "fresh-db")
	for _, target := range []string{"sts/fresh-sts", "DaemonSet/fresh-ds"} {
		code, out, _ := f.kick("explain", target)
		if code != 0 {
			t.Fatalf("explain %s = %d, want 0", target, code)
		}
		mustContain(t, "explain "+target, out,
			"KickPolicy:     plain\n",
			"Secret/fresh-db  volumes[db]  in scope  changed ",
			"; complete: ",
			"Summary:        nothing to do: fresh\n")
	}

	// (2) Stale under a dry-run policy: the Secret changes, KICK records
	// DryRun and patches nothing, so the workload stays stale.
	f.rotate("stale-db", "beta")
	kr := f.waitRequest("deployment-stale", "to reach DryRun", func(kr *kickv1alpha1.KickRequest) bool {
		return kr.Status.Phase == kickv1alpha1.PhaseDryRun
	})
	rec = f.record("stale-db", func(r *kickv1alpha1.SourceObservation) bool { return r.Spec.Class == kickv1alpha1.ObservationRelevant })
	code, out, _ = f.kick("explain", "deployment/stale")
	if code != 0 {
		t.Fatalf("explain of a stale workload = %d, want 0", code)
	}
	mustContain(t, "explain deployment/stale", out,
		"KickPolicy:     dry\n",
		"Secret/stale-db  containers[app].envFrom  in scope  changed at "+rec.Spec.LastRelevantChangeTime.UTC().Format(time.RFC3339Nano)+" (seen by KICK)",
		"Latest change:  "+rec.Spec.LastRelevantChangeTime.UTC().Format(time.RFC3339Nano)+" (Λ, from Secret/stale-db)",
		"Verdict:        stale: dependency changed at ",
		"dryRun:       yes",
		"KickRequest:    deployment-stale (last), phase DryRun, reason DryRun: dry run: would restart",
		"Summary:        would restart now (dry run: KICK records phase DryRun and patches nothing)\n")
	noSecrets(t, out, rec.Spec.RelevantFingerprint)
	if f.replicaSets("stale") != 1 {
		t.Fatal("a dry run restarted the workload")
	}

	// The same as JSON.
	code, out, _ = f.kick("explain", "deployment/stale", "-o", "json")
	var e struct {
		Kind         string `json:"kind"`
		Name         string `json:"name"`
		Verdict      string `json:"verdict"`
		Summary      string `json:"summary"`
		Policy       struct{ Selection, Name string }
		Dependencies []struct {
			Kind, Name, Scope, Record string
			LastRelevantChange        *time.Time
		}
		Gate    struct{ Reason string }
		Request struct{ Name, Phase string }
	}
	if code != 0 {
		t.Fatalf("explain -o json = %d", code)
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("explain -o json is not JSON: %v", err)
	}
	if e.Kind != "Deployment" || e.Name != "stale" || e.Verdict != "Stale" || e.Policy.Selection != "Selected" || e.Policy.Name != "dry" ||
		len(e.Dependencies) != 1 || e.Dependencies[0].Scope != "InScope" || e.Dependencies[0].Record != "Relevant" ||
		e.Dependencies[0].LastRelevantChange == nil || !e.Dependencies[0].LastRelevantChange.Equal(rec.Spec.LastRelevantChangeTime.Time) ||
		e.Gate.Reason != "Allowed" || e.Request.Name != kr.Name || e.Request.Phase != "DryRun" ||
		!strings.HasPrefix(e.Summary, "would restart now") {
		t.Fatalf("explain -o json = %+v", e)
	}
	noSecrets(t, out, rec.Spec.RelevantFingerprint)

	// (3) Gated: stale, but inside the Deny window.
	f.rotate("gated-db", "gamma")
	f.waitRequest("deployment-gated", "to wait for the schedule", func(kr *kickv1alpha1.KickRequest) bool {
		return kr.Status.Phase == kickv1alpha1.PhaseWaitingForGate && kr.Status.Gate != nil && kr.Status.Gate.Reason == kickv1alpha1.GateOutsideSchedule
	})
	code, out, _ = f.kick("explain", "deployment/gated")
	if code != 0 {
		t.Fatalf("explain of a gated workload = %d, want 0", code)
	}
	until := denyUntil.Format(time.RFC3339)
	mustContain(t, "explain deployment/gated", out,
		"Verdict:        stale: ",
		"schedule:     closed: waiting for OutsideSchedule until "+until+" (inside Deny window 0 until "+until+")",
		"KickRequest:    deployment-gated (open), phase WaitingForGate, reason OutsideSchedule: inside Deny window 0 until "+until+"; requeue at "+until+"\n",
		"Summary:        waiting for OutsideSchedule until "+until+"\n")
	if f.replicaSets("gated") != 1 {
		t.Fatal("the workload restarted inside a Deny window")
	}

	// (4) Not selected, and selected by two policies.
	code, out, _ = f.kick("explain", "deployment/lonely")
	if code != 0 {
		t.Fatalf("explain of an unselected workload = %d, want 0", code)
	}
	mustContain(t, "explain deployment/lonely", out,
		"KickPolicy:     not selected by any KickPolicy in "+f.NS+"\n",
		"Gate:           not evaluated",
		"Summary:        cannot assess: no KickPolicy in namespace "+f.NS+" selects Deployment/lonely\n")
	code, out, _ = f.kick("explain", "deployment/contested")
	if code != 0 {
		t.Fatalf("explain of a contested workload = %d, want 0", code)
	}
	mustContain(t, "explain deployment/contested", out,
		"KickPolicy:     selected by several: a, b — KICK will not restart it (AmbiguousPolicy)\n",
		"Summary:        cannot assess: KickPolicies a and b all select Deployment/contested; KICK restarts a workload only when exactly one policy selects it, so narrow their workloadSelectors\n")

	// (5) Errors: exit 1 with a message; bad usage exit 2.
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"explain", "deployment/nope"}, 1, "kubectl kick: deployment/nope not found in namespace " + f.NS + "\n"},
		{[]string{"explain", "sts/nope"}, 1, "statefulset/nope not found in namespace " + f.NS},
		{[]string{"explain", "rollout/canary"}, 1, "the rollouts.argoproj.io API is not installed in this cluster"},
		{[]string{"explain", "deployment/fresh", "--as", "system:serviceaccount:" + f.NS + ":nobody"}, 1,
			`permission denied: you need "get" on deployments.apps in namespace ` + f.NS},
		{[]string{"explain"}, 2, "explain needs KIND/NAME"},
		{[]string{"explain", "cronjob/web"}, 2, `unknown kind "cronjob"`},
		{[]string{"explain", "deployment/fresh", "-o", "yaml"}, 2, `unknown output format "yaml"`},
	} {
		code, out, errOut := f.kick(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) || out != "" {
			t.Errorf("%v = %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

// A reopen KICK declines leaves the request's outcome as it was; KICK
// answers the change in status.observedChange and the Reopened condition,
// and restart --wait reports that instead of waiting for the timeout.
func TestRestartWaitReportsANotReopenedRequest(t *testing.T) {
	env := cluster.Get(t)
	f := newFx(t)
	env.StartManager(t, "kick-system")
	f.Policy("web-only", "discovery: {workloadSelector: {matchLabels: {app: web}}}\nrestart: {minInterval: 0s}")
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.deployment("web", "db")
	f.deployment("other", "db")

	// Not selected: the first request fails; asking again is declined.
	if code, _, _ := f.kick("restart", "deployment/other", "--wait"); code != 1 {
		t.Fatalf("restart of an unselected workload = %d, want 1", code)
	}
	began := time.Now()
	code, out, errOut := f.kick("restart", "deployment/other", "--wait", "--timeout", "90s")
	if code != 1 || !strings.Contains(out, "reopened") ||
		!strings.Contains(errOut, "restart of deployment/other failed: KICK did not reopen kickrequest/deployment-other (it stays Failed): NotSelected: no KickPolicy in namespace "+f.NS+" selects Deployment/other") {
		t.Fatalf("second restart of an unselected workload = %d, want 1 reporting the declined reopen", code)
	}
	if took := time.Since(began); took > 45*time.Second {
		t.Fatalf("the declined reopen took %s to report", took)
	}

	// Restarted by KICK, then rolled out again by someone else with a
	// restart stamp later than the next request: KICK declines to reopen.
	if code, _, _ := f.kick("restart", "deployment/web", "--wait"); code != 0 {
		t.Fatalf("restart --wait = %d, want 0", code)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, future)))
	if err := env.Client.Patch(f.Ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "web"}}, patch); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 60*time.Second, "the second rollout of web to complete", func() (bool, error) {
		var d appsv1.Deployment
		if err := env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "web"}, &d); err != nil {
			return false, err
		}
		return controlplane.DeploymentAvailable(&d) && f.replicaSets("web") == 3, fmt.Errorf("status %+v", d.Status)
	})
	before := f.request("deployment-web")
	began = time.Now()
	code, out, _ = f.kick("restart", "deployment/web", "--wait", "--timeout", "90s")
	if code != 0 || !strings.Contains(out, "reopened") || !strings.Contains(out, "NotReopened") ||
		!strings.Contains(out, "nothing to restart") ||
		!strings.Contains(out, "kickrequest/deployment-web finished: not reopened, nothing to restart (it stays Succeeded)") {
		t.Fatalf("restart of a workload that already carries the change = %d, want 0 reporting the declined reopen", code)
	}
	if took := time.Since(began); took > 45*time.Second {
		t.Fatalf("the declined reopen took %s to report", took)
	}
	after := f.request("deployment-web")
	if c := meta.FindStatusCondition(after.Status.Conditions, kickv1alpha1.ConditionReopened); c == nil || c.Status != metav1.ConditionFalse || c.Reason != kickv1alpha1.ReasonAlreadyCarried {
		t.Errorf("Reopened condition %+v, want False/AlreadyCarried", c)
	}
	if after.Status.Phase != kickv1alpha1.PhaseSucceeded || after.Status.RestartCount != before.Status.RestartCount || f.replicaSets("web") != 3 {
		t.Fatalf("KICK acted on the declined reopen: phase %s, restartCount %d (was %d), %d ReplicaSets",
			after.Status.Phase, after.Status.RestartCount, before.Status.RestartCount, f.replicaSets("web"))
	}
}
