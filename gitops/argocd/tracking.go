package argocd

import (
	"fmt"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// Annotations and the default label Argo CD uses to mark what it applied.
const (
	TrackingIDAnnotation     = "argocd.argoproj.io/tracking-id"
	InstallationIDAnnotation = "argocd.argoproj.io/installation-id"
	DefaultLabelKey          = "app.kubernetes.io/instance"
)

// Identity names one Kubernetes object the way a tracking id does.
type Identity struct {
	Group, Kind, Namespace, Name string
}

func (i Identity) String() string {
	return i.Group + "/" + i.Kind + ":" + i.Namespace + "/" + i.Name
}

// AppRef names an Application.
type AppRef struct {
	Namespace, Name string
}

func (r AppRef) String() string { return r.Namespace + "/" + r.Name }

// TrackingID is a parsed argocd.argoproj.io/tracking-id value,
// "<app>:<group>/<kind>:<namespace>/<name>".
type TrackingID struct {
	// App is the application instance name: "<name>", or
	// "<namespace>_<name>" for an Application outside the control-plane
	// namespace.
	App    string
	Object Identity
}

// String formats the tracking id as Argo CD writes it. For every id
// ParseTrackingID accepts, String gives back the value it parsed.
func (id TrackingID) String() string {
	return id.App + ":" + id.Object.String()
}

// ParseTrackingID parses a tracking id. It is stricter than Argo CD's own
// parser: every part except the group (empty for the core group) must be
// present, so a truncated or hand-edited value is rejected rather than read
// as some other object.
func ParseTrackingID(value string) (TrackingID, error) {
	parts := strings.SplitN(value, ":", 3)
	if len(parts) != 3 {
		return TrackingID{}, fmt.Errorf("tracking id %q is not <application>:<group>/<kind>:<namespace>/<name>", value)
	}
	gk := strings.Split(parts[1], "/")
	nn := strings.Split(parts[2], "/")
	if len(gk) != 2 || len(nn) != 2 {
		return TrackingID{}, fmt.Errorf("tracking id %q is not <application>:<group>/<kind>:<namespace>/<name>", value)
	}
	id := TrackingID{App: parts[0], Object: Identity{Group: gk[0], Kind: gk[1], Namespace: nn[0], Name: nn[1]}}
	switch {
	case id.App == "":
		return TrackingID{}, fmt.Errorf("tracking id %q names no application", value)
	case id.Object.Kind == "" || id.Object.Name == "":
		return TrackingID{}, fmt.Errorf("tracking id %q names no object kind or name", value)
	}
	return id, nil
}

// ParseInstanceName turns an application instance name into the
// Application it names: "<namespace>_<name>", or "<name>" in the
// control-plane namespace.
func ParseInstanceName(instance, controlPlane string) (AppRef, error) {
	ns, name, found := strings.Cut(instance, "_")
	if !found {
		ns, name = controlPlane, instance
	}
	if ns == "" || name == "" || strings.Contains(name, "_") {
		return AppRef{}, fmt.Errorf("%q is not an application name (<name> or <namespace>_<name>)", instance)
	}
	return AppRef{Namespace: ns, Name: name}, nil
}

// InstanceName is the application instance name Argo CD writes for app.
func InstanceName(app AppRef, controlPlane string) string {
	if app.Namespace == controlPlane {
		return app.Name
	}
	return app.Namespace + "_" + app.Name
}

// Settings are the Argo CD settings that decide how resources are tracked.
type Settings struct {
	Method         argov1alpha1.TrackingMethod
	InstallationID string
	LabelKey       string
}

func (s Settings) usesAnnotation() bool {
	return s.Method != argov1alpha1.TrackingMethodLabel
}

func (s Settings) usesLabel() bool {
	return s.Method == argov1alpha1.TrackingMethodLabel || s.Method == argov1alpha1.TrackingMethodAnnotationAndLabel
}

// Claim is what a workload's own metadata says about its Application.
type Claim struct {
	// App is the claimed Application; zero when there is no usable claim.
	App AppRef
	// Strong is true for a self-referencing tracking annotation: its
	// Application must exist, and the status.resources fallback is not
	// consulted. A label only names an application and is weaker.
	Strong bool
	// Notes explain claims that were present but rejected.
	Notes []string
}

// ClaimOf reads the tracking metadata of the workload self under the
// settings: the tracking annotation (when the method uses it), checked
// against the installation id and against self, then the instance label
// (when the method uses it and the annotation gave nothing).
func ClaimOf(annotations, labels map[string]string, self Identity, s Settings, controlPlane string) Claim {
	var c Claim
	if s.usesAnnotation() {
		if value, ok := annotations[TrackingIDAnnotation]; ok {
			if app, note := annotationClaim(value, annotations[InstallationIDAnnotation], self, s.InstallationID, controlPlane); note != "" {
				c.Notes = append(c.Notes, note)
			} else {
				c.App, c.Strong = app, true
				return c
			}
		}
	}
	if s.usesLabel() {
		key := s.LabelKey
		if key == "" {
			key = DefaultLabelKey
		}
		if value, ok := labels[key]; ok {
			app, err := ParseInstanceName(value, controlPlane)
			if err != nil {
				c.Notes = append(c.Notes, fmt.Sprintf("label %s: %v", key, err))
			} else {
				c.App = app
			}
		}
	}
	return c
}

// annotationClaim validates one tracking annotation; a non-empty note says
// why it cannot be used.
func annotationClaim(value, installation string, self Identity, wantInstallation, controlPlane string) (AppRef, string) {
	if installation != wantInstallation {
		switch {
		case wantInstallation == "":
			return AppRef{}, fmt.Sprintf("the tracking annotation carries installation id %q, but this Argo CD has none, so another Argo CD installation applied it", installation)
		case installation == "":
			return AppRef{}, fmt.Sprintf("the tracking annotation carries no installation id, but this Argo CD's is %q, so another Argo CD installation applied it", wantInstallation)
		default:
			return AppRef{}, fmt.Sprintf("the tracking annotation carries installation id %q, but this Argo CD's is %q, so another Argo CD installation applied it", installation, wantInstallation)
		}
	}
	id, err := ParseTrackingID(value)
	if err != nil {
		return AppRef{}, "ignored the tracking annotation: " + err.Error()
	}
	if id.Object != self {
		return AppRef{}, fmt.Sprintf("ignored the tracking annotation %q: it describes %s, not this workload (%s); it was probably copied from another object", value, id.Object, self)
	}
	app, err := ParseInstanceName(id.App, controlPlane)
	if err != nil {
		return AppRef{}, "ignored the tracking annotation: " + err.Error()
	}
	return app, ""
}
