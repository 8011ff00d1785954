package admission

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kick-operator/kick/restart/preflight"
)

// Path is where the manager serves the preflight.
const Path = "/preflight"

// Handler is the admission.Handler of the preflight. It always allows,
// except in deny mode.
type Handler struct {
	Checker *Checker
}

// Handle implements admission.Handler.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.SubResource != "" || req.Kind.Group != "" || req.Kind.Version != "v1" {
		return admission.Allowed("")
	}
	op := preflight.Operation(req.Operation)
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	var obj client.Object
	switch req.Kind.Kind {
	case "Secret":
		obj = &corev1.Secret{}
	case "ConfigMap":
		obj = &corev1.ConfigMap{}
	default:
		return admission.Allowed("")
	}
	if len(raw) == 0 || json.Unmarshal(raw, obj) != nil {
		return admission.Allowed("").WithWarnings(preflight.Prefix + "cannot assess (unreadable object)")
	}
	a := h.Checker.Check(ctx, op, obj)
	resp := admission.Allowed("")
	if a.Denied {
		resp = admission.Denied(a.Message)
	}
	resp.Warnings = a.Warnings
	resp.AuditAnnotations = a.Audit
	return resp
}
