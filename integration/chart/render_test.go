package chart_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kick-operator/kick/integration/cluster"
)

// defaultArgs are the manager args the chart renders with its default values.
var defaultArgs = []string{
	"--leader-elect=true",
	"--metrics-secure=true",
	"--metrics-bind-address=:8443",
	"--health-probe-bind-address=:8081",
	"--rollout-timeout=15m",
	"--request-retention=24h",
	"--zap-log-level=info",
	"--enable-argocd=true",
	"--argocd-namespace=argocd",
	"--enable-flux=true",
	"--enable-kargo=false",
	"--enable-argo-rollouts=false",
	"--enable-csi-integration=false",
}

// TestChartLints runs helm's linter (as `helm lint --strict`): Chart.yaml,
// values.yaml against the schema, and every template.
func TestChartLints(t *testing.T) {
	l := lint.All(chartDir(t), nil, "kick-system", false)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		} else {
			t.Logf("helm lint: %s", m)
		}
	}
}

// TestTemplatesReferenceOnlyDefinedValues renders in strict mode, where a
// template reading a value that values.yaml does not define is an error.
func TestTemplatesReferenceOnlyDefinedValues(t *testing.T) {
	for _, sets := range [][]string{nil, allOn, allOff, {"metrics.serviceMonitor.enabled=true"},
		{"metrics.serviceMonitor.enabled=true", "metrics.secure=false"},
		{"metrics.certSecret=kick-metrics-tls", "metrics.readerServiceAccounts[0].name=prometheus", "metrics.readerServiceAccounts[0].namespace=monitoring"},
		{"preflight.enabled=true"}, {"preflight.enabled=true", "preflight.certManager.enabled=true"},
		{"preflight.enabled=true", "preflight.certManager.enabled=true", "preflight.certManager.issuerRef.name=corp-ca"}} {
		if _, err := renderWith(t, engine.Engine{Strict: true}, "kick", "kick-system", sets...); err != nil {
			t.Errorf("strict render with %v: %v", sets, err)
		}
	}
}

