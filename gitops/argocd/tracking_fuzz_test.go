package argocd

import (
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// FuzzParseTrackingID feeds arbitrary annotation values to the tracking-id
// parser and to ClaimOf, which reads them from any workload: nothing
// panics, an accepted value is canonical (String gives it back and parses
// to the same id) and names an application, a kind and a name, and a claim
// is only ever made for the workload itself.
func FuzzParseTrackingID(f *testing.F) {
	for _, seed := range []string{
		"web:apps/Deployment:shop/web",
		"team_web:apps/Deployment:shop/web",
		"cm:/ConfigMap:shop/settings",
		"ns:/Namespace:/shop",
		"web:apps/Deployment:shop/we:b",
		"web:argoproj.io/Rollout:shop/web",
		"", ":", "::", ":/:/", "web", "web:apps/Deployment", "web:apps:shop/web",
		"web:apps/Deployment:shop", "web:apps/Deployment:shop/web/extra", "web:a/b/c:shop/web",
		":apps/Deployment:shop/web", "web:apps/:shop/web", "web:apps/Deployment:shop/",
		"a_b_c:apps/Deployment:shop/web", "_web:apps/Deployment:shop/web",
		"garbage::::/", "\x00:\xff/\x00:\x00/\xff",
	} {
		f.Add(seed, "")
		f.Add(seed, "prod")
	}
	self := Identity{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	f.Fuzz(func(t *testing.T, value, installation string) {
		id, err := ParseTrackingID(value)
		if err == nil {
			if id.App == "" || id.Object.Kind == "" || id.Object.Name == "" {
				t.Fatalf("ParseTrackingID(%q) accepted %+v, which lacks an application, kind or name", value, id)
			}
			if id.String() != value {
				t.Fatalf("ParseTrackingID(%q) = %+v, which formats as %q", value, id, id.String())
			}
			again, err := ParseTrackingID(id.String())
			if err != nil || again != id {
				t.Fatalf("round trip of %q: %+v, %v", value, again, err)
			}
		}
		annotations := map[string]string{TrackingIDAnnotation: value}
		if installation != "" {
			annotations[InstallationIDAnnotation] = installation
		}
		labels := map[string]string{DefaultLabelKey: value}
		for _, method := range []argov1alpha1.TrackingMethod{argov1alpha1.TrackingMethodAnnotation, argov1alpha1.TrackingMethodLabel, argov1alpha1.TrackingMethodAnnotationAndLabel} {
			c := ClaimOf(annotations, labels, self, Settings{Method: method, InstallationID: "prod"}, cp)
			if c.Strong && (err != nil || id.Object != self || installation != "prod") {
				t.Fatalf("ClaimOf made a strong claim from %q (installation %q): %+v", value, installation, c)
			}
			if c.App != (AppRef{}) && (c.App.Namespace == "" || c.App.Name == "" || strings.Contains(c.App.Name, "_")) {
				t.Fatalf("ClaimOf claimed a malformed Application from %q: %+v", value, c.App)
			}
		}
		// The wake index reads the same metadata and must not panic either.
		_ = claimIndexer(cp, []string{DefaultLabelKey})(deployment("shop", "web", annotations, labels))
	})
}

// FuzzTrackingIDRoundTrip formats tracking ids from arbitrary parts: every
// id whose parts Argo CD could have written (no separator inside a part,
// an application, kind and name present) parses back to itself, and any
// other id is either refused or read as a canonical value; application
// instance names round-trip the same way.
func FuzzTrackingIDRoundTrip(f *testing.F) {
	f.Add("web", "apps", "Deployment", "shop", "web", "argocd")
	f.Add("team_web", "", "ConfigMap", "shop", "settings", "argocd")
	f.Add("web", "argoproj.io", "Rollout", "", "web", "")
	f.Add("a:b", "apps", "Deployment", "shop", "web", "argocd")
	f.Add("web", "a/b", "Deployment", "sh/op", "we/b", "argocd")
	f.Add("", "apps", "", "shop", "", "argocd")
	f.Fuzz(func(t *testing.T, app, group, kind, namespace, name, controlPlane string) {
		id := TrackingID{App: app, Object: Identity{Group: group, Kind: kind, Namespace: namespace, Name: name}}
		value := id.String()
		got, err := ParseTrackingID(value)
		wellFormed := app != "" && kind != "" && name != "" &&
			!strings.Contains(app, ":") && !strings.ContainsAny(group, ":/") && !strings.ContainsAny(kind, ":/") &&
			!strings.Contains(namespace, "/") && !strings.Contains(name, "/")
		switch {
		case wellFormed && (err != nil || got != id):
			t.Fatalf("%+v formats as %q, which parses to %+v, %v", id, value, got, err)
		case err == nil && got.String() != value:
			t.Fatalf("%q parses to %+v, which formats as %q", value, got, got.String())
		}

		ref := AppRef{Namespace: namespace, Name: name}
		instance := InstanceName(ref, controlPlane)
		back, err := ParseInstanceName(instance, controlPlane)
		validRef := namespace != "" && name != "" && !strings.Contains(namespace, "_") && !strings.Contains(name, "_")
		if validRef && (err != nil || back != ref) {
			t.Fatalf("InstanceName(%+v, %q) = %q, which parses to %+v, %v", ref, controlPlane, instance, back, err)
		}
		if err == nil && (back.Namespace == "" || back.Name == "" || strings.Contains(back.Name, "_")) {
			t.Fatalf("ParseInstanceName(%q) accepted %+v", instance, back)
		}
	})
}
