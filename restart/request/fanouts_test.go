package request

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/evidence"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/sinks/rollup"
)

// TestMembersJoinTheirFanOut: requests as the API server stores them (through JSON: the change
// in nanoseconds, the observed change in microseconds, completions in seconds) form one fan-out
// per change: the restarted ones by status.restartedFor, the held and waiting ones by the
// change they observed; each counted by where it stands.
func TestMembersJoinTheirFanOut(t *testing.T) {
	change := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	src := &kickv1alpha1.SourceChange{Kind: "Secret", Name: "web-tls", ChangedAt: kickv1alpha1.NewNanoTime(change)}
	observed := metav1.NewMicroTime(change)
	done := metav1.NewTime(change.Add(time.Minute).Truncate(time.Second))
	req := func(name string, st kickv1alpha1.KickRequestStatus) *kickv1alpha1.KickRequest {
		st.LatestObservedDependencyChange = &observed
		return stored(t, &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name}, Status: st})
	}
	requests := []*kickv1alpha1.KickRequest{
		req("ok", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseSucceeded, RestartedFor: src, CompletionTime: &done}),
		req("up-to-date", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseNoLongerRequired, RestartedFor: src, CompletionTime: &done}),
		req("failed", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseFailed, RestartedFor: src, CompletionTime: &done}),
		req("rolling", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseExecuting, RestartedFor: src}),
		req("budget", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate, RestartedFor: src,
			Gate: &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateRestartBudget, Stage: "Budget"}}),
		req("held", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate,
			Gate: &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateRolloutHalted, Stage: "Halt"}}),
		req("window", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate,
			Gate: &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateOutsideSchedule, Stage: "Schedule"}}),
	}
	var members []rollup.Member
	for _, kr := range requests {
		members = append(members, memberOf(kr))
	}
	got := rollup.Build(members)
	want := rollup.Group{Key: rollup.Key{Namespace: "web", Source: rollup.Source{Kind: "Secret", Name: "web-tls"}, ChangedAt: change},
		Workloads: 7, Succeeded: 2, Failed: 1, Held: 1, Waiting: 2, InProgress: 1, LastCompletion: done.Time}
	if len(got) != 1 || !got[0].ChangedAt.Equal(want.ChangedAt) {
		t.Fatalf("groups %+v, want one at %v", got, change)
	}
	got[0].ChangedAt = want.ChangedAt
	if !got[0].LastCompletion.Equal(want.LastCompletion) {
		t.Fatalf("last completion %v, want %v", got[0].LastCompletion, want.LastCompletion)
	}
	got[0].LastCompletion = want.LastCompletion
	if got[0] != want {
		t.Fatalf("group:\n got %+v\nwant %+v", got[0], want)
	}
}

// TestWaveOf: a request's wave is its workload's wave under its KickPolicy, counted from 1, the
// workloads no wave selects in a last wave of their own; 0 without waves.
func TestWaveOf(t *testing.T) {
	p := &kickv1alpha1.KickPolicySpec{Restart: &kickv1alpha1.RestartSpec{Waves: []kickv1alpha1.RestartWave{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}},
		{Name: "eu", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
	}}}
	cases := []struct {
		policy *kickv1alpha1.KickPolicySpec
		labels map[string]string
		want   int
	}{
		{p, map[string]string{"ring": "canary", "region": "eu"}, 1},
		{p, map[string]string{"region": "eu"}, 2},
		{p, map[string]string{"region": "us"}, 3},
		{&kickv1alpha1.KickPolicySpec{}, map[string]string{"ring": "canary"}, 0},
		{nil, nil, 0}, // the request names no policy the cache has
	}
	for _, tc := range cases {
		if got := waveOf(tc.policy, tc.labels); got != tc.want {
			t.Errorf("waveOf(%v) = %d, want %d", tc.labels, got, tc.want)
		}
	}
}