// TestDefaultValues checks the default install object by object.
func TestDefaultValues(t *testing.T) {
	const ns = "kick-system"
	rel := mustRender(t, "kick", ns)
	want := []string{
		"ClusterRole/kick-manager", "ClusterRole/kick-manager-argocd", "ClusterRole/kick-manager-flux", "ClusterRole/kick-metrics-reader",
		"ClusterRoleBinding/kick-manager", "ClusterRoleBinding/kick-manager-argocd", "ClusterRoleBinding/kick-manager-flux",
		"Deployment/kick-manager", "PodDisruptionBudget/kick-manager", "Role/kick-manager", "RoleBinding/kick-manager",
		"Service/kick-manager-metrics", "ServiceAccount/kick-manager",
	}
	if got := keys(rel.Objects); !slices.Equal(got, want) {
		t.Errorf("default objects:\n got %v\nwant %v", got, want)
	}
	for _, o := range rel.Objects {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding":
			if o.GetNamespace() != "" {
				t.Errorf("%s is cluster-scoped but has namespace %q", key(o), o.GetNamespace())
			}
		default:
			if o.GetNamespace() != ns {
				t.Errorf("%s is in namespace %q, not the release namespace %s", key(o), o.GetNamespace(), ns)
			}
		}
	}

	d := rel.mustGet(t, "Deployment", "kick-manager")
	if got := rel.managerArgs(t); !slices.Equal(got, defaultArgs) {
		t.Errorf("manager args:\n got %q\nwant %q", got, defaultArgs)
	}
	c := managerContainer(t, d)
	if img := c["image"]; img != "ghcr.io/kick-operator/kick:v0.1.0" {
		t.Errorf("image %v, want ghcr.io/kick-operator/kick:v0.1.0 (the chart's appVersion)", img)
	}
	if r := replicas(d); r != 2 {
		t.Errorf("replicas %v, want 2", r)
	}
	if sa, _, _ := unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName"); sa != "kick-manager" {
		t.Errorf("serviceAccountName %q", sa)
	}

	// The core rules are exactly the generated ones: the ClusterRole and
	// the namespaced Role of deploy/rbac/role.yaml.
	for _, kind := range []string{"ClusterRole", "Role"} {
		if got, want := rel.mustGet(t, kind, "kick-manager").Object["rules"], generated(t, kind, "role.yaml").Object["rules"]; !sameJSON(got, want) {
			t.Errorf("%s rules differ from deploy/rbac/role.yaml:\n got %v\nwant %v", kind, got, want)
		}
	}
	checkBinding(t, rel, "ClusterRoleBinding", "kick-manager", "ClusterRole")
	checkBinding(t, rel, "RoleBinding", "kick-manager", "Role")

	// helm installs crds/ before the templates: exactly the generated CRDs,
	// byte for byte.
	gen, err := filepath.Glob(repoPath(t, "deploy", "crds", "kick.corewire.io_*.yaml"))
	if err != nil || len(gen) == 0 {
		t.Fatalf("no generated CRDs in deploy/crds (%v)", err)
	}
	if len(rel.CRDs) != len(gen) {
		t.Errorf("the chart has %d CRDs, deploy/crds has %d", len(rel.CRDs), len(gen))
	}
	for _, file := range gen {
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, crd := range rel.CRDs {
			if filepath.Base(crd.Filename) == filepath.Base(file) {
				found = true
				if string(crd.File.Data) != string(want) {
					t.Errorf("chart crds/%s differs from deploy/crds: run make generate", filepath.Base(file))
				}
			}
		}
		if !found {
			t.Errorf("the chart lacks CRD %s", filepath.Base(file))
		}
	}
	if len(rel.ofKind("ServiceMonitor")) != 0 {
		t.Error("a ServiceMonitor is rendered although metrics.serviceMonitor.enabled is false")
	}
	if !strings.Contains(rel.Notes, "kubectl -n kick-system get deploy kick-manager") {
		t.Errorf("NOTES.txt:\n%s", rel.Notes)
	}
}

// checkBinding asserts a binding refers to the role of the same name and
// binds the manager's service account in the release namespace.
func checkBinding(t *testing.T, rel *release, kind, name, roleKind string) {
	t.Helper()
	b := rel.mustGet(t, kind, name)
	ref, _, _ := unstructured.NestedStringMap(b.Object, "roleRef")
	if ref["kind"] != roleKind || ref["name"] != name || ref["apiGroup"] != "rbac.authorization.k8s.io" {
		t.Errorf("%s roleRef %v", key(b), ref)
	}
	subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
	want := []any{map[string]any{"kind": "ServiceAccount", "name": rel.manager(), "namespace": rel.Namespace}}
	if !sameJSON(subjects, want) {
		t.Errorf("%s subjects %v, want %v", key(b), subjects, want)
	}
}

var (
	allOn = []string{
		"integrations.argocd.enabled=true", "integrations.flux.enabled=true", "integrations.kargo.enabled=true",
		"integrations.argoRollouts.enabled=true", "integrations.secretsStoreCSI.enabled=true",
	}
	allOff = []string{
		"integrations.argocd.enabled=false", "integrations.flux.enabled=false", "integrations.kargo.enabled=false",
		"integrations.argoRollouts.enabled=false", "integrations.secretsStoreCSI.enabled=false",
	}
)

// toggleCases turn each integration on and off (relative to the defaults),
// and all of them at once.
func toggleCases() map[string][]string {
	cases := map[string][]string{"defaults": nil, "all-on": allOn, "all-off": allOff}
	for _, in := range integrations {
		cases[in.key+"-on"] = []string{"integrations." + in.key + ".enabled=true"}
		cases[in.key+"-off"] = []string{"integrations." + in.key + ".enabled=false"}
	}
	return cases
}

