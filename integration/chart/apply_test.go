package chart_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
)

// isServiceMonitor marks the one object the local control plane cannot
// take: the Prometheus Operator's ServiceMonitor has no CRD there (and the
// tests install no stand-in for it), so it is left out of every apply.
func isServiceMonitor(u *unstructured.Unstructured) bool { return u.GetKind() == "ServiceMonitor" }

// TestChartSupportsServerVersion: Chart.yaml's kubeVersion admits the
// control plane's version, as `helm install` checks first.
func TestChartSupportsServerVersion(t *testing.T) {
	env := cluster.Get(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	chrt, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, v.GitVersion) {
		t.Errorf("kubeVersion %q does not admit the control plane's %s", chrt.Metadata.KubeVersion, v.GitVersion)
	}
}

// TestRenderedChartDryRunApplies: the API server accepts every rendered
// object and CRD (server-side apply, dry run: nothing is stored, so all
// variants can use the same cluster-scoped names) for each integration
// toggle and with the ServiceMonitor enabled.
func TestRenderedChartDryRunApplies(t *testing.T) {
	env := cluster.Get(t)
	cases := toggleCases()
	cases["service-monitor"] = []string{"metrics.serviceMonitor.enabled=true"}
	for _, name := range sortedKeys(cases) {
		sets := cases[name]
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			rel := mustRender(t, "kick", ns, sets...)
			out, err := kubectl(t, rel.manifest(t, isServiceMonitor),
				"apply", "--server-side", "--dry-run=server", "--field-manager=kick-chart-test", "-f", "-")
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range rel.Objects {
				if isServiceMonitor(o) {
					continue
				}
				// kubectl names an object kind[.group]/name.
				want := fmt.Sprintf(`(?m)^%s(\.[a-z0-9.-]+)?/%s serverside-applied \(server dry run\)$`,
					strings.ToLower(o.GetKind()), regexp.QuoteMeta(o.GetName()))
				if !regexp.MustCompile(want).MatchString(out) {
					t.Errorf("apply output does not report %s as applied:\n%s", key(o), out)
				}
			}
			for _, crd := range rel.CRDs {
				for _, o := range readDocs(t, crd.File.Data) {
					want := "customresourcedefinition.apiextensions.k8s.io/" + o.GetName() + " serverside-applied (server dry run)"
					if !strings.Contains(out, want) {
						t.Errorf("apply output lacks %q:\n%s", want, out)
					}
				}
			}
		})
	}
}

// TestChartInstalls applies the default release for real into a namespace
// that enforces the "restricted" pod security standard: the manager's pods
// are admitted, and the service account holds exactly the permissions of
// the core and the enabled integrations (asked of the API server's RBAC
// authorizer).
func TestChartInstalls(t *testing.T) {
	env := cluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := env.Namespace(t)
	var nsObj corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	if nsObj.Labels == nil {
		nsObj.Labels = map[string]string{}
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if err := env.Client.Update(ctx, &nsObj); err != nil {
		t.Fatal(err)
	}

	rel := mustRender(t, "kick", ns)
	if _, err := kubectl(t, rel.manifest(t, isServiceMonitor),
		"apply", "--server-side", "--force-conflicts", "--field-manager=kick-chart-test", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range rel.Objects {
			if o.GetNamespace() == "" {
				_ = env.Client.Delete(context.Background(), o.DeepCopy())
			}
		}
	})

	var d appsv1.Deployment
	cluster.Eventually(t, 90*time.Second, "the manager Deployment's pods to be admitted", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kick-manager"}, &d)
		return err == nil && d.Status.Replicas == 2, err
	})
	// The binding subjects name the release namespace.
	var crb rbacv1.ClusterRoleBinding
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "kick-manager-argocd"}, &crb); err != nil {
		t.Fatal(err)
	}
	if len(crb.Subjects) != 1 || crb.Subjects[0].Namespace != ns || crb.Subjects[0].Name != "kick-manager" {
		t.Errorf("kick-manager-argocd binds %+v, want the kick-manager service account in %s", crb.Subjects, ns)
	}

	user := "system:serviceaccount:" + ns + ":kick-manager"
	for _, tc := range []struct {
		verb, group, resource, namespace string
		allowed                          bool
	}{
		{"patch", "apps", "deployments", "default", true},
		{"list", "", "secrets", "", true},
		{"update", "kick.corewire.io", "kickrequests", "default", true},
		{"create", "coordination.k8s.io", "leases", ns, true},
		{"create", "", "secrets", ns, true},
		{"list", "argoproj.io", "applications", "argocd", true},
		{"watch", "kustomize.toolkit.fluxcd.io", "kustomizations", "", true},
		{"list", "helm.toolkit.fluxcd.io", "helmreleases", "", true},
		// Off by default: no role, no permission.
		{"list", "argoproj.io", "rollouts", "", false},
		{"list", "kargo.akuity.io", "stages", "", false},
		{"list", "secrets-store.csi.x-k8s.io", "secretproviderclasspodstatuses", "", false},
		// The lease and key rights are confined to the release namespace.
		{"create", "coordination.k8s.io", "leases", "default", false},
		{"create", "", "secrets", "default", false},
		{"delete", "apps", "deployments", "default", false},
		// /metrics callers are reviewed by the API server (--metrics-secure).
		{"create", "authentication.k8s.io", "tokenreviews", "", true},
		{"create", "authorization.k8s.io", "subjectaccessreviews", "", true},
		// Policies are people's: the manager reads them and writes status.
		{"list", "kick.corewire.io", "kickpolicies", "default", true},
		{"patch", "kick.corewire.io", "kickpolicies/status", "default", true},
		{"create", "kick.corewire.io", "kickpolicies", "default", false},
		{"update", "kick.corewire.io", "kickpolicies", "default", false},
		{"patch", "kick.corewire.io", "kickpolicies", "default", false},
		{"delete", "kick.corewire.io", "kickpolicies", "default", false},
		{"patch", "kick.corewire.io", "notificationpolicies/status", "default", true},
		{"update", "kick.corewire.io", "notificationpolicies", "default", false},
		{"delete", "kick.corewire.io", "notificationpolicies", "default", false},
		// Holds are people's: the manager obeys them, never lifts them.
		{"watch", "kick.corewire.io", "kickholds", "default", true},
		{"delete", "kick.corewire.io", "kickholds", "default", false},
		{"create", "kick.corewire.io", "kickholds", "default", false},
	} {
		what := fmt.Sprintf("%s %s.%s in %q", tc.verb, tc.resource, tc.group, tc.namespace)
		resource, subresource, _ := strings.Cut(tc.resource, "/")
		// RBAC reads bindings from its informers: wait for the answer to
		// settle rather than asking once.
		cluster.Eventually(t, 30*time.Second, "the authorizer to answer "+what, func() (bool, error) {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: tc.verb, Group: tc.group, Resource: resource, Subresource: subresource, Namespace: tc.namespace,
				},
			}}
			if err := env.Client.Create(ctx, sar); err != nil {
				return false, err
			}
			if sar.Status.Allowed != tc.allowed {
				return false, fmt.Errorf("%s: allowed=%t (%s)", what, sar.Status.Allowed, sar.Status.Reason)
			}
			return true, nil
		})
	}
}
