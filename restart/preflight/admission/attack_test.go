package admission

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/preflight"
	"github.com/kick-operator/kick/restart/workload"
)

// storedValue is the content of team-b's Secret db, which the observer has
// fingerprinted.
const storedValue = "hunter2"

// teamChecker: namespace team-b has policy default (deployment/web consumes
// Secret db) and policy nights, always inside a Deny window
// (deployment/batch consumes Secret batch-cfg); namespace quiet has no
// policy. Each Secret has an observation record holding the keyed
// fingerprint of its content storedValue, as the observer wrote it.
func teamChecker(t testing.TB) *Checker {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kickv1alpha1.AddToScheme(s)
	keys := observe.NewFingerprinter(make([]byte, 32))
	now := time.Now()
	changed := kickv1alpha1.NewNanoTime(now.Add(-time.Hour))
	c := newMemReader(s)
	for _, o := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}} {
		c.addIndex(o, discovery.SourceIndex, discovery.IndexFunc)
	}
	c.addIndex(&appsv1.ReplicaSet{}, workload.OwnerIndex, func(o client.Object) []string {
		for _, r := range o.GetOwnerReferences() {
			if r.Controller != nil && *r.Controller {
				return []string{string(r.UID)}
			}
		}
		return nil
	})
	policy := func(name, app string, schedule *kickv1alpha1.ScheduleSpec) client.Object {
		return &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: name},
			Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
				Schedule: schedule}}
	}
	c.add(policy("default", "web", nil), policy("nights", "batch", &kickv1alpha1.ScheduleSpec{
		Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowDeny, Cron: "* * * * *", Duration: "2h"}}}))
	for _, w := range []struct{ app, secret string }{{"web", "db"}, {"batch", "batch-cfg"}} {
		stored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: w.secret, UID: types.UID("uid-" + w.secret)}, Data: map[string][]byte{"password": []byte(storedValue)}}
		labels := map[string]string{"app": w.app}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: w.app, UID: types.UID("d-" + w.app), Labels: labels, Generation: 1},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause",
						EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: w.secret}}}}}}}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1}}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: w.app + "-1", Labels: labels,
			CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
			Annotations:       map[string]string{"deployment.kubernetes.io/revision": "1"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: w.app, UID: d.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Template: d.Spec.Template}}
		rec := &kickv1alpha1.SourceObservation{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: kickv1alpha1.ObservationName("Secret", w.secret),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: w.secret, UID: types.UID("uid-" + w.secret)}}},
			Spec: kickv1alpha1.SourceObservationSpec{Source: kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: "Secret", Name: w.secret},
				Class: kickv1alpha1.ObservationRelevant, LastRelevantChangeTime: &changed, RelevantFingerprint: keys.Secret(stored), FingerprintKeyID: keys.KeyID()}}
		c.add(d, rs, rec)
	}
	return &Checker{Client: c, GitOps: gitops.NewRegistry(), Budget: time.Second}
}

// guess is the review of an update of team-b's Secret name from old to
// value.
func guess(t testing.TB, name, value, old string) Write {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "9"},
		Data: map[string][]byte{"password": []byte(value)}}
	return updateOf(t, s, map[string][]byte{"password": []byte(old)})
}

// TestNoOracleForStoredContent plays an attacker who knows the Secret's uid
// and guesses its value: the answer compares the review's object with its
// oldObject, so it is the same whether or not the guess is the stored
// value.
func TestNoOracleForStoredContent(t *testing.T) {
	c := teamChecker(t)
	restarts := []string{"kick: restarts deployment/web now (policy default)"}
	unchanged := []string{"kick: no restart: data unchanged"}
	for _, tc := range []struct {
		what       string
		value, old string
		want       []string
	}{
		{"right guess, other old", storedValue, "x", restarts},
		{"wrong guess, other old", "wrong", "x", restarts},
		{"right guess, same old", storedValue, storedValue, unchanged},
		{"wrong guess, same old", "wrong", "wrong", unchanged},
	} {
		if a := c.Check(context.Background(), guess(t, "db", tc.value, tc.old)); !slices.Equal(a.Warnings, tc.want) {
			t.Errorf("%s: warnings %q, want %q", tc.what, a.Warnings, tc.want)
		}
	}
}

