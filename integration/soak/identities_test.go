package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// Who sends what, as in a real cluster: each tenant is a ServiceAccount
// whose Role grants only its own namespace and only what its part of the
// soak does; KICK is ServiceAccount kick-system/kick-manager with the
// chart's RBAC. Only the set-up (namespaces, policies, the bystander's
// first objects, the webhook configuration) uses the test's admin, which
// API Priority and Fairness exempts. The attacks on KICK's own endpoints
// (forged reviews, random tokens) carry no API credentials at all.

// Rules of each tenant's Role.
var (
	// attackerRules: the preflight flood and the label churn write its
	// Secrets, the renamed references rewrite its Deployment, the forged
	// Events are created in its namespace.
	attackerRules = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "get", "update"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}
	// noisyRules: its Deployment, and the Events about it.
	noisyRules = []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}
	// bystanderRules: it changes its Secrets and watches them and its
	// Deployments.
	bystanderRules = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "update"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
	}
)

// tenant makes ServiceAccount name in ns, a Role of rules bound to it, and
// returns a client configuration holding only its token (valid for ttl).
func tenant(t *testing.T, env *cluster.Env, ns, name string, rules []rbacv1.PolicyRule, ttl time.Duration) *rest.Config {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	for _, o := range []client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s/%s: %v", o, ns, name, err)
		}
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token(t, env, ns, name, ttl)
	return cfg
}

// token is a token of ServiceAccount ns/name valid for ttl.
func token(t *testing.T, env *cluster.Env, ns, name string, ttl time.Duration) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of ServiceAccount %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// managerIdentity makes ServiceAccount kick-system/kick-manager, gives it
// the ClusterRoles and Roles the chart ships (deploy/rbac/role.yaml, and
// deploy/rbac/preflight/role.yaml for the preflight), each bound under its
// own name, and writes a kubeconfig holding its token (valid for ttl).
// Its path is passed as a second --kubeconfig, which overrides the
// harness's admin kubeconfig.
func managerIdentity(t *testing.T, env *cluster.Env, ttl time.Duration) string {
	t.Helper()
	ctx := context.Background()
	const name = "kick-manager"
	ns := fixture.ManagerNamespace
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
	for _, file := range []string{"role.yaml", filepath.Join("preflight", "role.yaml")} {
		for _, role := range readObjects(t, filepath.Join(env.RepoRoot, "deploy", "rbac", file)) {
			if err := env.Client.Create(ctx, role); err != nil {
				t.Fatalf("create %s %s from deploy/rbac/%s: %v", role.GetKind(), role.GetName(), file, err)
			}
			ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: role.GetKind(), Name: role.GetName()}
			var binding client.Object
			switch role.GetKind() {
			case "ClusterRole":
				binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.GetName()}, RoleRef: ref, Subjects: subject}
			case "Role":
				binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: role.GetNamespace(), Name: role.GetName()}, RoleRef: ref, Subjects: subject}
			default:
				t.Fatalf("deploy/rbac/%s holds a %s, not a role", file, role.GetKind())
			}
			if err := env.Client.Create(ctx, binding); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["soak"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token(t, env, ns, name, ttl)}
	cfg.Contexts["soak"] = &clientcmdapi.Context{Cluster: "soak", AuthInfo: name, Namespace: ns}
	cfg.CurrentContext = "soak"
	path := filepath.Join(t.TempDir(), "kick-manager.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// readObjects decodes every document of a YAML file.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// whoAmI names the user a configuration authenticates as, for the report.
func whoAmI(ctx context.Context, cfg *rest.Config) string {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err.Error()
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s %v", r.Status.UserInfo.Username, r.Status.UserInfo.Groups)
}