// TestIntegrationToggles: each integration's flag follows its value, and
// exactly the enabled integrations get a ClusterRole (with the generated
// rules) and a binding to the manager's service account.
func TestIntegrationToggles(t *testing.T) {
	cases := toggleCases()
	for _, name := range sortedKeys(cases) {
		sets := cases[name]
		t.Run(name, func(t *testing.T) {
			rel := mustRender(t, "kick", "ops", sets...)
			on := enabledSet(sets...)
			args := rel.managerArgs(t)
			for _, in := range integrations {
				flag := fmt.Sprintf("%s=%t", in.flag, on[in.name])
				if !slices.Contains(args, flag) {
					t.Errorf("args %q lack %s", args, flag)
				}
				role := "kick-manager-" + in.name
				cr, crb := rel.get("ClusterRole", role), rel.get("ClusterRoleBinding", role)
				if !on[in.name] {
					if cr != nil || crb != nil {
						t.Errorf("%s is disabled but the chart renders its ClusterRole or binding", in.name)
					}
					continue
				}
				if cr == nil || crb == nil {
					t.Errorf("%s is enabled but the chart renders no ClusterRole and binding %s", in.name, role)
					continue
				}
				if want := generated(t, "ClusterRole", in.name, "role.yaml").Object["rules"]; !sameJSON(cr.Object["rules"], want) {
					t.Errorf("%s rules differ from deploy/rbac/%s/role.yaml:\n got %v\nwant %v", role, in.name, cr.Object["rules"], want)
				}
				checkBinding(t, rel, "ClusterRoleBinding", role, "ClusterRole")
			}
			// Nothing else is cluster-scoped besides the core role pair and
			// the metrics reader role.
			if got, want := len(rel.ofKind("ClusterRole")), 2+countTrue(on); got != want {
				t.Errorf("%d ClusterRoles, want %d: %v", got, want, keys(rel.ofKind("ClusterRole")))
			}
			if (slices.Contains(args, "--argocd-namespace=argocd")) != on["argocd"] {
				t.Errorf("--argocd-namespace must be set exactly when Argo CD is enabled: %q", args)
			}
			checkManagerAcceptsArgs(t, args)
		})
	}
}

// replicas reads spec.replicas (a JSON number decodes as float64).
func replicas(d *unstructured.Unstructured) float64 {
	v, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas")
	f, _ := v.(float64)
	return f
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// checkManagerAcceptsArgs runs the real kick-manager binary with the
// rendered args and --version: the flag parser reads every arg before
// --version exits, so an unknown flag or bad value fails it.
func checkManagerAcceptsArgs(t *testing.T, args []string) {
	t.Helper()
	bin := cluster.Binary(t, "kick-manager")
	out, err := exec.Command(bin, append(slices.Clone(args), "--version")...).CombinedOutput()
	if err != nil {
		t.Errorf("kick-manager refuses the chart's args %q: %v\n%s", args, err, out)
	}
}

// TestValuesReachTheManager: the remaining values end up in the args and
// the pod spec.
func TestValuesReachTheManager(t *testing.T) {
	rel := mustRender(t, "platform", "ops",
		"integrations.argocd.namespace=gitops",
		"integrations.argocd.applicationNamespaces={team-a,team-b}",
		"requestRetention=2h", "rolloutTimeout=30m", "logLevel=debug",
		"replicaCount=1", "leaderElection.enabled=false",
		"image.tag=v9.9.9", "image.repository=registry.example/kick", "image.pullPolicy=Always",
		"extraArgs={--max-concurrent-reconciles=16}",
		"nodeSelector.kubernetes\\.io/os=linux",
		"podDisruptionBudget.enabled=false",
		"maxConcurrentRestarts=20",
	)
	if rel.manager() != "platform-kick-manager" {
		t.Fatalf("test helper names the manager %s", rel.manager())
	}
	want := []string{
		"--leader-elect=false",
		"--metrics-secure=true",
		"--metrics-bind-address=:8443",
		"--health-probe-bind-address=:8081",
		"--rollout-timeout=30m",
		"--max-concurrent-restarts=20",
		"--request-retention=2h",
		"--zap-log-level=debug",
		"--enable-argocd=true",
		"--argocd-namespace=gitops",
		"--argocd-application-namespaces=team-a,team-b",
		"--enable-flux=true",
		"--enable-kargo=false",
		"--enable-argo-rollouts=false",
		"--enable-csi-integration=false",
		"--max-concurrent-reconciles=16",
	}
	args := rel.managerArgs(t)
	if !slices.Equal(args, want) {
		t.Errorf("manager args:\n got %q\nwant %q", args, want)
	}
	checkManagerAcceptsArgs(t, args)
	d := rel.mustGet(t, "Deployment", "platform-kick-manager")
	c := managerContainer(t, d)
	if c["image"] != "registry.example/kick:v9.9.9" || c["imagePullPolicy"] != "Always" {
		t.Errorf("image %v, pull policy %v", c["image"], c["imagePullPolicy"])
	}
	if r := replicas(d); r != 1 {
		t.Errorf("replicas %v, want 1", r)
	}
	if sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "spec", "nodeSelector"); sel["kubernetes.io/os"] != "linux" {
		t.Errorf("nodeSelector %v", sel)
	}
	if rel.get("PodDisruptionBudget", "platform-kick-manager") != nil {
		t.Error("podDisruptionBudget.enabled=false still renders a PodDisruptionBudget")
	}
	checkBinding(t, rel, "ClusterRoleBinding", "platform-kick-manager-argocd", "ClusterRole")
	// namespace.name may repeat the release namespace.
	mustRender(t, "kick", "ops", "namespace.name=ops")
}

