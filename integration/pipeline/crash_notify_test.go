package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/sinks/signing"
)

// attempt is one delivery attempt a receiver saw.
type attempt struct {
	id, request, phase string
	answered           int
}

// flakyReceiver records every attempt's event id (webhook-id) and answers 200, or, while
// failing, 503 with a long Retry-After so the delivery stays in flight.
type flakyReceiver struct {
	failing  atomic.Bool
	mu       sync.Mutex
	attempts []attempt
	srv      *httptest.Server
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	r := &flakyReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var doc struct{ RequestName, Phase string }
		_ = json.Unmarshal(body, &doc)
		code := http.StatusOK
		if r.failing.Load() {
			code = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "30")
		}
		r.mu.Lock()
		r.attempts = append(r.attempts, attempt{id: req.Header.Get(signing.HeaderID), request: doc.RequestName, phase: doc.Phase, answered: code})
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// seen returns a copy of the attempts so far.
func (r *flakyReceiver) seen() []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attempt(nil), r.attempts...)
}

// find returns the attempts about request's phase, and whether one of them was answered 200.
func find(as []attempt, request, phase string) (matching []attempt, delivered bool) {
	for _, a := range as {
		if a.request == request && a.phase == phase {
			matching = append(matching, a)
			delivered = delivered || a.answered == http.StatusOK
		}
	}
	return matching, delivered
}

// TestNotificationSurvivesCrash: a Succeeded notification whose delivery is still being
// retried when the manager is SIGKILLed is delivered by the next manager, with the id of the
// attempts before the crash; a notification already delivered before the crash may come
// again, but only with its id: the receiver never sees a second id for one (request, phase),
// and nothing after the restart has an id it had not seen before.
func TestNotificationSurvivesCrash(t *testing.T) {
	rcv := newFlakyReceiver(t)
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.Create(&kickv1alpha1.NotificationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec: kickv1alpha1.NotificationPolicySpec{
			Phases:  []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseSucceeded},
			Webhook: kickv1alpha1.WebhookSpec{URL: rcv.srv.URL + "/kick", TimeoutSeconds: 120},
		},
	})
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.Secret("cfg", map[string]string{"mode": "a"}, nil)
	f.Deployment("web", 1, fixture.PodSpec("db"))
	f.Deployment("api", 1, fixture.PodSpec("cfg"))
	f.WaitAvailable("web")
	f.WaitAvailable("api")
	f.WaitObservation("db")
	f.WaitObservation("cfg")
	cluster.Eventually(t, 30*time.Second, "the policy's first watermark", func() (bool, error) {
		var p kickv1alpha1.NotificationPolicy
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "hook"}, &p); err != nil {
			return false, err
		}
		return p.Status.HandledThrough != nil, fmt.Errorf("status %+v", p.Status)
	})

	// Delivered and acknowledged before the crash.
	f.SetSecret("cfg", map[string]string{"mode": "b"})
	f.WaitPhase("deployment-api", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	cluster.Eventually(t, 30*time.Second, "api's Succeeded notification delivered", func() (bool, error) {
		_, ok := find(rcv.seen(), "deployment-api", "Succeeded")
		return ok, fmt.Errorf("attempts %+v", rcv.seen())
	})

	// Being retried when the manager dies.
	rcv.failing.Store(true)
	f.SetSecret("db", map[string]string{"password": "bravo"})
	cluster.Eventually(t, 90*time.Second, "an attempt of web's Succeeded notification", func() (bool, error) {
		as, _ := find(rcv.seen(), "deployment-web", "Succeeded")
		return len(as) > 0, fmt.Errorf("attempts %+v", rcv.seen())
	})
	f.Mgr.Kill()
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, time.Second)
	before := rcv.seen()
	known := map[string]bool{}
	for _, a := range before {
		known[a.id] = true
	}
	if _, ok := find(before, "deployment-web", "Succeeded"); ok {
		t.Fatal("web's Succeeded notification was acknowledged before the crash; the test proves nothing")
	}

	rcv.failing.Store(false)
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)
	cluster.Eventually(t, 60*time.Second, "web's Succeeded notification delivered after the restart", func() (bool, error) {
		_, ok := find(rcv.seen(), "deployment-web", "Succeeded")
		return ok, fmt.Errorf("attempts %+v", rcv.seen())
	})

	all := rcv.seen()
	ids := map[[2]string]string{}
	for i, a := range all {
		key := [2]string{a.request, a.phase}
		if a.id == "" {
			t.Errorf("attempt %d has no id: %+v", i, a)
		}
		if prev, ok := ids[key]; ok && prev != a.id {
			t.Errorf("%s %s was sent with ids %s and %s", a.request, a.phase, prev, a.id)
		}
		ids[key] = a.id
		if i >= len(before) && !known[a.id] {
			t.Errorf("after the restart a new id %s was sent (%s %s)", a.id, a.request, a.phase)
		}
	}
	for _, a := range all[len(before):] {
		t.Logf("after the restart: %s %s id %s answered %d", a.request, a.phase, a.id, a.answered)
	}
}
