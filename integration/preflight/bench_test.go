package preflight

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// kickWarningCounter counts the preflight's warnings on the responses of
// one client.
type kickWarningCounter struct {
	mu sync.Mutex
	n  int
}

func (c *kickWarningCounter) HandleWarningHeader(_ int, _ string, text string) {
	if strings.HasPrefix(text, "kick: ") {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
}

func (c *kickWarningCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = 0
	return n
}

// BenchmarkSecretUpdate measures what the preflight adds to a Secret
// write: updates of a Secret that a KICK-managed Deployment consumes, on
// the local control plane with a manager serving the preflight, while the
// webhook configuration is registered and removed in turns of ten updates.
// Each update is classed by its answer: with the preflight when it carried
// the preflight's warning, without when it carried none (an update that the
// API server sent while the configuration was changing falls in the class
// of what really happened). It reports the p50 of each class and their
// ratio.
//
//	go test -run '^$' -bench SecretUpdate -benchtime 400x ./integration/preflight/
func BenchmarkSecretUpdate(b *testing.B) {
	env := cluster.Get(b)
	ns := env.Namespace(b)
	ctx := context.Background()
	addr := cluster.FreeAddr(b)
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1000000)
	vwcName, certSecret := "kick-preflight-bench-"+suffix, "kick-preflight-tls-bench-"+suffix
	fixture.PreflightWebhook(b, env, vwcName, "https://"+addr+"/preflight", ns)
	mgr := env.StartManager(b, fixture.ManagerNamespace, "--preflight", "--preflight-bind-address", addr,
		"--preflight-cert-hosts", "127.0.0.1", "--preflight-cert-secret", certSecret, "--preflight-webhook-configuration", vwcName,
		"--preflight-client-ca", apiServerPKI.CAFile)
	cluster.Eventually(b, 30*time.Second, "the manager to publish the caBundle", func() (bool, error) {
		return len(caBundle(b, env, vwcName)) > 0, nil
	})
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := env.Client.Get(ctx, client.ObjectKey{Name: vwcName}, &vwc); err != nil {
		b.Fatal(err)
	}

	// A dry-run policy: the manager assesses every change as usual but
	// restarts nothing, so no rollout competes with the writes measured.
	policy := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"},
		Spec: kickv1alpha1.KickPolicySpec{DryRun: true,
			Discovery: &kickv1alpha1.DiscoverySpec{WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, StringData: map[string]string{secretKey: secretValue1}}
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: fixture.PodSpec("db")}}}
	for _, o := range []client.Object{policy, secret, deploy} {
		if err := env.Client.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}

	warnings := &kickWarningCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warnings
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	update := func(i int) (time.Duration, bool) {
		secret.StringData = map[string]string{secretKey: fmt.Sprintf("%s-%d", secretValue2, i)}
		start := time.Now()
		if err := c.Update(ctx, secret); err != nil {
			b.Fatalf("update %d: %v", i, err)
		}
		return time.Since(start), warnings.take() > 0
	}
	cluster.Eventually(b, 30*time.Second, "the preflight to answer for the Secret", func() (bool, error) {
		_, answered := update(-1)
		return answered, nil
	})

	var with, without []time.Duration
	registered := true
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i > 0 && i%10 == 0 {
			b.StopTimer()
			if registered {
				err = env.Client.Delete(ctx, &vwc)
			} else {
				err = env.Client.Create(ctx, fresh(&vwc))
			}
			if err != nil {
				b.Fatal(err)
			}
			registered = !registered
			b.StartTimer()
		}
		d, answered := update(i)
		if answered {
			with = append(with, d)
		} else {
			without = append(without, d)
		}
	}
	b.StopTimer()
	if !registered {
		_ = env.Client.Create(ctx, fresh(&vwc)) // PreflightWebhook's cleanup deletes it
	}
	if len(with) == 0 || len(without) == 0 {
		b.Fatalf("%d updates with the preflight's answer and %d without; run with -benchtime 40x or more", len(with), len(without))
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	pw, po := p50(with), p50(without)
	b.ReportMetric(po, "p50-without-ms")
	b.ReportMetric(pw, "p50-with-ms")
	b.ReportMetric(pw/po, "with/without")
	b.Logf("%d updates with the preflight (p50 %.2f ms), %d without (p50 %.2f ms)", len(with), pw, len(without), po)
	// How long the manager itself took to answer, from its webhook
	// latency histogram: the rest of the difference is the API server's
	// call and the wait for a CPU on a busy machine.
	if text, err := mgr.Metrics(); err == nil {
		ms1, ms10 := answeredWithin(text, "0.001"), answeredWithin(text, "0.01")
		b.ReportMetric(100*ms1, "%answered-within-1ms")
		b.ReportMetric(100*ms10, "%answered-within-10ms")
		b.Logf("the manager answered %.0f%% of the reviews within 1 ms, %.0f%% within 10 ms", 100*ms1, 100*ms10)
	}
	if b.Failed() {
		b.Log(mgr.Log())
	}
}

// fresh is a copy of o to create again: without the fields the API server
// sets.
func fresh(o *admissionregistrationv1.ValidatingWebhookConfiguration) *admissionregistrationv1.ValidatingWebhookConfiguration {
	n := o.DeepCopy()
	n.ObjectMeta = metav1.ObjectMeta{Name: o.Name, Labels: o.Labels, Annotations: o.Annotations}
	return n
}

// answeredWithin is the share of the preflight's reviews that the manager
// answered within le seconds (a bucket bound of controller-runtime's
// webhook latency histogram: powers of ten), 0 when it has none.
func answeredWithin(metrics, le string) float64 {
	var within, count float64
	for line := range strings.Lines(metrics) {
		if !strings.Contains(line, `webhook="/preflight"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		switch {
		case err != nil:
		case strings.HasPrefix(line, "controller_runtime_webhook_latency_seconds_bucket{") && strings.Contains(line, `le="`+le+`"`):
			within = v
		case strings.HasPrefix(line, "controller_runtime_webhook_latency_seconds_count{"):
			count = v
		}
	}
	if count == 0 {
		return 0
	}
	return within / count
}