// TestServiceMonitorOnlyWhenEnabled: the ServiceMonitor exists only when
// asked for, carries the extra labels and selects the metrics Service.
func TestServiceMonitorOnlyWhenEnabled(t *testing.T) {
	if sm := mustRender(t, "kick", "ops").ofKind("ServiceMonitor"); len(sm) != 0 {
		t.Fatalf("ServiceMonitor rendered by default: %v", keys(sm))
	}
	rel := mustRender(t, "kick", "ops", "metrics.serviceMonitor.enabled=true",
		"metrics.serviceMonitor.interval=15s", "metrics.serviceMonitor.labels.release=prometheus")
	sm := rel.mustGet(t, "ServiceMonitor", "kick-manager")
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetNamespace() != "ops" || sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor %s/%s labels %v", sm.GetAPIVersion(), sm.GetNamespace(), sm.GetLabels())
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["interval"] != "15s" {
		t.Errorf("endpoints %v", eps)
	}
	svc := rel.mustGet(t, "Service", "kick-manager-metrics")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service does not carry (%v)", k, v, svc.GetLabels())
		}
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["name"] != "metrics" {
		t.Errorf("metrics Service ports %v", ports)
	}
}

// TestInvalidValuesAreRefused: mistakes fail the install instead of
// installing something else.
func TestInvalidValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"leaderElection.enabled=false"}, "leaderElection.enabled"},
		{[]string{"namespace.name=kick-system"}, "install with --namespace kick-system"},
		{[]string{"integrations.argoRollout.enabled=true"}, "argoRollout"},
		{[]string{"integrations.kargo.enabled=yes"}, "kargo"},
		{[]string{"rolloutTimeout=fifteen"}, "rolloutTimeout"},
		{[]string{"replicas=3"}, "replicas"},
	} {
		_, err := render(t, "kick", "ops", tc.sets...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %v: error %v, want one mentioning %q", tc.sets, err, tc.want)
		}
	}
}

