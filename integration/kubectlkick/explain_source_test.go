package kubectlkick

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// explain on a Secret lists its consumers with what each would do, plans
// the restarts a change would make (the policy's cap and waves), and names
// the hold that would keep them waiting; it reads with the caller's rights
// and names no key.
func TestExplainSource(t *testing.T) {
	env := cluster.Get(t)
	f := newFx(t)
	env.StartManager(t, fixture.ManagerNamespace)
	f.Policy("web", `
discovery: {workloadSelector: {matchLabels: {tier: web}}}
restart:
  minInterval: 0s
  maxConcurrent: 1
  waves: [{name: canary, selector: {matchLabels: {canary: "yes"}}, bake: 2m}]`)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	for _, name := range []string{"web-1", "web-2", "loner"} {
		f.Deployment(name, 1, fixture.PodSpec("db"))
	}
	// Workload labels choose the policy and the wave; they change no pod.
	for name, labels := range map[string]string{"web-1": `{"tier":"web","canary":"yes"}`, "web-2": `{"tier":"web"}`} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: name}}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":`+labels+`}}`))
		if err := env.Client.Patch(f.Ctx, d, patch); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"web-1", "web-2", "loner"} {
		f.WaitAvailable(name)
	}
	f.WaitObservation("db")
	if code, _, _ := f.kick("hold", "secret/db", "--reason", "INC-7"); code != 0 {
		t.Fatalf("hold = %d", code)
	}

	code, out, _ := f.kick("explain", "secret/db")
	if code != 0 {
		t.Fatalf("explain secret/db = %d, want 0", code)
	}
	for _, want := range []string{
		"Source:         Secret " + f.NS + "/db",
		"Consumers:      3; a change restarts 2",
		"deployment/loner  no policy",
		"Plan:           policy web restarts 2 workloads, 1 at a time, wave canary (1) first (bake 2m)",
		`Holds:          KickHold hold-secret-db (Secret/db): "INC-7" holds them until it is released`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain secret/db does not say %q", want)
		}
	}
	if strings.Contains(out, "password") || strings.Contains(out, "alpha") {
		t.Errorf("explain secret/db names a key or a value:\n%s", out)
	}
	code, out, _ = f.kick("explain", "cm/db", "-o", "json")
	var e struct {
		Kind      string
		Consumers []json.RawMessage
	}
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil || e.Kind != "ConfigMap" || len(e.Consumers) != 0 {
		t.Errorf("explain cm/db -o json = %d %+v, want 0 and a ConfigMap without consumers", code, e)
	}
}
