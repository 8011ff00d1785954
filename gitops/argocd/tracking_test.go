package argocd

import (
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

func TestParseTrackingID(t *testing.T) {
	cases := []struct {
		in      string
		want    TrackingID
		wantErr string
	}{
		{in: "web:apps/Deployment:shop/web", want: TrackingID{App: "web", Object: Identity{"apps", "Deployment", "shop", "web"}}},
		{in: "team_web:apps/Deployment:shop/web", want: TrackingID{App: "team_web", Object: Identity{"apps", "Deployment", "shop", "web"}}},
		{in: "cm:/ConfigMap:shop/settings", want: TrackingID{App: "cm", Object: Identity{"", "ConfigMap", "shop", "settings"}}},
		{in: "ns:/Namespace:/shop", want: TrackingID{App: "ns", Object: Identity{"", "Namespace", "", "shop"}}},
		{in: "", wantErr: "is not"},
		{in: "web", wantErr: "is not"},
		{in: "web:apps/Deployment", wantErr: "is not"},
		{in: "web:apps:shop/web", wantErr: "is not"},
		{in: "web:apps/Deployment:shop", wantErr: "is not"},
		{in: "web:apps/Deployment:shop/web/extra", wantErr: "is not"},
		{in: "web:a/b/c:shop/web", wantErr: "is not"},
		{in: ":apps/Deployment:shop/web", wantErr: "names no application"},
		{in: "web:apps/:shop/web", wantErr: "names no object"},
		{in: "web:apps/Deployment:shop/", wantErr: "names no object"},
	}
	for _, c := range cases {
		got, err := ParseTrackingID(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseTrackingID(%q) error = %v, want one containing %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseTrackingID(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestParseInstanceName(t *testing.T) {
	cases := []struct {
		in   string
		want AppRef
		bad  bool
	}{
		{in: "web", want: AppRef{"argocd", "web"}},
		{in: "team_web", want: AppRef{"team", "web"}},
		{in: "", bad: true},
		{in: "_web", bad: true},
		{in: "team_", bad: true},
		{in: "a_b_c", bad: true},
	}
	for _, c := range cases {
		got, err := ParseInstanceName(c.in, "argocd")
		if c.bad != (err != nil) || (!c.bad && got != c.want) {
			t.Errorf("ParseInstanceName(%q) = %+v, %v", c.in, got, err)
		}
	}
	if got := InstanceName(AppRef{"argocd", "web"}, "argocd"); got != "web" {
		t.Errorf("InstanceName in the control plane = %q", got)
	}
	if got := InstanceName(AppRef{"team", "web"}, "argocd"); got != "team_web" {
		t.Errorf("InstanceName elsewhere = %q", got)
	}
}

func TestClaimOf(t *testing.T) {
	self := Identity{"apps", "Deployment", "shop", "web"}
	annotation := Settings{Method: argov1alpha1.TrackingMethodAnnotation, LabelKey: DefaultLabelKey}
	label := Settings{Method: argov1alpha1.TrackingMethodLabel, LabelKey: DefaultLabelKey}
	both := Settings{Method: argov1alpha1.TrackingMethodAnnotationAndLabel, LabelKey: "example.com/app"}
	withID := annotation
	withID.InstallationID = "prod"
	tracked := map[string]string{TrackingIDAnnotation: "web:apps/Deployment:shop/web"}

	cases := []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		settings    Settings
		want        AppRef
		strong      bool
		note        string
	}{
		{name: "annotation", annotations: tracked, settings: annotation, want: AppRef{"argocd", "web"}, strong: true},
		{name: "annotation other namespace", annotations: map[string]string{TrackingIDAnnotation: "team_web:apps/Deployment:shop/web"},
			settings: annotation, want: AppRef{"team", "web"}, strong: true},
		{name: "no metadata", settings: annotation},
		{name: "annotation method ignores label", labels: map[string]string{DefaultLabelKey: "web"}, settings: annotation},
		{name: "copied annotation", annotations: map[string]string{TrackingIDAnnotation: "api:apps/Deployment:shop/api"},
			settings: annotation, note: "not this workload"},
		{name: "other kind", annotations: map[string]string{TrackingIDAnnotation: "web:apps/StatefulSet:shop/web"},
			settings: annotation, note: "not this workload"},
		{name: "other namespace", annotations: map[string]string{TrackingIDAnnotation: "web:apps/Deployment:other/web"},
			settings: annotation, note: "not this workload"},
		{name: "malformed", annotations: map[string]string{TrackingIDAnnotation: "web:Deployment:web"},
			settings: annotation, note: "is not <application>"},
		{name: "bad application part", annotations: map[string]string{TrackingIDAnnotation: "a_b_c:apps/Deployment:shop/web"},
			settings: annotation, note: "not an application name"},
		{name: "installation id matches", annotations: map[string]string{TrackingIDAnnotation: "web:apps/Deployment:shop/web", InstallationIDAnnotation: "prod"},
			settings: withID, want: AppRef{"argocd", "web"}, strong: true},
		{name: "installation id differs", annotations: map[string]string{TrackingIDAnnotation: "web:apps/Deployment:shop/web", InstallationIDAnnotation: "staging"},
			settings: withID, note: `installation id "staging", but this Argo CD's is "prod"`},
		{name: "installation id missing", annotations: tracked, settings: withID, note: "carries no installation id"},
		{name: "installation id unexpected", annotations: map[string]string{TrackingIDAnnotation: "web:apps/Deployment:shop/web", InstallationIDAnnotation: "staging"},
			settings: annotation, note: "this Argo CD has none"},
		{name: "label", labels: map[string]string{DefaultLabelKey: "web"}, settings: label, want: AppRef{"argocd", "web"}},
		{name: "label other namespace", labels: map[string]string{DefaultLabelKey: "team_web"}, settings: label, want: AppRef{"team", "web"}},
		{name: "label method ignores annotation", annotations: tracked, settings: label},
		{name: "bad label", labels: map[string]string{DefaultLabelKey: "a_b_c"}, settings: label, note: "not an application name"},
		{name: "both prefers annotation", annotations: tracked, labels: map[string]string{"example.com/app": "other"},
			settings: both, want: AppRef{"argocd", "web"}, strong: true},
		{name: "both falls back to custom label", labels: map[string]string{"example.com/app": "web", DefaultLabelKey: "nope"},
			settings: both, want: AppRef{"argocd", "web"}},
		{name: "both ignores default label when key is custom", labels: map[string]string{DefaultLabelKey: "web"}, settings: both},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ClaimOf(c.annotations, c.labels, self, c.settings, "argocd")
			if got.App != c.want || got.Strong != c.strong {
				t.Fatalf("claim = %+v, want app %v strong %v", got, c.want, c.strong)
			}
			notes := strings.Join(got.Notes, "; ")
			if c.note == "" && notes != "" {
				t.Fatalf("unexpected notes: %s", notes)
			}
			if !strings.Contains(notes, c.note) {
				t.Fatalf("notes %q do not mention %q", notes, c.note)
			}
		})
	}
}
