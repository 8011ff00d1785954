package chart_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// preflightCertDir is where the chart mounts cert-manager's Secret.
const preflightCertDir = "--preflight-cert-dir=/etc/kick/preflight-certs"

// TestPreflightOwnCA: with preflight.enabled the manager keeps its own CA:
// it is told which Secret and webhook configuration are its own, gets the
// rights to write exactly those, and the chart renders no cert-manager
// object.
func TestPreflightOwnCA(t *testing.T) {
	rel := mustRender(t, "kick", "ops", "preflight.enabled=true")
	args := rel.managerArgs(t)
	for _, want := range []string{"--preflight=true", "--preflight-webhook-configuration=kick-preflight",
		"--preflight-cert-secret=kick-preflight-tls", "--preflight-cert-hosts=kick-preflight.ops.svc,kick-preflight.ops.svc.cluster.local",
		"--preflight-deny-in-deny-windows=false"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	if slices.Contains(args, preflightCertDir) {
		t.Errorf("args %q mount a certificate the manager makes itself", args)
	}
	checkManagerAcceptsArgs(t, args)
	vwc := rel.mustGet(t, "ValidatingWebhookConfiguration", "kick-preflight")
	if len(vwc.GetAnnotations()) != 0 {
		t.Errorf("webhook configuration annotations %v, want none", vwc.GetAnnotations())
	}
	checkBinding(t, rel, "ClusterRoleBinding", "kick-preflight", "ClusterRole")
	checkBinding(t, rel, "RoleBinding", "kick-preflight", "Role")
	if n := len(rel.ofKind("Certificate")) + len(rel.ofKind("Issuer")); n != 0 {
		t.Errorf("%d cert-manager objects rendered without preflight.certManager.enabled", n)
	}
}

// TestPreflightCertManager: with preflight.certManager.enabled the chart
// renders a Certificate for the webhook Service's names, cert-manager's CA
// injector annotation on the webhook configuration pointing at it, mounts
// its Secret and passes --preflight-cert-dir, so the manager keeps no CA;
// it then renders none of the rights the manager needs only for its own CA.
// Without an issuer name it renders a self-signed Issuer and uses it.
func TestPreflightCertManager(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sets       []string
		wantIssuer map[string]any
		selfSigned bool
	}{
		{"cluster-issuer", []string{"preflight.certManager.issuerRef.name=corp-ca", "preflight.certManager.issuerRef.kind=ClusterIssuer"},
			map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}, false},
		{"self-signed", nil, map[string]any{"name": "kick-preflight-selfsigned", "kind": "Issuer", "group": "cert-manager.io"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := mustRender(t, "kick", "ops", append([]string{"preflight.enabled=true", "preflight.certManager.enabled=true"}, tc.sets...)...)
			cert := rel.mustGet(t, "Certificate", "kick-preflight")
			if cert.GetAPIVersion() != "cert-manager.io/v1" || cert.GetNamespace() != "ops" {
				t.Errorf("Certificate %s in %q", cert.GetAPIVersion(), cert.GetNamespace())
			}
			secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
			dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			issuer, _, _ := unstructured.NestedMap(cert.Object, "spec", "issuerRef")
			if want := []string{"kick-preflight.ops.svc", "kick-preflight.ops.svc.cluster.local"}; !slices.Equal(dns, want) {
				t.Errorf("dnsNames %q, want %q", dns, want)
			}
			if !sameJSON(issuer, tc.wantIssuer) {
				t.Errorf("issuerRef %v, want %v", issuer, tc.wantIssuer)
			}
			if svc := rel.mustGet(t, "Service", "kick-preflight"); svc.GetNamespace() != "ops" {
				t.Errorf("the certificate names Service kick-preflight.ops, which is in %q", svc.GetNamespace())
			}
			if ss := rel.get("Issuer", "kick-preflight-selfsigned"); (ss != nil) != tc.selfSigned {
				t.Errorf("self-signed Issuer rendered: %v, want %v", ss != nil, tc.selfSigned)
			} else if ss != nil {
				if _, ok, _ := unstructured.NestedMap(ss.Object, "spec", "selfSigned"); !ok || ss.GetNamespace() != "ops" {
					t.Errorf("Issuer %v", ss.Object)
				}
			}

			vwc := rel.mustGet(t, "ValidatingWebhookConfiguration", "kick-preflight")
			if got := vwc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "ops/kick-preflight" {
				t.Errorf("inject-ca-from %q, want ops/kick-preflight", got)
			}

			args := rel.managerArgs(t)
			if !slices.Contains(args, "--preflight=true") || !slices.Contains(args, preflightCertDir) {
				t.Errorf("args %q lack --preflight=true or %s", args, preflightCertDir)
			}
			for _, a := range args {
				if strings.HasPrefix(a, "--preflight-cert-secret") || strings.HasPrefix(a, "--preflight-webhook-configuration") || strings.HasPrefix(a, "--preflight-cert-hosts") {
					t.Errorf("arg %s points the manager at a CA of its own", a)
				}
			}
			checkManagerAcceptsArgs(t, args)
			pod, _, _ := unstructured.NestedMap(rel.mustGet(t, "Deployment", "kick-manager").Object, "spec", "template", "spec")
			vols, _, _ := unstructured.NestedSlice(pod, "volumes")
			if want := []any{map[string]any{"name": "preflight-certs", "secret": map[string]any{"secretName": secret}}}; !sameJSON(vols, want) {
				t.Errorf("volumes %v, want the Certificate's Secret %q", vols, secret)
			}
			mounts, _, _ := unstructured.NestedSlice(managerContainer(t, rel.mustGet(t, "Deployment", "kick-manager")), "volumeMounts")
			if want := []any{map[string]any{"name": "preflight-certs", "mountPath": "/etc/kick/preflight-certs", "readOnly": true}}; !sameJSON(mounts, want) {
				t.Errorf("volumeMounts %v", mounts)
			}
			for _, k := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
				if o := rel.get(k, "kick-preflight"); o != nil {
					t.Errorf("%s rendered: the manager writes no CA or caBundle with cert-manager", key(o))
				}
			}
		})
	}
	// The metrics certificate and cert-manager's mount side by side.
	rel := mustRender(t, "kick", "ops", "preflight.enabled=true", "preflight.certManager.enabled=true", "metrics.certSecret=kick-metrics-tls")
	vols, _, _ := unstructured.NestedSlice(rel.mustGet(t, "Deployment", "kick-manager").Object, "spec", "template", "spec", "volumes")
	if len(vols) != 2 {
		t.Errorf("volumes %v, want the metrics and the preflight certificates", vols)
	}
	// cert-manager without the preflight renders nothing of either.
	rel = mustRender(t, "kick", "ops", "preflight.certManager.enabled=true")
	if rel.get("Certificate", "kick-preflight") != nil || slices.Contains(rel.managerArgs(t), preflightCertDir) {
		t.Error("preflight.certManager.enabled without preflight.enabled renders the certificate")
	}
	if _, err := render(t, "kick", "ops", "preflight.certManager.issuerRef.kind=Vault"); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("issuerRef.kind=Vault: error %v, want the schema to refuse it", err)
	}
}

