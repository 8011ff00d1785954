package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kick-operator/kick/integration/cluster"
)

// TestSecureMetrics runs the manager as the manifests do (--metrics-secure)
// and scrapes /metrics as three callers: one without a token is refused
// with 401, a ServiceAccount the API server knows but that may not get
// /metrics with 403, and one bound to the shipped kick-metrics-reader
// ClusterRole (deploy/manager/metrics-reader.yaml) gets the metrics.
func TestSecureMetrics(t *testing.T) {
	env := cluster.Get(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}

	// The shipped reader role, cluster-scoped: remove it afterwards.
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "deploy", "manager", "metrics-reader.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var reader rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &reader); err != nil {
		t.Fatal(err)
	}
	if reader.Name != "kick-metrics-reader" {
		t.Fatalf("deploy/manager/metrics-reader.yaml names ClusterRole %q", reader.Name)
	}
	if err := env.Client.Create(ctx, &reader); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), &reader) })

	token := func(name string) string {
		t.Helper()
		if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for ServiceAccount %s: %v", name, err)
		}
		return tr.Status.Token
	}
	stranger, scraper := token("stranger"), token("scraper")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
	// The manager remembers a denial for a while: ask the API server first
	// until its RBAC informers have seen the binding.
	cluster.Eventually(t, 30*time.Second, "the binding to take effect", func() (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":scraper",
			Groups:                []string{"system:serviceaccounts", "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		if err := env.Client.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, fmt.Errorf("not allowed yet: %s", sar.Status.Reason)
	})

	addr := freeAddr(t)
	env.StartManager(t, ns, "--metrics-secure", "--metrics-bind-address", addr)
	// The manager's certificate is self-signed, as in a default install.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(bearer string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}

	// The metrics server starts next to the probes, not before them.
	cluster.Eventually(t, 30*time.Second, "the metrics server to listen", func() (bool, error) {
		_, _, err := scrape("")
		return err == nil, err
	})
	for _, tc := range []struct {
		who, token string
		want       []int
	}{
		{"no token", "", []int{http.StatusUnauthorized}},
		{"a token the API server rejects", "not-a-token", []int{http.StatusUnauthorized}},
		{"a ServiceAccount without the reader role", stranger, []int{http.StatusForbidden}},
	} {
		code, body, err := scrape(tc.token)
		if err != nil {
			t.Fatalf("%s: %v", tc.who, err)
		}
		if !slices.Contains(tc.want, code) {
			t.Errorf("%s: status %d, want %v (%s)", tc.who, code, tc.want, strings.TrimSpace(body))
		}
		if strings.Contains(body, "controller_runtime_") || strings.Contains(body, "kick_") {
			t.Errorf("%s: the response carries metrics:\n%.300s", tc.who, body)
		}
	}
	code, body, err := scrape(scraper)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
		t.Errorf("bound to kick-metrics-reader: status %d, want 200 with the metrics:\n%.500s", code, body)
	}

	// Nothing is served in the clear on that port.
	if code, _, err := get("http://" + addr + "/metrics"); err == nil && code == http.StatusOK {
		t.Error("plain HTTP to the secure metrics port answered 200")
	}
}