// TestChartMatchesKustomizeInstall: with the default values and a release
// named kick, the chart renders the same objects as `kubectl kustomize
// deploy/` (less the Namespace and the CRDs, which helm handles itself),
// and the same hardened pod spec.
func TestChartMatchesKustomizeInstall(t *testing.T) {
	rel := mustRender(t, "kick", "kick-system")
	var kust []*unstructured.Unstructured
	for _, o := range kustomize(t, repoPath(t, "deploy")) {
		if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" {
			kust = append(kust, o)
		}
	}
	if got, want := keys(rel.Objects), keys(kust); !slices.Equal(got, want) {
		t.Errorf("chart objects %v\nkustomize objects %v", got, want)
	}
	var kd *unstructured.Unstructured
	for _, o := range kust {
		if o.GetKind() == "Deployment" {
			kd = o
		}
		if hd := rel.get(o.GetKind(), o.GetName()); hd != nil && strings.HasSuffix(o.GetKind(), "Role") && !sameJSON(hd.Object["rules"], o.Object["rules"]) {
			t.Errorf("%s rules differ between the chart and kustomize", key(o))
		}
	}
	if kd == nil {
		t.Fatal("kustomize renders no Deployment")
	}
	hd := rel.mustGet(t, "Deployment", "kick-manager")
	for _, path := range [][]string{{"spec", "template", "spec", "securityContext"}, {"spec", "replicas"}} {
		a, _, _ := unstructured.NestedFieldNoCopy(hd.Object, path...)
		b, _, _ := unstructured.NestedFieldNoCopy(kd.Object, path...)
		if !sameJSON(a, b) {
			t.Errorf("%s: chart %v, kustomize %v", strings.Join(path, "."), a, b)
		}
	}
	hc, kc := managerContainer(t, hd), managerContainer(t, kd)
	for _, f := range []string{"securityContext", "resources", "ports", "livenessProbe", "readinessProbe", "env"} {
		if !sameJSON(hc[f], kc[f]) {
			t.Errorf("container %s: chart %v, kustomize %v", f, hc[f], kc[f])
		}
	}
	// The kustomize manager leaves the integration flags at the manager's
	// defaults, which the chart's defaults spell out.
	kargs, _, _ := unstructured.NestedStringSlice(kc, "args")
	for _, a := range kargs {
		name := strings.SplitN(a, "=", 2)[0]
		if name == "--leader-elect" {
			a = "--leader-elect=true"
		}
		if !slices.Contains(defaultArgs, a) {
			t.Errorf("kustomize arg %s is not among the chart's %q", a, defaultArgs)
		}
	}
}

