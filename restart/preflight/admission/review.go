package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Webhook serves the preflight over HTTP: it reads an AdmissionReview and
// writes the answer of Handler. Serve it behind a Guard.
//
// It reads a review once, into a buffer it reuses, and decodes only the
// fields the answer starts from (kind, namespace, name, operation, the
// writer); the objects stay raw bytes of that buffer until the checker
// needs them, which for most writes (a namespace without a policy, a
// Secret nothing consumes) is never. controller-runtime's admission.Webhook
// copied the body while reading it, decoded the whole review twice and
// copied each object, and the checker then decoded the objects whole,
// data included, before it knew whether anything consumed them.
type Webhook struct {
	Handler *Handler
	// Auth proves the API server (nil: no caller is proven).
	Auth *ClientAuth
}

// bodies keeps read buffers of reviews for reuse: as many as reviews are
// read at once by default, each of at most keptBody bytes (a larger one,
// the review of a large object, goes to the collector), so at most 8 MiB
// stay. A sync.Pool lost them at every collection, which under a flood of
// writes came often: each review then allocated (and zeroed) its buffer.
var bodies = make(chan *bytes.Buffer, DefaultMaxInFlight)

const keptBody = 1 << 20

func getBody() *bytes.Buffer {
	select {
	case b := <-bodies:
		return b
	default:
		return new(bytes.Buffer)
	}
}

func putBody(b *bytes.Buffer) {
	if b.Cap() > keptBody {
		return
	}
	b.Reset()
	select {
	case bodies <- b:
	default:
	}
}

// review is the part of an AdmissionReview (admission.k8s.io/v1 or v1beta1,
// the same shape) the preflight reads.
type review struct {
	APIVersion string         `json:"apiVersion"`
	Request    *reviewRequest `json:"request"`
}

type reviewRequest struct {
	UID         types.UID                 `json:"uid"`
	Kind        metav1.GroupVersionKind   `json:"kind"`
	SubResource string                    `json:"subResource"`
	Namespace   string                    `json:"namespace"`
	Name        string                    `json:"name"`
	Operation   admissionv1.Operation     `json:"operation"`
	UserInfo    authenticationv1.UserInfo `json:"userInfo"`
	Object      rawJSON                   `json:"object"`
	OldObject   rawJSON                   `json:"oldObject"`
}

// rawJSON is a JSON value kept as the bytes of the body it came from, not
// copied: valid only while that body is.
type rawJSON []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawJSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = nil
		return nil
	}
	*r = b
	return nil
}

// ServeHTTP implements http.Handler.
func (wh *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		http.Error(w, "kick preflight: want Content-Type application/json", http.StatusBadRequest)
		return
	}
	buf := getBody()
	defer putBody(buf)
	if r.ContentLength > 0 && r.ContentLength <= MaxBody {
		// One allocation of the body's size (and room to see its end),
		// not a dozen doublings each copying what came before.
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		status := http.StatusBadRequest
		if errors.As(err, new(*http.MaxBytesError)) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "kick preflight: cannot read the review", status)
		return
	}
	var rv review
	if err := json.Unmarshal(buf.Bytes(), &rv); err != nil || rv.Request == nil {
		http.Error(w, "kick preflight: the body is not an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	resp := wh.Handler.answerFor(r.Context(), wh.Auth.APIServer(r), rv.Request)
	_ = resp.Complete(admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: rv.Request.UID}})
	out := admissionv1.AdmissionReview{Response: &resp.AdmissionResponse}
	out.APIVersion, out.Kind = rv.APIVersion, "AdmissionReview"
	if out.APIVersion == "" {
		out.APIVersion = admissionv1.SchemeGroupVersion.String()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