// TestPreflightClientCAAndNetworkPolicy: preflight.clientCA mounts the
// ConfigMap and passes --preflight-client-ca (and the names);
// preflight.denyExempt and maxInFlight reach the args; the NetworkPolicy
// admits only the listed peers to 9443 and leaves every other port open,
// and is refused without peers.
func TestPreflightClientCAAndNetworkPolicy(t *testing.T) {
	rel := mustRender(t, "kick", "ops", "preflight.enabled=true", "preflight.clientCA.configMap=apiserver-webhook-ca",
		"preflight.clientCA.names={kube-apiserver}", "preflight.denyInDenyWindows=true",
		"preflight.denyExempt={serviceaccount:cert-manager/cert-manager,group:security}", "preflight.maxInFlight=4",
		"preflight.networkPolicy.enabled=true", "preflight.networkPolicy.from[0].ipBlock.cidr=10.0.0.10/32")
	args := rel.managerArgs(t)
	for _, want := range []string{"--preflight-client-ca=/etc/kick/preflight-client-ca/ca.crt", "--preflight-client-names=kube-apiserver",
		"--preflight-deny-exempt=serviceaccount:cert-manager/cert-manager,group:security", "--preflight-max-in-flight=4"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	checkManagerAcceptsArgs(t, args)
	vols, _, _ := unstructured.NestedSlice(rel.mustGet(t, "Deployment", rel.manager()).Object, "spec", "template", "spec", "volumes")
	found := false
	for _, v := range vols {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name")
		found = found || name == "apiserver-webhook-ca"
	}
	if !found {
		t.Errorf("volumes %v lack the client CA ConfigMap", vols)
	}
	np := rel.mustGet(t, "NetworkPolicy", "kick-preflight")
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	if len(ingress) != 2 {
		t.Fatalf("ingress %v", ingress)
	}
	cidr, _, _ := unstructured.NestedString(ingress[0].(map[string]any)["from"].([]any)[0].(map[string]any), "ipBlock", "cidr")
	ports := fmt.Sprint(ingress[0].(map[string]any)["ports"], ingress[1].(map[string]any)["ports"])
	if cidr != "10.0.0.10/32" || ports != "[map[port:9443 protocol:TCP]] [map[endPort:9442 port:1 protocol:TCP] map[endPort:65535 port:9444 protocol:TCP]]" {
		t.Errorf("NetworkPolicy ingress %v", ingress)
	}
	if _, err := render(t, "kick", "ops", "preflight.enabled=true", "preflight.networkPolicy.enabled=true"); err == nil ||
		!strings.Contains(err.Error(), "preflight.networkPolicy.from") {
		t.Errorf("a NetworkPolicy without peers: %v", err)
	}
	if rel := mustRender(t, "kick", "ops", "preflight.enabled=true"); rel.get("NetworkPolicy", "kick-preflight") != nil {
		t.Errorf("a NetworkPolicy without preflight.networkPolicy.enabled")
	}
}
