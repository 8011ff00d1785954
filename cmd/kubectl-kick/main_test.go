package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestHelpAndUsage(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 0, "kubectl kick restart KIND/NAME"},
		{[]string{"help"}, 0, "Exit codes"},
		{[]string{"--help"}, 0, "kubectl kick explain"},
		{[]string{"restart", "--help"}, 0, "kubectl kick list"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"explain"}, 2, "explain needs KIND/NAME"},
		{[]string{"explain", "--help"}, 0, "kubectl kick explain"},
		{[]string{"explain", "web"}, 2, `"web" is not KIND/NAME`},
		{[]string{"explain", "cronjob/web"}, 2, `unknown kind "cronjob"`},
		{[]string{"explain", "deploy/a", "deploy/b"}, 2, "one KIND/NAME"},
		{[]string{"explain", "deploy/web", "-o", "yaml"}, 2, `unknown output format "yaml"`},
		{[]string{"restart"}, 2, "restart needs KIND/NAME"},
		{[]string{"restart", "web"}, 2, `"web" is not KIND/NAME`},
		{[]string{"restart", "cronjob/web"}, 2, `unknown kind "cronjob"`},
		{[]string{"restart", "deployment/"}, 2, "missing name"},
		{[]string{"restart", "deploy/a", "deploy/b"}, 2, "one KIND/NAME"},
		{[]string{"restart", "deploy/web", "--timeout", "soon"}, 2, "invalid argument"},
		{[]string{"restart", "deploy/web", "--timeout", "0s"}, 2, "--timeout must be positive"},
		{[]string{"restart", "deploy/web", "--frobnicate"}, 2, "unknown flag: --frobnicate"},
		{[]string{"list", "extra"}, 2, "list takes no arguments"},
		{[]string{"list", "-A", "-n", "x"}, 2, "not both"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code {
			t.Errorf("run(%v) = %d, want %d\n%s%s", tc.args, code, tc.code, out.String(), errOut.String())
		}
		if got := out.String() + errOut.String(); !strings.Contains(got, tc.contains) {
			t.Errorf("run(%v) output does not contain %q:\n%s", tc.args, tc.contains, got)
		}
	}
}

func TestParseRestart(t *testing.T) {
	o, cf, _, err := parseRestart([]string{"-n", "shop", "sts/db", "--reason", "rotate", "--wait", "--timeout", "2m", "--context", "prod"})
	if err != nil {
		t.Fatal(err)
	}
	want := restartOptions{kind: kickv1alpha1.TargetStatefulSet, name: "db", reason: "rotate", wait: true, timeout: 2 * time.Minute}
	if *o != want {
		t.Fatalf("options = %+v, want %+v", *o, want)
	}
	if *cf.Namespace != "shop" || *cf.Context != "prod" {
		t.Fatalf("kubeconfig flags: namespace %q, context %q", *cf.Namespace, *cf.Context)
	}
	o, _, _, err = parseRestart([]string{"deployment/web"})
	if err != nil {
		t.Fatal(err)
	}
	if o.wait || o.timeout != 10*time.Minute || o.reason != "" {
		t.Fatalf("defaults = %+v", *o)
	}
}

