// Package api tests KICK's CRDs on a real API server: every admission rule
// refuses a bad object with a message that says what to fix, and defaults
// are filled in.
package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}

// object builds an unstructured KICK object of kind from a YAML body
// (everything below metadata).
func object(t *testing.T, kind, namespace, name, body string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal([]byte(body), &u.Object); err != nil {
		t.Fatalf("bad test YAML: %v\n%s", err, body)
	}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetAPIVersion(kickv1alpha1.GroupVersion.String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// create creates with strict field validation, as kubectl does by default.
func create(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	return c.Create(ctx, u, client.FieldValidation("Strict"))
}

type refusal struct {
	name string
	body string
	want string
}

func expectRefused(t *testing.T, kind string, cases []refusal) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := create(ctx, env.Client, object(t, kind, ns, fmt.Sprintf("bad-%d", i), tc.body))
			if err == nil {
				t.Fatalf("the API server accepted an invalid %s:\n%s", kind, tc.body)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say %q:\n%v", tc.want, err)
			}
		})
	}
}

func windows(n int) string {
	var b strings.Builder
	b.WriteString("spec: {schedule: {windows: [")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{type: Allow, cron: "0 2 * * *", duration: 1h}`)
	}
	b.WriteString("]}}")
	return b.String()
}

func TestKickPolicyValidation(t *testing.T) {
	w := func(fields string) string { return "spec: {schedule: {windows: [{" + fields + "}]}}" }
	expectRefused(t, "KickPolicy", []refusal{
		{"cron with four fields", w(`type: Allow, cron: "0 2 1-5 *", duration: 1h`), "cron must have exactly 5 fields"},
		{"cron with six fields", w(`type: Allow, cron: "0 0 2 * * *", duration: 1h`), "cron must have exactly 5 fields"},
		{"cron descriptor", w(`type: Allow, cron: "@daily", duration: 1h`), "cron must have exactly 5 fields"},
		{"minute out of range", w(`type: Allow, cron: "60 2 * * *", duration: 1h`), "cron minute field must list values 0-59"},
		{"hour out of range", w(`type: Allow, cron: "0 24 * * *", duration: 1h`), "cron hour field must list values 0-23"},
		{"day of month zero", w(`type: Allow, cron: "0 2 0 * *", duration: 1h`), "cron day-of-month field must list values 1-31"},
		{"unknown month name", w(`type: Allow, cron: "0 2 * foo *", duration: 1h`), "cron month field must list values 1-12 or jan-dec"},
		{"weekday seven", w(`type: Allow, cron: "0 2 * * 7", duration: 1h`), "cron day-of-week field must list values 0-6 or sun-sat"},
		{"step zero", w(`type: Allow, cron: "*/0 * * * *", duration: 1h`), "cron minute field must list values"},
		{"unknown selector operator", `spec: {discovery: {workloadSelector: {matchExpressions: [{key: app, operator: Equals, values: [web]}]}}}`, "operator must be In, NotIn, Exists or DoesNotExist"},
		{"In without values", `spec: {discovery: {dependencySelector: {matchExpressions: [{key: app, operator: In}]}}}`, "operator In or NotIn need at least one value"},
		{"Exists with values", `spec: {discovery: {workloadSelector: {matchExpressions: [{key: app, operator: Exists, values: [web]}]}}}`, "operator Exists or DoesNotExist take no values"},
		{"zero duration", w(`type: Allow, cron: "0 2 * * *", duration: 0s`), "duration must be a positive Go duration"},
		{"duration in days", w(`type: Allow, cron: "0 2 * * *", duration: 1d`), "duration must be a positive Go duration"},
		{"negative duration", w(`type: Allow, cron: "0 2 * * *", duration: -1h`), "duration must be a positive Go duration"},
		{"unknown window type", w(`type: Block, cron: "0 2 * * *", duration: 1h`), `Unsupported value: "Block"`},
		{"missing duration", w(`type: Allow, cron: "0 2 * * *"`), "spec.schedule.windows[0].duration: Required value"},
		{"time zone with a space", w(`type: Allow, cron: "0 2 * * *", duration: 1h, timeZone: "Europe Berlin"`), "spec.schedule.windows[0].timeZone in body should match"},
		{"too many windows", windows(33), "must have at most 32 items"},
		{"unknown provider", `spec: {gitOps: {provider: argocd}}`, `Unsupported value: "argocd"`},
		{"negative minInterval", `spec: {restart: {minInterval: -5s}}`, "minInterval must be a non-negative Go duration"},
		{"minInterval in words", `spec: {restart: {minInterval: "30 seconds"}}`, "minInterval must be a non-negative Go duration"},
		{"maxConcurrent zero", `spec: {restart: {maxConcurrent: 0}}`, "maxConcurrent must be an integer of at least 1 or a percentage"},
		{"maxConcurrent over 100%", `spec: {restart: {maxConcurrent: "150%"}}`, "maxConcurrent must be an integer of at least 1 or a percentage"},
		{"maxConcurrent in words", `spec: {restart: {maxConcurrent: "five"}}`, "maxConcurrent must be an integer of at least 1 or a percentage"},
		{"two waves of one name", `spec: {restart: {waves: [{name: canary, selector: {}}, {name: canary, selector: {}}]}}`, "Duplicate value"},
		{"wave name with capitals", `spec: {restart: {waves: [{name: Canary, selector: {}}]}}`, "spec.restart.waves[0].name in body should match"},
		{"bake in days", `spec: {restart: {waves: [{name: canary, selector: {}, bake: 1d}]}}`, "bake must be a non-negative Go duration"},
		{"eleven waves", `spec: {restart: {waves: [` + waves(11) + `]}}`, "must have at most 10 items"},
	})
}

// TestKickPolicyAdmitsValidSchedulesAndSelectors: the admission checks
// refuse only what the manager would refuse too.
func TestKickPolicyAdmitsValidSchedulesAndSelectors(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	body := `spec:
  discovery:
    workloadSelector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In, values: [a, b]}, {key: canary, operator: DoesNotExist}]}
    dependencySelector: {matchExpressions: [{key: rotate, operator: Exists}, {key: team, operator: NotIn, values: [x]}]}
  schedule:
    windows:
    - {type: Allow, cron: "*/15 9-17 ? JAN-dec mon-FRI", duration: 1h}
    - {type: Deny, cron: "0,30 0-23/2 1-31 1-12 0-6", duration: 10m}
    - {type: Deny, cron: "59 23 31 12 sat", duration: 1m}`
	if err := create(context.Background(), env.Client, object(t, "KickPolicy", ns, "valid", body)); err != nil {
		t.Fatalf("a valid KickPolicy was refused: %v", err)
	}
}

func TestKickPolicyDefaults(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	if err := create(ctx, env.Client, object(t, "KickPolicy", ns, "empty", "")); err != nil {
		t.Fatalf("an empty KickPolicy must be accepted: %v", err)
	}
	var p kickv1alpha1.KickPolicy
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "empty"}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.GitOps == nil || p.Spec.GitOps.Provider != kickv1alpha1.ProviderNone {
		t.Errorf("gitOps.provider not defaulted to None: %+v", p.Spec.GitOps)
	}
	if p.Spec.Restart == nil || p.Spec.Restart.MinInterval == nil || p.Spec.Restart.MinInterval.Duration.String() != "30s" {
		t.Errorf("restart.minInterval not defaulted to 30s: %+v", p.Spec.Restart)
	}
	good := object(t, "KickPolicy", ns, "windows", `spec:
  discovery: {workloadSelector: {matchLabels: {app: web}}, dependencySelector: {matchExpressions: [{key: tier, operator: In, values: [app]}]}}
  schedule: {windows: [{type: Allow, cron: "0 2 * * 1-5", duration: 90m, timeZone: Europe/Berlin}, {type: Deny, cron: "*/15 * * * *", duration: 1m30s}]}
  gitOps: {provider: ArgoCD, requireReconciled: false}
  restart: {minInterval: 0s}
  dryRun: true`)
	if err := create(ctx, env.Client, good); err != nil {
		t.Fatalf("a valid KickPolicy was refused: %v", err)
	}
}

func TestKickRequestValidation(t *testing.T) {
	expectRefused(t, "KickRequest", []refusal{
		{"rollout without argoproj apiVersion", `spec: {targetRef: {kind: Rollout, name: web}}`, "kind Rollout requires apiVersion argoproj.io/v1alpha1"},
		{"deployment with argoproj apiVersion", `spec: {targetRef: {apiVersion: argoproj.io/v1alpha1, kind: Deployment, name: web}}`, "kinds Deployment, StatefulSet and DaemonSet require apiVersion apps/v1"},
		{"unsupported kind", `spec: {targetRef: {kind: CronJob, name: web}}`, `Unsupported value: "CronJob"`},
		{"invalid name", `spec: {targetRef: {kind: Deployment, name: Web_App}}`, "spec.targetRef.name in body should match"},
		{"no spec", ``, "spec: Required value"},
		{"reason too long", `spec: {targetRef: {kind: Deployment, name: web}, reason: "` + strings.Repeat("x", 1025) + `"}`, "spec.reason: Too long"},
	})
}

func TestKickRequestTargetIsImmutable(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	u := object(t, "KickRequest", ns, "web", `spec: {targetRef: {kind: Deployment, name: web}, reason: rotate}`)
	if err := create(ctx, env.Client, u); err != nil {
		t.Fatal(err)
	}
	var kr kickv1alpha1.KickRequest
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), &kr); err != nil {
		t.Fatal(err)
	}
	if kr.Spec.TargetRef.APIVersion != "apps/v1" {
		t.Errorf("targetRef.apiVersion not defaulted to apps/v1: %q", kr.Spec.TargetRef.APIVersion)
	}
	kr.Spec.Reason = "rotated again"
	if err := env.Client.Update(ctx, &kr); err != nil {
		t.Fatalf("changing only the reason must be allowed: %v", err)
	}
	kr.Spec.TargetRef.Name = "other"
	err := env.Client.Update(ctx, &kr)
	if err == nil || !strings.Contains(err.Error(), "targetRef is immutable; create a new KickRequest") {
		t.Fatalf("changing the target must be refused with a clear message, got %v", err)
	}
	rollout := object(t, "KickRequest", ns, "canary", `spec: {targetRef: {apiVersion: argoproj.io/v1alpha1, kind: Rollout, name: canary}}`)
	if err := create(ctx, env.Client, rollout); err != nil {
		t.Fatalf("a Rollout target with argoproj.io/v1alpha1 must be accepted: %v", err)
	}
}

func TestNotificationPolicyValidation(t *testing.T) {
	hook := func(fields string) string {
		return `spec: {webhook: {url: "https://example.com/"` + fields + `}}`
	}
	var manyHeaders strings.Builder
	for i := 0; i < 33; i++ {
		fmt.Fprintf(&manyHeaders, "%s{name: X-H%d, value: v}", map[bool]string{true: "", false: ","}[i == 0], i)
	}
	expectRefused(t, "NotificationPolicy", []refusal{
		{"ftp url", `spec: {webhook: {url: "ftp://example.com/x"}}`, "url must be an absolute http:// or https:// URL with a host"},
		{"relative url", `spec: {webhook: {url: "/kick"}}`, "url must be an absolute http:// or https:// URL with a host"},
		{"url without host", `spec: {webhook: {url: "https:///kick"}}`, "url must be an absolute http:// or https:// URL with a host"},
		{"url with credentials", `spec: {webhook: {url: "https://user:pass@example.com/kick"}}`, "url must not contain user credentials"},
		{"url too long", `spec: {webhook: {url: "https://example.com/` + strings.Repeat("a", 2048) + `"}}`, "spec.webhook.url: Too long"},
		{"GET method", hook(`, method: GET`), `Unsupported value: "GET"`},
		{"zero timeout", hook(`, timeoutSeconds: 0`), "should be greater than or equal to 1"},
		{"timeout over two minutes", hook(`, timeoutSeconds: 121`), "should be less than or equal to 120"},
		{"unknown format", hook(`, format: teams`), `Unsupported value: "teams"`},
		{"unknown phase", `spec: {phases: [Done], webhook: {url: "https://example.com/"}}`, `spec.phases[0]: Unsupported value: "Done"`},
		{"duplicate phase", `spec: {phases: [Failed, Failed], webhook: {url: "https://example.com/"}}`, `spec.phases[1]: Duplicate value: "Failed"`},
		{"empty phases", `spec: {phases: [], webhook: {url: "https://example.com/"}}`, "should have at least 1 items"},
		{"cloudEvents with json", hook(`, cloudEvents: {mode: binary}`), "cloudEvents can only be set when format is cloudevents"},
		{"pagerduty without routing key", hook(`, format: pagerduty`), "format pagerduty requires pagerDuty.routingKey"},
		{"pagerduty routing key missing inside", hook(`, format: pagerduty, pagerDuty: {severity: info}`), "spec.webhook.pagerDuty.routingKey: Required value"},
		{"pagerDuty with slack", hook(`, format: slack, pagerDuty: {routingKey: {name: pd, key: k}}`), "pagerDuty can only be set when format is pagerduty"},
		{"header with value and valueFrom", hook(`, headers: [{name: X-A, value: a, valueFrom: {name: s, key: k}}]`), "set exactly one of value and valueFrom"},
		{"header with neither", hook(`, headers: [{name: X-A}]`), "set exactly one of value and valueFrom"},
		{"literal authorization header", hook(`, headers: [{name: authorization, value: "Bearer abc"}]`), "an Authorization header carries credentials"},
		{"bad header name", hook(`, headers: [{name: "X Team:", value: a}]`), "spec.webhook.headers[0].name in body should match"},
		{"duplicate header", hook(`, headers: [{name: X-A, value: a}, {name: X-A, value: b}]`), `spec.webhook.headers[1]: Duplicate value`},
		{"too many headers", hook(`, headers: [` + manyHeaders.String() + `]`), "must have at most 32 items"},
		{"two auth methods", hook(`, auth: {bearerToken: {name: t, key: token}, basic: {username: {name: b, key: u}, password: {name: b, key: p}}}`), "set at most one of auth.bearerToken and auth.basic"},
		{"auth and authorization header", hook(`, auth: {bearerToken: {name: t, key: token}}, headers: [{name: Authorization, valueFrom: {name: t, key: other}}]`), "do not set an Authorization header together with auth"},
		{"bearer token without key", hook(`, auth: {bearerToken: {name: t}}`), "spec.webhook.auth.bearerToken.key: Required value"},
		{"basic without password", hook(`, auth: {basic: {username: {name: b, key: u}}}`), "spec.webhook.auth.basic.password: Required value"},
		{"client certificate without name", hook(`, tls: {clientCertificate: {key: tls.crt}}`), "spec.webhook.tls.clientCertificate.name: Required value"},
		{"client certificate key not a data key", hook(`, tls: {clientCertificate: {name: c, key: "certs/tls.crt"}}`), "spec.webhook.tls.clientCertificate.key in body should match"},
		{"gate changes with pagerduty", `spec: {gateChanges: true, webhook: {url: "https://events.pagerduty.com/v2/enqueue", format: pagerduty, pagerDuty: {routingKey: {name: pd, key: k}}}}`, "gateChanges cannot be used with format pagerduty"},
		{"signing without secret", hook(`, signing: {}`), "spec.webhook.signing.secretRef: Required value"},
		{"insecureSkipVerify does not exist", hook(`, tls: {insecureSkipVerify: true}`), `unknown field "spec.webhook.tls.insecureSkipVerify"`},
		{"inline credential value", hook(`, auth: {bearerToken: {name: t, key: token, value: secret}}`), `unknown field "spec.webhook.auth.bearerToken.value"`},
		{"roll-up wait too short", `spec: {rollUp: {maxWait: 30s}, webhook: {url: "https://example.com/"}}`, "rollUp.maxWait must be a duration from 1m to 24h"},
		{"roll-up wait too long", `spec: {rollUp: {maxWait: 25h}, webhook: {url: "https://example.com/"}}`, "rollUp.maxWait must be a duration from 1m to 24h"},
		{"roll-up wait not a duration", `spec: {rollUp: {maxWait: soon}, webhook: {url: "https://example.com/"}}`, "spec.rollUp.maxWait"},
		{"unknown roll-up mode", `spec: {rollUp: {mode: Instead}, webhook: {url: "https://example.com/"}}`, `Unsupported value: "Instead"`},
		{"roll-up only with gate changes", `spec: {gateChanges: true, rollUp: {mode: Only}, webhook: {url: "https://example.com/"}}`, "rollUp.mode Only sends nothing but the summaries"},
	})
}

func TestNotificationPolicyDefaults(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	u := object(t, "NotificationPolicy", ns, "hook", `spec: {webhook: {url: "https://hooks.example.com/kick"}}`)
	if err := create(ctx, env.Client, u); err != nil {
		t.Fatal(err)
	}
	var np kickv1alpha1.NotificationPolicy
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), &np); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(np.Spec.Phases)
	if got != "[Succeeded Failed NoLongerRequired DryRun]" {
		t.Errorf("phases default = %s, want the terminal phases", got)
	}
	if np.Spec.GateChanges {
		t.Error("gateChanges defaults to true, want false")
	}
	if np.Spec.RollUp != nil {
		t.Errorf("rollUp defaults to %+v, want none (per-request notifications only)", np.Spec.RollUp)
	}
	rolled := object(t, "NotificationPolicy", ns, "rolled", `spec: {rollUp: {}, webhook: {url: "https://hooks.example.com/kick"}}`)
	if err := create(ctx, env.Client, rolled); err != nil {
		t.Fatal(err)
	}
	var rp kickv1alpha1.NotificationPolicy
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rolled), &rp); err != nil {
		t.Fatal(err)
	}
	if rp.Spec.RollUp == nil || rp.Spec.RollUp.Mode != kickv1alpha1.RollUpAlso || rp.Spec.RollUp.RollUpWait() != 15*time.Minute {
		t.Errorf("rollUp: {} = %+v, want mode Also and a 15m wait", rp.Spec.RollUp)
	}
	if np.Spec.Webhook.Method != "POST" || np.Spec.Webhook.TimeoutSeconds != 10 || np.Spec.Webhook.Format != "json" {
		t.Errorf("webhook defaults wrong: method=%q timeout=%d format=%q", np.Spec.Webhook.Method, np.Spec.Webhook.TimeoutSeconds, np.Spec.Webhook.Format)
	}
	full := object(t, "NotificationPolicy", ns, "full", `spec:
  phases: [Failed, Succeeded]
  gateChanges: true
  workloadSelector: {matchLabels: {team: payments}}
  webhook:
    url: "https://events.example.com/kick"
    method: PUT
    timeoutSeconds: 30
    format: cloudevents
    cloudEvents: {mode: binary}
    signing: {secretRef: {name: hook-signing, key: secret}}
    headers: [{name: X-Team, value: payments}, {name: X-Token, valueFrom: {name: hook, key: token}}]
    auth: {basic: {username: {name: hook, key: user}, password: {name: hook, key: pass}}}
    tls: {caBundle: {name: hook-ca, key: ca.crt}, clientCertificate: {name: hook-client, key: client-chain.crt}}`)
	if err := create(ctx, env.Client, full); err != nil {
		t.Fatalf("a valid NotificationPolicy using every field was refused: %v", err)
	}
	pd := object(t, "NotificationPolicy", ns, "pagerduty", `spec: {webhook: {url: "https://events.pagerduty.com/v2/enqueue", format: pagerduty, pagerDuty: {routingKey: {name: pd, key: routing-key}}}}`)
	if err := create(ctx, env.Client, pd); err != nil {
		t.Fatalf("a valid PagerDuty NotificationPolicy was refused: %v", err)
	}
}

func TestSourceObservationValidation(t *testing.T) {
	expectRefused(t, "SourceObservation", []refusal{
		{"unsupported source kind", `spec: {source: {apiVersion: v1, kind: Pod, name: x}}`, `Unsupported value: "Pod"`},
		{"fingerprint not hex", `spec: {source: {apiVersion: v1, kind: Secret, name: x}, relevantFingerprint: "sha256:ABC"}`, "spec.relevantFingerprint in body should match"},
		{"change time not a time", `spec: {source: {apiVersion: v1, kind: Secret, name: x}, lastRelevantChangeTime: yesterday}`, "must be of type date-time"},
	})
}

// TestObservationKeepsNanoseconds proves that a change time survives the
// API server at full nanosecond precision: the freshness comparison is
// strict, so any truncation could make a change look as old as a rollout.
func TestObservationKeepsNanoseconds(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	obs := &kickv1alpha1.SourceObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kickv1alpha1.ObservationName(string(kickv1alpha1.SourceSecret), "db")},
		Spec: kickv1alpha1.SourceObservationSpec{
			Source:                 kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: kickv1alpha1.SourceSecret, Name: "db"},
			LastRelevantChangeTime: &kickv1alpha1.NanoTime{Time: at},
			Class:                  kickv1alpha1.ObservationRelevant,
		},
	}
	if err := env.Client.Create(ctx, obs); err != nil {
		t.Fatal(err)
	}
	var got kickv1alpha1.SourceObservation
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obs), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.LastRelevantChangeTime == nil || !got.Spec.LastRelevantChangeTime.Time.Equal(at) {
		t.Fatalf("change time came back as %v, want %v", got.Spec.LastRelevantChangeTime, at)
	}
}

// TestMinIntervalZeroIsKept: restart.minInterval 0s (or 0) is a valid
// setting, not a mistake to refuse: it turns the rate limit off
// (docs/concepts/requests.md#mininterval). The API server keeps it as
// written instead of defaulting it to 30s, and KICK reads it as no limit.
func TestMinIntervalZeroIsKept(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for name, value := range map[string]string{"zero-seconds": "0s", "zero": "0"} {
		if err := create(ctx, env.Client, object(t, "KickPolicy", ns, name, "spec: {restart: {minInterval: \""+value+"\"}}")); err != nil {
			t.Fatalf("minInterval %s was refused: %v", value, err)
		}
		var p kickv1alpha1.KickPolicy
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		if p.Spec.Restart == nil || p.Spec.Restart.MinInterval == nil || p.Spec.Restart.MinInterval.Duration != 0 {
			t.Errorf("minInterval %s stored as %+v, want 0", value, p.Spec.Restart)
		}
		if d := p.Spec.EffectiveMinInterval(); d != 0 {
			t.Errorf("minInterval %s: effective interval %s, want none", value, d)
		}
	}
}

// waves returns n restart waves of distinct names, in flow style.
func waves(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("{name: w%d, selector: {}}", i)
	}
	return strings.Join(out, ", ")
}

func TestKickHoldValidation(t *testing.T) {
	expectRefused(t, "KickHold", []refusal{
		{"no reason", `spec: {target: {kind: Namespace}}`, "spec.reason: Required value"},
		{"empty reason", `spec: {target: {kind: Namespace}, reason: ""}`, "spec.reason in body should be at least 1 chars long"},
		{"a Secret without a name", `spec: {target: {kind: Secret}, reason: x}`, "name is required for every kind but Namespace"},
		{"a namespace with a name", `spec: {target: {kind: Namespace, name: other}, reason: x}`, "must be empty for Namespace"},
		{"an unknown kind", `spec: {target: {kind: Pod, name: web}, reason: x}`, `Unsupported value: "Pod"`},
		{"a name that is not an object name", `spec: {target: {kind: Secret, name: Db_Pass}, reason: x}`, "spec.target.name in body should match"},
		{"reason too long", `spec: {target: {kind: Namespace}, reason: "` + strings.Repeat("x", 513) + `"}`, "spec.reason: Too long"},
	})
}

func TestKickHoldTargetIsImmutable(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	u := object(t, "KickHold", ns, "hold-secret-db", `spec: {target: {kind: Secret, name: db}, reason: "INC-42"}`)
	if err := create(ctx, env.Client, u); err != nil {
		t.Fatal(err)
	}
	var h kickv1alpha1.KickHold
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), &h); err != nil {
		t.Fatal(err)
	}
	h.Spec.Reason = "INC-42, still"
	if err := env.Client.Update(ctx, &h); err != nil {
		t.Fatalf("changing only the reason must be allowed: %v", err)
	}
	h.Spec.Target.Name = "other"
	if err := env.Client.Update(ctx, &h); err == nil || !strings.Contains(err.Error(), "target is immutable; release this hold") {
		t.Fatalf("changing the target must be refused with a clear message, got %v", err)
	}
	if err := create(ctx, env.Client, object(t, "KickHold", ns, "all", `spec: {target: {kind: Namespace}, reason: freeze, expiresAt: "2030-01-01T00:00:00Z"}`)); err != nil {
		t.Fatalf("a namespace hold with an expiry must be accepted: %v", err)
	}
}
