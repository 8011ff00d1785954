package certs

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestRolesGrantOnlyTheCertificateSecret: the CA's private key lives in
// the certificate Secret, so the preflight's roles (the generated one and
// its copies for kustomize and the chart) may create a Secret (which RBAC
// cannot limit by name) and update only that one, and may touch only the
// preflight's own webhook configuration. Reading goes through the
// manager's read rule; nothing here may grant get, list, watch, patch or
// delete of Secrets, nor anything unnamed beyond create.
func TestRolesGrantOnlyTheCertificateSecret(t *testing.T) {
	for _, f := range []string{"deploy/rbac/preflight/role.yaml", "deploy/components/preflight/role.yaml", "deploy/chart/kick/files/rbac/preflight.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		rules := 0
		for _, doc := range bytes.Split(raw, []byte("\n---")) {
			var role struct {
				Kind  string              `json:"kind"`
				Rules []rbacv1.PolicyRule `json:"rules"`
			}
			if err := yaml.Unmarshal(doc, &role); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, r := range role.Rules {
				rules++
				named := slices.Equal(r.ResourceNames, []string{"kick-preflight-tls"}) || slices.Equal(r.ResourceNames, []string{"kick-preflight"})
				switch {
				case slices.Equal(r.Resources, []string{"secrets"}) && slices.Equal(r.Verbs, []string{"create"}) && len(r.ResourceNames) == 0:
				case slices.Equal(r.Resources, []string{"secrets"}) && slices.Equal(r.Verbs, []string{"update"}) && named:
				case slices.Equal(r.Resources, []string{"validatingwebhookconfigurations"}) && slices.Equal(r.Verbs, []string{"get", "patch"}) && named:
				default:
					t.Errorf("%s: %s grants %+v", f, role.Kind, r)
				}
			}
		}
		if rules != 3 {
			t.Errorf("%s: %d rules, want 3", f, rules)
		}
	}
}
