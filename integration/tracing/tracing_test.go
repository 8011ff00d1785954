package tracing

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/tracing"
)

const selectAll = `discovery: {workloadSelector: {}}`

// The values a Secret held: they, the key name and fingerprints must never reach a span.
var secretWords = []string{"password", "alpha", "bravo"}

func otlpFlags(r *receiver) []string {
	return []string{"--otel-otlp-endpoint", r.addr, "--otel-otlp-insecure"}
}

// waitSpan waits until exactly one span named name for request exists.
func waitSpan(t *testing.T, r *receiver, name, request string) span {
	t.Helper()
	var s span
	cluster.Eventually(t, 30*time.Second, "span "+name+" of "+request, func() (bool, error) {
		var err error
		s, err = one(r.find(name, tracing.AttrRequest, request))
		return err == nil, fmt.Errorf("%v; received %d spans", err, len(r.all()))
	})
	return s
}

// storedTrace reads the traceparent the request keeps and checks it names span.
func storedTrace(t *testing.T, f *fixture.F, changed span) string {
	t.Helper()
	kr, err := f.Request("deployment-web")
	if err != nil {
		t.Fatal(err)
	}
	tp := kr.Annotations[kickv1alpha1.TraceparentAnnotation]
	sc, ok := tracing.Parse(tp)
	if !ok || sc.TraceID().String() != changed.TraceID || sc.SpanID().String() != changed.SpanID {
		t.Fatalf("stored traceparent %q does not name dependency.changed (trace %s span %s)", tp, changed.TraceID, changed.SpanID)
	}
	return tp
}

// checkCycle asserts what the two spans of web's cycle say.
func checkCycle(t *testing.T, f *fixture.F, changed, restarted span) {
	t.Helper()
	if restarted.TraceID != changed.TraceID || restarted.ParentSpanID != changed.SpanID {
		t.Fatalf("restart.executed (trace %s, parent %s) does not continue dependency.changed (trace %s, span %s)",
			restarted.TraceID, restarted.ParentSpanID, changed.TraceID, changed.SpanID)
	}
	for _, s := range []span{changed, restarted} {
		want := map[string]string{
			tracing.AttrNamespace: f.NS, tracing.AttrWorkloadKind: "Deployment", tracing.AttrWorkloadName: "web",
			tracing.AttrRequest: "deployment-web", tracing.AttrPolicy: "all", tracing.AttrSourceKind: "Secret", tracing.AttrSourceName: "db",
		}
		for k, v := range want {
			if s.Attrs[k] != v {
				t.Errorf("%s: %s = %q, want %q (attributes %v)", s.Name, k, s.Attrs[k], v, s.Attrs)
			}
		}
		if s.Resource["service.name"] != "kick-manager" {
			t.Errorf("%s: resource %v", s.Name, s.Resource)
		}
		all := fmt.Sprint(s.Attrs, s.Events)
		for _, w := range secretWords {
			if strings.Contains(all, w) {
				t.Errorf("%s carries %q: %s", s.Name, w, all)
			}
		}
	}
	if len(changed.Events) != 1 || changed.Events[0].Name != tracing.EventSourceChanged || changed.Events[0].TimeNano != changed.StartNano {
		t.Errorf("dependency.changed events %+v (start %d): want source.changed at the change time", changed.Events, changed.StartNano)
	}
	rec := f.WaitObservation("db")
	if theta := uint64(rec.Spec.LastRelevantChangeTime.UnixNano()); changed.StartNano != theta {
		t.Errorf("dependency.changed starts at %d, the recorded change time is %d", changed.StartNano, theta)
	}
	if len(restarted.Events) != 1 || restarted.Events[0].Name != tracing.EventRestarted {
		t.Errorf("restart.executed events %+v: want workload.restarted", restarted.Events)
	}
	if restarted.StartNano < changed.StartNano {
		t.Errorf("restart.executed starts before the change")
	}
}

// TestRestartCycleIsOneTrace: a Secret change the policy lets through at
// once is one trace of two spans; the request keeps its traceparent and
// the notifications carry it.
func TestRestartCycleIsOneTrace(t *testing.T) {
	r, h := newReceiver(t), newHooks(t)
	f := fixture.Setup(t, otlpFlags(r)...)
	f.Policy("all", selectAll)
	f.Create(&kickv1alpha1.NotificationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec:       kickv1alpha1.NotificationPolicySpec{Webhook: kickv1alpha1.WebhookSpec{URL: h.srv.URL}},
	})
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)

	changed := waitSpan(t, r, tracing.SpanChanged, "deployment-web")
	restarted := waitSpan(t, r, tracing.SpanRestarted, "deployment-web")
	checkCycle(t, f, changed, restarted)
	tp := storedTrace(t, f, changed)
	cluster.Eventually(t, 30*time.Second, "the Succeeded notification with the traceparent header", func() (bool, error) {
		got := h.traceparents()
		return slices.Contains(got, tp), fmt.Errorf("traceparent headers so far: %q, want %q", got, tp)
	})
}

// TestTraceContinuesAcrossManagerRestart: the change arrives while the
// policy is suspended; the manager that recorded dependency.changed is
// killed while the request waits at the gate, and the restart that a new
// manager executes after the policy resumes is in the same trace.
func TestTraceContinuesAcrossManagerRestart(t *testing.T) {
	r := newReceiver(t)
	f := fixture.Setup(t, otlpFlags(r)...)
	f.Policy("all", selectAll+"\nsuspend: true")
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 60*time.Second)
	changed := waitSpan(t, r, tracing.SpanChanged, "deployment-web")
	tp := storedTrace(t, f, changed)

	f.Mgr.Kill()
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace, otlpFlags(r)...)
	f.PatchPolicy("all", `{"spec":{"suspend":false}}`)
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)

	restarted := waitSpan(t, r, tracing.SpanRestarted, "deployment-web")
	checkCycle(t, f, changed, restarted)
	if got := storedTrace(t, f, changed); got != tp {
		t.Fatalf("traceparent changed from %q to %q", tp, got)
	}
	if n := len(r.find(tracing.SpanChanged, tracing.AttrRequest, "deployment-web")); n != 1 {
		t.Fatalf("%d dependency.changed spans: the new manager started another trace", n)
	}
}
