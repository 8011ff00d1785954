package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// generatedClusterRole reads the ClusterRole of deploy/rbac/role.yaml, the
// role controller-gen writes from the markers of the core packages and
// that both installs grant (verify-generated keeps it in step with them).
func generatedClusterRole(t *testing.T) rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile("../../deploy/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind == "ClusterRole" {
			return role
		}
	}
	t.Fatal("deploy/rbac/role.yaml holds no ClusterRole")
	return rbacv1.ClusterRole{}
}

// grants lists the verbs the rules grant on resource of group.
func grants(rules []rbacv1.PolicyRule, group, resource string) []string {
	var verbs []string
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) {
			verbs = append(verbs, r.Verbs...)
		}
	}
	return verbs
}

// TestManagerOnlyReadsPolicies: people write KickPolicies and
// NotificationPolicies; the manager reads them and writes only their
// status subresource, so a compromised or buggy manager cannot rewrite or
// delete a team's policy.
func TestManagerOnlyReadsPolicies(t *testing.T) {
	role := generatedClusterRole(t)
	for _, resource := range []string{"kickpolicies", "notificationpolicies"} {
		verbs := grants(role.Rules, "kick.corewire.io", resource)
		for _, v := range verbs {
			switch v {
			case "get", "list", "watch":
			default:
				t.Errorf("the manager's ClusterRole grants %q on %s; it may only read them (writes go to %s/status)", v, resource, resource)
			}
		}
		for _, v := range []string{"get", "list", "watch"} {
			if !slices.Contains(verbs, v) {
				t.Errorf("the manager's ClusterRole lacks %q on %s", v, resource)
			}
		}
		status := grants(role.Rules, "kick.corewire.io", resource+"/status")
		if !slices.Contains(status, "patch") {
			t.Errorf("the manager's ClusterRole cannot patch %s/status (verbs %v)", resource, status)
		}
	}
}

// TestManagerOnlyReadsHolds: a KickHold is a person's freeze; the manager
// obeys it and can neither lift nor forge one.
func TestManagerOnlyReadsHolds(t *testing.T) {
	verbs := grants(generatedClusterRole(t).Rules, "kick.corewire.io", "kickholds")
	slices.Sort(verbs)
	if !slices.Equal(verbs, []string{"get", "list", "watch"}) {
		t.Errorf("the manager's ClusterRole grants %v on kickholds, want exactly get, list, watch", verbs)
	}
}

// TestManagerMayReviewMetricsCallers: --metrics-secure, which the
// manifests turn on, asks the API server to authenticate and authorize
// every /metrics caller.
func TestManagerMayReviewMetricsCallers(t *testing.T) {
	role := generatedClusterRole(t)
	for _, gr := range [][2]string{{"authentication.k8s.io", "tokenreviews"}, {"authorization.k8s.io", "subjectaccessreviews"}} {
		if verbs := grants(role.Rules, gr[0], gr[1]); !slices.Equal(verbs, []string{"create"}) {
			t.Errorf("%s.%s: verbs %v, want exactly create", gr[1], gr[0], verbs)
		}
	}
}

func TestMetricsOptions(t *testing.T) {
	plain := metricsOptions(parsed(t, "--metrics-bind-address=127.0.0.1:0"))
	if plain.SecureServing || plain.FilterProvider != nil {
		t.Errorf("without --metrics-secure: secure %t, filter set %t; want plain HTTP", plain.SecureServing, plain.FilterProvider != nil)
	}
	secure := metricsOptions(parsed(t, "--metrics-secure", "--metrics-bind-address=:8443"))
	if !secure.SecureServing || secure.FilterProvider == nil || secure.BindAddress != ":8443" {
		t.Errorf("with --metrics-secure: %+v; want HTTPS behind the authentication filter", secure)
	}

	o := parsed(t, "--metrics-cert-dir", t.TempDir())
	err := o.validate()
	if err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir needs --metrics-secure") || !strings.Contains(err.Error(), "tls.crt") {
		t.Errorf("a certificate directory without --metrics-secure and without files: %v", err)
	}
}
