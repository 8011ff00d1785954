package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/preflight"
)

// Path is where the manager serves the preflight.
const Path = "/preflight"

// Handler answers the preflight's reviews. It always allows, except in deny
// mode. Serve it through a Webhook behind a Guard.
type Handler struct {
	Checker *Checker
	// Exempt are the writers deny mode never refuses.
	Exempt Exemptions
	// Shares charges each review to its namespace; a namespace over its
	// share is answered "cannot assess" at once. Nil charges nothing.
	Shares *Shares
}

// busy is what a write hears when its namespace holds its share of the
// webhook: the write goes ahead, unassessed.
const busy = "too many writes of this namespace are being assessed at once"

// Handle implements admission.Handler, for a review controller-runtime
// decoded; the manager serves the preflight through Webhook.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	return h.answerFor(ctx, fromAPIServer(ctx), &reviewRequest{UID: req.UID, Kind: req.Kind, SubResource: req.SubResource,
		Namespace: req.Namespace, Name: req.Name, Operation: req.Operation, UserInfo: req.UserInfo,
		Object: rawJSON(req.Object.Raw), OldObject: rawJSON(req.OldObject.Raw)})
}

// answerFor answers req; apiServer tells whether the caller is proven to be
// the API server.
func (h *Handler) answerFor(ctx context.Context, apiServer bool, req *reviewRequest) admission.Response {
	if !apiServer {
		// Not proven to be the API server: the same empty allow for
		// every review, read no further.
		return admission.Allowed("")
	}
	if req.SubResource != "" || req.Kind.Group != "" || req.Kind.Version != "v1" {
		return admission.Allowed("")
	}
	w := Write{Operation: preflight.Operation(req.Operation), Namespace: req.Namespace, Name: req.Name,
		Object: req.Object, Old: req.OldObject}
	switch req.Kind.Kind {
	case "Secret":
		w.Kind = discovery.KindSecret
	case "ConfigMap":
		w.Kind = discovery.KindConfigMap
	default:
		return admission.Allowed("")
	}
	if req.Operation == admissionv1.Delete {
		w.Object, w.Old = req.OldObject, nil
	}
	if h.Shares != nil {
		release, ok := h.Shares.Take(req.Namespace)
		if !ok {
			return answer(preflight.Compose(preflight.Input{CannotAssess: busy}))
		}
		defer release()
	}
	// userInfo is believed here: the caller is the API server.
	w.Exempt = h.Exempt.Match(req.UserInfo)
	return answer(h.Checker.Check(ctx, w))
}

// answer is the response carrying a.
func answer(a preflight.Answer) admission.Response {
	resp := admission.Allowed("")
	if a.Denied {
		resp = admission.Denied(a.Message)
	}
	resp.Warnings = a.Warnings
	resp.AuditAnnotations = a.Audit
	return resp
}