// TestConsumersReadingOnlyUntouchedKeys: a fan-out lists, of a source's
// consumers, only those whose read keys the change touched, as freshness
// judges them: the reader of the changed key, and the reader of every key;
// the reader of an untouched key is left out (it is never restarted for the
// change, so as Pending it would keep the fan-out open for ever), except
// under restart.keys All, and every consumer counts without a KeyNamer.
func TestConsumersReadingOnlyUntouchedKeys(t *testing.T) {
	names := func(_, _, _, key string) string {
		return map[string]string{"a": "00000000000000aa", "b": "00000000000000bb"}[key]
	}
	base := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	change := base.Add(time.Hour).Add(123456789)
	from, at := kickv1alpha1.NewNanoTime(base), kickv1alpha1.NewNanoTime(change)
	rec := &kickv1alpha1.SourceObservation{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: kickv1alpha1.ObservationName("Secret", "db")},
		Spec: kickv1alpha1.SourceObservationSpec{LastRelevantChangeTime: &at, Keys: &kickv1alpha1.KeyHistory{Count: 2, BaselineFrom: &from,
			Entries: []kickv1alpha1.KeyObservation{{ID: "00000000000000aa", Fingerprint: "0000000000000001"},
				{ID: "00000000000000bb", Fingerprint: "0000000000000002", Changed: &at}}}}}
	deploy := func(name string, c corev1.Container) *appsv1.Deployment {
		c.Name, c.Image = "app", "app:1"
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": name}},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}}}
	}
	keyRef := func(key string) corev1.Container {
		return corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: key}}}}}
	}
	every := corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}}
	policy := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "all"},
		Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{WorkloadSelector: &metav1.LabelSelector{}}}}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kickv1alpha1.AddToScheme(scheme)
	list := func(p *kickv1alpha1.KickPolicy, keys KeyNamer) []string {
		b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rec, p, deploy("reads-a", keyRef("a")), deploy("reads-b", keyRef("b")), deploy("every", every))
		for _, obj := range workload.Builtin().Objects() {
			b = b.WithIndex(obj, discovery.SourceIndex, discovery.IndexFunc)
		}
		f := &FanOuts{Client: b.Build(), KeyNames: keys}
		got, err := f.Consumers(context.Background(), "shop", rollup.Source{Kind: "Secret", Name: "db"}, change.Truncate(time.Microsecond))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range got {
			out = append(out, c.Target)
		}
		slices.Sort(out)
		return out
	}
	if got, want := list(policy, names), []string{"Deployment/every", "Deployment/reads-b"}; !slices.Equal(got, want) {
		t.Errorf("consumers of a change of key b: %v, want %v", got, want)
	}
	all := policy.DeepCopy()
	all.Spec.Restart = &kickv1alpha1.RestartSpec{Keys: kickv1alpha1.KeysAll}
	want := []string{"Deployment/every", "Deployment/reads-a", "Deployment/reads-b"}
	if got := list(all, names); !slices.Equal(got, want) {
		t.Errorf("under restart.keys All: %v, want %v", got, want)
	}
	if got := list(policy, nil); !slices.Equal(got, want) {
		t.Errorf("without a KeyNamer: %v, want %v", got, want)
	}
}

// TestRestartUnrecordedTrustsOnlyACarriedNote plays the workload's owner
// writing restarted-for notes by hand. A consumer counts as KICK's restart
// still to be recorded only when its note names the stamp it carries, for
// this change or a later one, and no request names that stamp: an edited,
// stale or malformed note counts for nothing. A tenant who forges both the
// note and the stamp on its own workload only keeps its own namespace's
// roll-up open, as a consumer still to restart, until the policy's maxWait
// (TestRollUpWaitsForConsumersStillToRestart in package sinks); no restart
// depends on this answer.
func TestRestartUnrecordedTrustsOnlyACarriedNote(t *testing.T) {
	changedAt := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	stamp := changedAt.Add(2 * time.Millisecond)
	note := func(s string, change time.Time) string {
		return evidence.Note{Stamp: s, Change: change}.String()
	}
	deploy := func(carried time.Time, annotation string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{}}}
		if annotation != "" {
			d.Annotations[kickv1alpha1.RestartedForAnnotation] = annotation
		}
		if !carried.IsZero() {
			d.Spec.Template.Annotations = map[string]string{freshness.RestartedAtAnnotation: freshness.FormatStamp(carried)}
		}
		return d
	}
	recorded := &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web",
			Annotations: map[string]string{kickv1alpha1.RestartAnnotation: freshness.FormatStamp(stamp)}},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}},
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kickv1alpha1.AddToScheme(scheme)
	for _, tc := range []struct {
		name     string
		w        *appsv1.Deployment
		requests []client.Object
		want     bool
	}{
		{"KICK's restart for the change, its request not written yet", deploy(stamp, note(freshness.FormatStamp(stamp), changedAt)), nil, true},
		{"its request is written", deploy(stamp, note(freshness.FormatStamp(stamp), changedAt)), []client.Object{recorded}, false},
		{"the note names a stamp the workload no longer carries", deploy(stamp.Add(time.Minute), note(freshness.FormatStamp(stamp), changedAt)), nil, false},
		{"the note names a stamp the workload never carried", deploy(stamp, note(freshness.FormatStamp(stamp.Add(-time.Hour)), changedAt)), nil, false},
		{"the note answers an earlier change", deploy(stamp, note(freshness.FormatStamp(stamp), changedAt.Add(-time.Second))), nil, false},
		{"no stamp at all", deploy(time.Time{}, note(freshness.FormatStamp(stamp), changedAt)), nil, false},
		{"not a note", deploy(stamp, "restarted; trust me"), nil, false},
		{"an oversized note", deploy(stamp, note(freshness.FormatStamp(stamp), changedAt)+strings.Repeat(",Secret/x@1", 500)), nil, false},
		{"no note", deploy(stamp, ""), nil, false},
		{"note and stamp forged together, for a change in the future", deploy(stamp, note(freshness.FormatStamp(stamp), changedAt.Add(24*time.Hour))), nil, true},
	} {
		c := fake.NewClientBuilder().WithScheme(scheme).
			WithIndex(&kickv1alpha1.KickRequest{}, TargetIndex, func(obj client.Object) []string {
				kr := obj.(*kickv1alpha1.KickRequest)
				return []string{workload.TargetKey(kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name)}
			}).
			WithObjects(tc.requests...).Build()
		got, err := restartUnrecorded(context.Background(), c, workload.Builtin(), tc.w, changedAt)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: restartUnrecorded = %v, want %v", tc.name, got, tc.want)
		}
	}
}