// TestMetricsAreAuthenticated: by default the manager serves /metrics over
// HTTPS on 8443 behind the API server's authentication and authorization,
// and the chart ships the ClusterRole a scraper needs (bound only to the
// accounts listed); the ServiceMonitor scrapes with a bearer token over
// HTTPS. metrics.secure=false goes back to plain HTTP on 8080.
func TestMetricsAreAuthenticated(t *testing.T) {
	rel := mustRender(t, "kick", "ops", "metrics.serviceMonitor.enabled=true")
	args := rel.managerArgs(t)
	for _, want := range []string{"--metrics-secure=true", "--metrics-bind-address=:8443"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	c := managerContainer(t, rel.mustGet(t, "Deployment", "kick-manager"))
	if ports := fmt.Sprint(c["ports"]); !strings.Contains(ports, "containerPort:8443 name:metrics") {
		t.Errorf("container ports %s: want metrics on 8443", ports)
	}
	svcPorts, _, _ := unstructured.NestedSlice(rel.mustGet(t, "Service", "kick-manager-metrics").Object, "spec", "ports")
	if len(svcPorts) != 1 || fmt.Sprint(svcPorts[0].(map[string]any)["port"]) != "8443" {
		t.Errorf("metrics Service ports %v, want 8443", svcPorts)
	}
	reader := rel.mustGet(t, "ClusterRole", "kick-metrics-reader")
	wantRules := []any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}
	if !sameJSON(reader.Object["rules"], wantRules) {
		t.Errorf("kick-metrics-reader rules %v, want %v", reader.Object["rules"], wantRules)
	}
	if rel.get("ClusterRoleBinding", "kick-metrics-reader") != nil {
		t.Error("the metrics reader role is bound to someone although metrics.readerServiceAccounts is empty")
	}
	eps, _, _ := unstructured.NestedSlice(rel.mustGet(t, "ServiceMonitor", "kick-manager").Object, "spec", "endpoints")
	ep := eps[0].(map[string]any)
	if ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" ||
		!sameJSON(ep["tlsConfig"], map[string]any{"insecureSkipVerify": true}) {
		t.Errorf("ServiceMonitor endpoint %v: want https with Prometheus's token, accepting the self-signed certificate", ep)
	}
	if !strings.Contains(rel.Notes, "https://kick-manager-metrics.ops.svc:8443/metrics,\nonly for callers bound to ClusterRole kick-metrics-reader.") {
		t.Errorf("NOTES.txt does not say who may scrape:\n%s", rel.Notes)
	}
	checkManagerAcceptsArgs(t, args)

	// A certificate from a Secret, a CA for the scrape, readers bound by the chart.
	rel = mustRender(t, "platform", "ops", "metrics.serviceMonitor.enabled=true", "metrics.certSecret=kick-metrics-tls",
		"metrics.serviceMonitor.tlsConfig.insecureSkipVerify=false",
		"metrics.serviceMonitor.tlsConfig.serverName=platform-kick-manager-metrics.ops.svc",
		"metrics.readerServiceAccounts[0].name=prometheus-k8s", "metrics.readerServiceAccounts[0].namespace=monitoring")
	if args := rel.managerArgs(t); !slices.Contains(args, "--metrics-cert-dir=/etc/kick/metrics-certs") {
		t.Errorf("args %q lack --metrics-cert-dir", args)
	}
	d := rel.mustGet(t, "Deployment", "platform-kick-manager")
	c = managerContainer(t, d)
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	if !strings.Contains(fmt.Sprint(vols), "secretName:kick-metrics-tls") || !strings.Contains(fmt.Sprint(c["volumeMounts"]), "mountPath:/etc/kick/metrics-certs") {
		t.Errorf("volumes %v, mounts %v: want the certificate Secret mounted at /etc/kick/metrics-certs", vols, c["volumeMounts"])
	}
	eps, _, _ = unstructured.NestedSlice(rel.mustGet(t, "ServiceMonitor", "platform-kick-manager").Object, "spec", "endpoints")
	if tls := eps[0].(map[string]any)["tlsConfig"]; !sameJSON(tls, map[string]any{"insecureSkipVerify": false, "serverName": "platform-kick-manager-metrics.ops.svc"}) {
		t.Errorf("tlsConfig %v", tls)
	}
	b := rel.mustGet(t, "ClusterRoleBinding", "platform-kick-metrics-reader")
	ref, _, _ := unstructured.NestedStringMap(b.Object, "roleRef")
	subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
	if ref["name"] != "platform-kick-metrics-reader" || !sameJSON(subjects, []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}}) {
		t.Errorf("metrics reader binding: roleRef %v, subjects %v", ref, subjects)
	}

	// Plain HTTP when asked for.
	rel = mustRender(t, "kick", "ops", "metrics.secure=false", "metrics.serviceMonitor.enabled=true")
	args = rel.managerArgs(t)
	if !slices.Contains(args, "--metrics-bind-address=:8080") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--metrics-secure") }) {
		t.Errorf("metrics.secure=false: args %q, want plain HTTP on :8080", args)
	}
	if rel.get("ClusterRole", "kick-metrics-reader") != nil {
		t.Error("metrics.secure=false still renders the metrics reader role")
	}
	eps, _, _ = unstructured.NestedSlice(rel.mustGet(t, "ServiceMonitor", "kick-manager").Object, "spec", "endpoints")
	if ep := eps[0].(map[string]any); ep["scheme"] != "http" || ep["bearerTokenFile"] != nil || ep["tlsConfig"] != nil {
		t.Errorf("metrics.secure=false: ServiceMonitor endpoint %v, want plain http", ep)
	}
	checkManagerAcceptsArgs(t, args)
}
