package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// floodReviews are the reviews of the soak's attacks (docs/operations/security.md): an update
// of a 256 KiB Secret nothing consumes, in a namespace with a policy (the flood), and an
// update of a consumed Secret's 1 MB of labels, its data unchanged (the label churn).
func floodReviews(b *testing.B) map[string][]byte {
	blob := bytes.Repeat([]byte{0xa5}, 256<<10)
	flood := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "flood-0", UID: "uid-flood", ResourceVersion: "9"},
		Data: map[string][]byte{"blob": blob}}
	floodOld := flood.DeepCopy()
	floodOld.Data = map[string][]byte{"blob": bytes.Repeat([]byte{0x5a}, 256<<10)}
	labels := func(round int) map[string]string {
		out := map[string]string{}
		for i, n := 0, 0; n < 1_000_000; i++ {
			k, v := fmt.Sprintf("example.com/l-%05d", i), fmt.Sprintf("r%06d-%s", round, strings.Repeat("v", 54))
			out[k] = v
			n += len(k) + len(v)
		}
		return out
	}
	churn := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "s-04711", UID: "uid-s-04711", ResourceVersion: "9", Labels: labels(1)},
		Data: map[string][]byte{"k": []byte("v")}}
	churnOld := churn.DeepCopy()
	churnOld.Labels = labels(0)
	body := func(s, old *corev1.Secret) []byte {
		return reviewBody(b, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: types.UID("review-1"), Operation: admissionv1.Update,
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Secret"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "secrets"},
			Namespace: s.Namespace, Name: s.Name, UserInfo: authenticationv1.UserInfo{Username: "flooder"},
			Object: runtime.RawExtension{Raw: mustJSON(b, s)}, OldObject: runtime.RawExtension{Raw: mustJSON(b, old)}}})
	}
	return map[string][]byte{"flood": body(flood, floodOld), "label-churn": body(churn, churnOld)}
}

// formerDecoding replays what the preflight decoded before it read only what an answer
// needs: the object whole, data included, before it looked for consumers, and the old object
// whole when there were some.
func formerDecoding(next admission.Handler, consumed bool) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		var obj, old corev1.Secret
		if json.Unmarshal(req.Object.Raw, &obj) != nil || consumed && json.Unmarshal(req.OldObject.Raw, &old) != nil {
			return admission.Allowed("")
		}
		return next.Handle(ctx, req)
	})
}

// BenchmarkReview serves the soak's attack reviews as the API server sends them, through
// controller-runtime's admission.Webhook with the former decoding ("controller-runtime") and
// through Webhook ("webhook"); the caller is proven to be the API server in both.
func BenchmarkReview(b *testing.B) {
	c := benchChecker(b)
	h := &Handler{Checker: c}
	caller := &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"}}
	auth := &ClientAuth{CAs: x509.NewCertPool()}
	// What each review is answered, either way.
	want := map[string]string{"flood": `"allowed":true,"status":{"metadata":{},"code":200}}`, "label-churn": "kick: no restart: data unchanged"}
	for name, body := range floodReviews(b) {
		consumed := name == "label-churn"
		for _, v := range []struct {
			name    string
			handler http.Handler
		}{
			{"controller-runtime", &admission.Webhook{Handler: formerDecoding(h, consumed),
				WithContextFunc: func(ctx context.Context, _ *http.Request) context.Context { return withAPIServer(ctx) }}},
			{"webhook", &Webhook{Handler: h, Auth: auth}},
		} {
			b.Run(name+"/"+v.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{caller}}}
					w := httptest.NewRecorder()
					v.handler.ServeHTTP(w, r)
					if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"uid":"review-1"`) || !strings.Contains(w.Body.String(), want[name]) {
						b.Fatalf("answer %d %s", w.Code, w.Body.String())
					}
				}
			})
		}
	}
}
