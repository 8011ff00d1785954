package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kick-operator/kick/integration/cluster"
)

// TestKustomizeInstallApplies applies `kubectl apply -k deploy/` to the
// local control plane, as a user would on a real cluster: every object is
// accepted, the manager Deployment runs the hardened pod spec, and the
// RBAC objects bind the manager's service account.
func TestKustomizeInstallApplies(t *testing.T) {
	env := cluster.Get(t)
	kubectl := filepath.Join(cluster.K8sBinDir(t), "kubectl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", env.Cluster.Kubeconfig,
		"apply", "--server-side", "--force-conflicts", "-k", filepath.Join(env.RepoRoot, "deploy")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k deploy/ failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"namespace/kick-system", "customresourcedefinition.apiextensions.k8s.io/kickpolicies.kick.corewire.io",
		"clusterrole.rbac.authorization.k8s.io/kick-manager", "role.rbac.authorization.k8s.io/kick-manager",
		"deployment.apps/kick-manager", "poddisruptionbudget.policy/kick-manager", "service/kick-manager-metrics",
		// Argo CD and Flux are on by default in the manager: their roles
		// and bindings come with the base install.
		"clusterrole.rbac.authorization.k8s.io/kick-manager-argocd", "clusterrolebinding.rbac.authorization.k8s.io/kick-manager-argocd",
		"clusterrole.rbac.authorization.k8s.io/kick-manager-flux", "clusterrolebinding.rbac.authorization.k8s.io/kick-manager-flux",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("apply output does not mention %s:\n%s", want, out)
		}
	}
	var d appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "kick-system", Name: "kick-manager"}, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("manager container is not non-root with a read-only root filesystem: %+v", c.SecurityContext)
	}
	if !strings.Contains(strings.Join(c.Args, " "), "--leader-elect") || c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Errorf("manager must run with leader election and probes: args %v", c.Args)
	}
	for _, name := range []string{"kargo", "argo-rollouts", "secrets-store-csi"} {
		var cr rbacv1.ClusterRole
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "kick-manager-" + name}, &cr); !apierrors.IsNotFound(err) {
			t.Errorf("the base install must not grant the %s integration (off by default): get ClusterRole: %v", name, err)
		}
	}
	// Pod security admission enforces "restricted" in kick-system: the
	// manager's pods must be admitted, which kwok then runs.
	cluster.Eventually(t, 60*time.Second, "the manager Deployment's pods to be created", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(&d), &d)
		return err == nil && d.Status.Replicas == 2, err
	})
}

// components are the kustomize components in deploy/components: the
// integration each one concerns, the manager arg it appends, and whether it
// adds (true) or removes (false) the integration's ClusterRole and binding.
var components = []struct {
	dir, integration, arg string
	grants                bool
}{
	{"kargo", "kargo", "--enable-kargo=true", true},
	{"argo-rollouts", "argo-rollouts", "--enable-argo-rollouts=true", true},
	{"secrets-store-csi", "secrets-store-csi", "--enable-csi-integration=true", true},
	{"no-argocd", "argocd", "--enable-argocd=false", false},
	{"no-flux", "flux", "--enable-flux=false", false},
}

// TestKustomizeComponentsApply builds an overlay of deploy/ with each
// component alone and with all of them, as a user would, checks that
// exactly the enabled integrations are granted (with the generated rules)
// and flagged, and has the API server accept the result (server-side dry
// run).
func TestKustomizeComponentsApply(t *testing.T) {
	env := cluster.Get(t)
	kubectl := filepath.Join(cluster.K8sBinDir(t), "kubectl")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The dry run does not create the Namespace the overlay declares, so
	// the namespaced objects need it to exist already.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kick-system"}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	deployDir := filepath.Join(env.RepoRoot, "deploy")

	cases := map[string][]int{"all": {0, 1, 2, 3, 4}}
	for i, c := range components {
		cases[c.dir] = []int{i}
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		idx := cases[name]
		t.Run(name, func(t *testing.T) {
			overlay := t.TempDir()
			rel, err := filepath.Rel(overlay, deployDir)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\ncomponents:\n", rel)
			granted := map[string]bool{"argocd": true, "flux": true}
			var wantArgs []string
			for _, i := range idx {
				c := components[i]
				fmt.Fprintf(&b, "- %s\n", filepath.Join(rel, "components", c.dir))
				granted[c.integration] = c.grants
				wantArgs = append(wantArgs, c.arg)
			}
			if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}

			built, err := exec.CommandContext(ctx, kubectl, "kustomize", overlay).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl kustomize with %s: %v\n%s", name, err, built)
			}
			objs := readObjects(t, built)
			for _, in := range []string{"argocd", "flux", "kargo", "argo-rollouts", "secrets-store-csi"} {
				role, binding := objs["ClusterRole/kick-manager-"+in], objs["ClusterRoleBinding/kick-manager-"+in]
				if !granted[in] {
					if role != nil || binding != nil {
						t.Errorf("%s is off but the overlay still has its ClusterRole or binding", in)
					}
					continue
				}
				if role == nil || binding == nil {
					t.Errorf("%s is on but the overlay lacks its ClusterRole or binding", in)
					continue
				}
				gen := readObjects(t, mustRead(t, filepath.Join(deployDir, "rbac", in, "role.yaml")))["ClusterRole/kick-manager-"+in]
				if gen == nil || !equalYAML(t, role["rules"], gen["rules"]) {
					t.Errorf("the %s rules differ from the generated deploy/rbac/%s/role.yaml: run make generate", in, in)
				}
				subjects := fmt.Sprint(binding["subjects"])
				if !strings.Contains(subjects, "kick-manager") || !strings.Contains(subjects, "kick-system") {
					t.Errorf("kick-manager-%s binds %s", in, subjects)
				}
			}
			d := objs["Deployment/kick-manager"]
			if d == nil {
				t.Fatal("the overlay has no manager Deployment")
			}
			var dep appsv1.Deployment
			if err := remarshal(d, &dep); err != nil {
				t.Fatal(err)
			}
			args := dep.Spec.Template.Spec.Containers[0].Args
			for _, a := range wantArgs {
				if !slices.Contains(args, a) {
					t.Errorf("manager args %q lack %s", args, a)
				}
			}

			out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", env.Cluster.Kubeconfig,
				"apply", "--server-side", "--force-conflicts", "--dry-run=server", "-k", overlay).CombinedOutput()
			if err != nil {
				t.Fatalf("server-side dry run of the overlay with %s: %v\n%s", name, err, out)
			}
			for k := range objs {
				kind, objName, _ := strings.Cut(k, "/")
				re := regexp.MustCompile(fmt.Sprintf(`(?m)^%s(\.[a-z0-9.-]+)?/%s serverside-applied \(server dry run\)$`,
					strings.ToLower(kind), regexp.QuoteMeta(objName)))
				if !re.Match(out) {
					t.Errorf("the dry run does not report %s as applied:\n%s", k, out)
				}
			}
		})
	}
}

// readObjects parses a multi-document YAML stream into objects keyed by
// "Kind/name".
func readObjects(t *testing.T, data []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(obj) == 0 {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		out[fmt.Sprintf("%v/%v", obj["kind"], meta["name"])] = obj
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func equalYAML(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// remarshal converts a decoded object into a typed one.
func remarshal(in map[string]any, out any) error {
	data, err := yaml.Marshal(in)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, out)
}