// TestNamespaceWithoutPolicyIsNotRead: a write in a namespace without a
// KickPolicy is answered before its object is decoded, let alone compared
// or hashed: an object that does not decode gets the same empty answer as
// any other there, while in a managed namespace it is reported.
func TestNamespaceWithoutPolicyIsNotRead(t *testing.T) {
	c := teamChecker(t)
	bad := []byte(`{"data": "not a map"}`)
	w := Write{Operation: preflight.Update, Kind: "Secret", Namespace: "quiet", Name: "db", Object: bad, Old: bad}
	if a := c.Check(context.Background(), w); len(a.Warnings) != 0 || len(a.Audit) != 0 {
		t.Errorf("namespace without policy: answer %q %q, want none", a.Warnings, a.Audit)
	}
	w.Namespace = "team-b"
	if a := c.Check(context.Background(), w); !slices.Equal(a.Warnings, []string{"kick: cannot assess (unreadable object)"}) {
		t.Errorf("managed namespace: warnings %q", a.Warnings)
	}
}

// TestDenyModeExemptions: in deny mode an update of batch-cfg inside the
// Deny window is refused, except for the writers the admin exempted, whose
// write is let through with the usual warning and a deny-exempt audit
// annotation.
func TestDenyModeExemptions(t *testing.T) {
	c := teamChecker(t)
	c.DenyInDenyWindows = true
	ex, err := ParseExemptions([]string{"user:alice", "group:security", "serviceaccount:cert-manager/cert-manager"})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Checker: c, Exempt: ex}
	for _, tc := range []struct {
		user   authenticationv1.UserInfo
		denied bool
	}{
		{authenticationv1.UserInfo{Username: "bob", Groups: []string{"dev"}}, true},
		{authenticationv1.UserInfo{Username: "alice"}, false},
		{authenticationv1.UserInfo{Username: "carol", Groups: []string{"security"}}, false},
		{authenticationv1.UserInfo{Username: "system:serviceaccount:cert-manager:cert-manager"}, false},
		{authenticationv1.UserInfo{Username: "system:serviceaccount:cert-manager:other"}, true},
	} {
		resp := h.Handle(withAPIServer(context.Background()), secretRequest(t, guess(t, "batch-cfg", "new", "old"), tc.user))
		if resp.Allowed == tc.denied || len(resp.Warnings) != 1 {
			t.Errorf("%s: allowed %v, warnings %q", tc.user.Username, resp.Allowed, resp.Warnings)
		}
		if exempt := resp.AuditAnnotations[preflight.AuditExempt] == "true"; exempt == tc.denied {
			t.Errorf("%s: audit %q", tc.user.Username, resp.AuditAnnotations)
		}
	}
}

func TestParseExemptionsNamesTheBadEntry(t *testing.T) {
	for _, bad := range []string{"alice", "user:", "robot:x", "serviceaccount:nonamespace", "serviceaccount:a/b/c"} {
		if _, err := ParseExemptions([]string{"user:ok", bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestAnswerReadsOnlyWhatItNeeds: the checker finds the consumers by the review's name before
// it reads the object, so a write of a Secret nothing consumes is answered without decoding
// it (an object that does not decode gets no warning), a create whose review has no name is
// answered from the object's metadata, and an update compares the two objects' data as the
// review encodes it (labels alone changing is "data unchanged").
func TestAnswerReadsOnlyWhatItNeeds(t *testing.T) {
	c := teamChecker(t)
	bad := []byte(`{"data": "not a map"}`)
	w := Write{Operation: preflight.Update, Kind: "Secret", Namespace: "team-b", Name: "nobody-reads-this", Object: bad, Old: bad}
	if a := c.Check(context.Background(), w); len(a.Warnings) != 0 || len(a.Audit) != 0 {
		t.Errorf("a Secret nothing consumes: answer %q %q, want none", a.Warnings, a.Audit)
	}
	created := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db", UID: "uid-db"}, Data: map[string][]byte{"password": []byte("new")}}
	w = Write{Operation: preflight.Create, Kind: "Secret", Namespace: "team-b", Object: mustJSON(t, created)}
	if a := c.Check(context.Background(), w); !slices.Equal(a.Warnings, []string{"kick: restarts deployment/web now (policy default)"}) {
		t.Errorf("a create named only in its object: warnings %q", a.Warnings)
	}
	relabelled := created.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "gold"}
	w = Write{Operation: preflight.Update, Kind: "Secret", Namespace: "team-b", Name: "db", Object: mustJSON(t, relabelled), Old: mustJSON(t, created)}
	if a := c.Check(context.Background(), w); !slices.Equal(a.Warnings, []string{"kick: no restart: data unchanged"}) {
		t.Errorf("labels changed, data not: warnings %q", a.Warnings)
	}
}
