package kubectlkick

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
)

// TestExplainShowsAKickHold: a KickHold of a Secret keeps the restart its
// rotation calls for waiting with reason Held, and explain shows that hold
// on its hold: line, in -o json, and, for a caller who may read everything
// explain needs but the KickHolds, as unknown rather than an error. Once
// the hold is deleted the workload restarts once.
func TestExplainShowsAKickHold(t *testing.T) {
	f := newFx(t)
	f.Env.StartManager(t, "kick-system")
	f.Policy("held", "discovery: {workloadSelector: {matchLabels: {app: held}}}\nrestart: {minInterval: 0s}")
	f.Secret("held-db", map[string]string{"password": "alpha"}, nil)
	f.deployment("held", "held-db")
	f.record("held-db", func(r *kickv1alpha1.SourceObservation) bool { return r.Spec.LastRelevantChangeTime != nil })

	target := kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "held-db"}
	hold := &kickv1alpha1.KickHold{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: kickv1alpha1.HoldName(target)},
		Spec: kickv1alpha1.KickHoldSpec{Target: target, Reason: "INC-42: rotating"}}
	f.Create(hold)
	f.rotate("held-db", "beta")
	f.waitRequest("deployment-held", "to be held", func(kr *kickv1alpha1.KickRequest) bool {
		return kr.Status.Phase == kickv1alpha1.PhaseWaitingForGate && kr.Status.Gate != nil && kr.Status.Gate.Reason == kickv1alpha1.GateHeld &&
			strings.HasPrefix(kr.Status.Gate.Message, "held by KickHold") // not the short wait for the change's record
	})

	held := `held by KickHold hold-secret-held-db (Secret/held-db): "INC-42: rotating"; it holds restarts that bring in a change of Secret/held-db ` +
		`until it is released (kubectl kick release -n ` + f.NS + ` secret/held-db)`
	code, out, _ := f.kick("explain", "deployment/held")
	if code != 0 {
		t.Fatalf("explain of a held workload = %d, want 0", code)
	}
	mustContain(t, "explain deployment/held", out,
		"Verdict:        stale: ",
		"hold:         closed: waiting for Held ("+held+")\n",
		"KickRequest:    deployment-held (open), phase WaitingForGate, reason Held: "+held,
		"Summary:        waiting for Held\n")

	code, out, _ = f.kick("explain", "deployment/held", "-o", "json")
	var e struct {
		Holds []struct {
			Name, Reason string
			Active       bool
			Target       struct{ Kind, Name string }
		}
		Gate struct {
			Reason, Stage string
			Hold          struct {
				Open   bool
				Reason string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &e); code != 0 || err != nil {
		t.Fatalf("explain -o json = %d, %v", code, err)
	}
	if len(e.Holds) != 1 || e.Holds[0].Name != "hold-secret-held-db" || e.Holds[0].Reason != "INC-42: rotating" || !e.Holds[0].Active ||
		e.Holds[0].Target.Kind != "Secret" || e.Holds[0].Target.Name != "held-db" ||
		e.Gate.Reason != "Held" || e.Gate.Stage != "Hold" || e.Gate.Hold.Open || e.Gate.Hold.Reason != "Held" {
		t.Errorf("explain -o json: holds %+v, gate %+v", e.Holds, e.Gate)
	}

	// A caller who may read all explain reads but the KickHolds.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "explainer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{kickv1alpha1.GroupVersion.Group}, Resources: []string{"kickpolicies", "kickrequests", "sourceobservations"}, Verbs: []string{"get", "list"}},
	}}
	f.Create(role)
	f.Create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "explainer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: f.NS, Name: "explainer"}}})
	code, out, _ = f.kick("explain", "deployment/held", "--as", "system:serviceaccount:"+f.NS+":explainer")
	if code != 0 {
		t.Fatalf("explain without the right to list KickHolds = %d, want 0", code)
	}
	mustContain(t, "explain deployment/held without kickholds", out,
		`hold:         unknown: cannot read the namespace's KickHolds: permission denied: you need "list" on kickholds.kick.corewire.io in namespace `+f.NS,
		"KickRequest:    deployment-held (open), phase WaitingForGate, reason Held: "+held,
		"Summary:        would restart now unless a KickHold holds it (the KickHolds could not be read)\n")

	// kubectl kick timeline tells the wait and names the hold in the gate
	// entry, and shows the HeldByKickHold Event (recorded asynchronously;
	// its message is the first Held decision's, which for a source hold
	// may be the short wait for the change's record).
	cluster.Eventually(t, 30*time.Second, "kubectl kick timeline to show the hold", func() (bool, error) {
		code, out, _ := f.kick("timeline", "deployment/held")
		ok := code == 0 && strings.Contains(out, "waiting at the Hold gate: Held — "+held) &&
			strings.Contains(out, "KickRequest deployment-held: HeldByKickHold: ")
		return ok, fmt.Errorf("exit %d:\n%s", code, out)
	})

	// The release: the held workload restarts, once.
	if err := f.Env.Client.Delete(f.Ctx, hold); err != nil {
		t.Fatal(err)
	}
	f.WaitPhase("deployment-held", kickv1alpha1.PhaseSucceeded, time.Minute)
	if n := f.replicaSets("held"); n != 2 {
		t.Errorf("%d ReplicaSets after the release, want 2 (one restart)", n)
	}
}