func TestKindAliases(t *testing.T) {
	for in, want := range map[string]kickv1alpha1.TargetKind{
		"deployment": "Deployment", "Deployment": "Deployment", "deploy": "Deployment", "deployments": "Deployment",
		"statefulset": "StatefulSet", "StatefulSet": "StatefulSet", "sts": "StatefulSet",
		"daemonset": "DaemonSet", "DaemonSet": "DaemonSet", "ds": "DaemonSet",
		"rollout": "Rollout", "Rollout": "Rollout",
	} {
		got, err := parseKind(in)
		if err != nil || got != want {
			t.Errorf("parseKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "pod", "cronjob", "replicaset"} {
		if _, err := parseKind(bad); err == nil {
			t.Errorf("parseKind(%q) accepted", bad)
		}
	}
}

func TestRequestNameAndTarget(t *testing.T) {
	o := &restartOptions{kind: kickv1alpha1.TargetRollout, name: "canary", reason: "ci"}
	kr := newRequest(objectKey("ns", kickv1alpha1.RequestName(o.kind, o.name)), o)
	if kr.Name != "rollout-canary" || kr.Spec.TargetRef.APIVersion != kickv1alpha1.ArgoRolloutsAPIVersion || kr.Spec.Reason != "ci" {
		t.Fatalf("request = %+v", kr)
	}
	if _, ok := kr.Labels[kickv1alpha1.ManagedByLabel]; ok {
		t.Fatal("a CLI request must not carry the managed-by label")
	}
	o.kind = kickv1alpha1.TargetDeployment
	if kr := newRequest(objectKey("ns", "x"), o); kr.Spec.TargetRef.APIVersion != kickv1alpha1.AppsV1APIVersion {
		t.Fatalf("apiVersion = %q", kr.Spec.TargetRef.APIVersion)
	}
}

func TestReopenPatch(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 1, 123456789, time.FixedZone("CET", 3600))
	kr := &kickv1alpha1.KickRequest{}
	var p struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec map[string]any `json:"spec"`
	}
	patch, value := reopenPatch(kr, "ci", now)
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatal(err)
	}
	if got := p.Metadata.Annotations[kickv1alpha1.ChangeAnnotation]; got != "2026-03-01T11:00:01.123456789Z" || value != got {
		t.Fatalf("change annotation = %q, returned %q", got, value)
	}
	if p.Spec["reason"] != "ci" {
		t.Fatalf("reason = %v", p.Spec["reason"])
	}
	// The previous cycle's trace does not go on: null deletes the traceparent.
	if !strings.Contains(string(patch), `"`+kickv1alpha1.TraceparentAnnotation+`":null`) {
		t.Fatalf("patch %s keeps the traceparent", patch)
	}
	// A newer change already recorded is never moved back; no reason clears it.
	kr.Annotations = map[string]string{kickv1alpha1.ChangeAnnotation: "2026-03-01T11:00:00Z/2026-03-01T11:00:05Z"}
	p.Spec = nil
	patch, _ = reopenPatch(kr, "", now)
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatal(err)
	}
	if got := p.Metadata.Annotations[kickv1alpha1.ChangeAnnotation]; got != "2026-03-01T11:00:05Z" {
		t.Fatalf("change annotation = %q", got)
	}
	if v, ok := p.Spec["reason"]; !ok || v != nil {
		t.Fatalf("reason = %v, %v; want null", v, ok)
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 0: "0s", 5 * time.Second: "5s", 59 * time.Second: "59s",
		3 * time.Minute: "3m", 59*time.Minute + 59*time.Second: "59m",
		2 * time.Hour: "2h", 23 * time.Hour: "23h", 4 * 24 * time.Hour: "4d", 400 * 24 * time.Hour: "400d",
	} {
		if got := age(d); got != want {
			t.Errorf("age(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestExitCode(t *testing.T) {
	for phase, want := range map[kickv1alpha1.KickRequestPhase]int{
		kickv1alpha1.PhaseSucceeded: 0, kickv1alpha1.PhaseNoLongerRequired: 0, kickv1alpha1.PhaseDryRun: 0,
		kickv1alpha1.PhaseFailed: 1, kickv1alpha1.PhaseWaitingForGate: 2, "": 2,
	} {
		if got := exitCode(phase); got != want {
			t.Errorf("exitCode(%q) = %d, want %d", phase, got, want)
		}
	}
}

func TestStatusLineAndTable(t *testing.T) {
	kr := &kickv1alpha1.KickRequest{}
	kr.Name, kr.Namespace = "deployment-web", "shop"
	kr.Spec.TargetRef = kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}
	kr.Status.Phase = kickv1alpha1.PhaseWaitingForGate
	kr.Status.Gate = &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateOutsideSchedule, Message: "inside Deny window 0 until 02:30 UTC"}
	if got, want := statusLine(kr), "WaitingForGate  OutsideSchedule: inside Deny window 0 until 02:30 UTC"; got != want {
		t.Fatalf("statusLine = %q, want %q", got, want)
	}
	now := time.Now()
	kr.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Minute))
	done := kr.DeepCopy()
	done.Name = "deployment-api"
	done.Status.Phase = kickv1alpha1.PhaseFailed
	done.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: metav1.ConditionTrue, Reason: "NotSelected", Message: "no KickPolicy selects Deployment/api"}}
	if got := statusLine(done); got != "Failed          NotSelected: no KickPolicy selects Deployment/api" {
		t.Fatalf("statusLine = %q", got)
	}
	var out bytes.Buffer
	printTable(&out, []kickv1alpha1.KickRequest{*kr, *done}, true, now)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAMESPACE NAME KIND TARGET PHASE REASON AGE" {
		t.Fatalf("table:\n%s", out.String())
	}
	if got := strings.Join(strings.Fields(lines[1]), " "); got != "shop deployment-api Deployment web Failed NotSelected 3m" {
		t.Fatalf("row = %q", got)
	}
	if got := strings.Join(strings.Fields(lines[2]), " "); got != "shop deployment-web Deployment web WaitingForGate OutsideSchedule 3m" {
		t.Fatalf("row = %q", got)
	}
}

func objectKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
