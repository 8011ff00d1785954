package signing

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzKey: Key never panics; a key it returns is not empty, is the secret itself unless the
// secret has the "whsec_" prefix, and, written back in Standard Webhooks form, reads as the
// same key. Signing with the secret verifies, and a changed body does not. The seed corpus runs
// under a plain `go test`; fuzz with `go test ./sinks/signing -run '^$' -fuzz FuzzKey`.
func FuzzKey(f *testing.F) {
	for _, s := range []string{
		vectorSecret, "whsec_", "whsec_ ", "whsec_\n", "whsec_!!", "whsec_AAAA", "whsec_AAA", "whsec_AA==",
		"whsec_AA=", "whsec_ AAAA \n", "whsec_whsec_AAAA", "raw-secret", "", "w", "whsec", "WHSEC_AAAA",
		"whsec_QUJD\r\n", "whsec_-_-_", "whsec_AAAA====",
	} {
		f.Add([]byte(s), []byte(`{"a":1}`))
	}
	f.Fuzz(func(t *testing.T, secret, body []byte) {
		key, err := Key(secret)
		if err != nil {
			if key != nil {
				t.Fatalf("Key(%q) returned a key with the error %v", secret, err)
			}
			return
		}
		if len(key) == 0 {
			t.Fatalf("Key(%q) returned an empty key", secret)
		}
		if !bytes.HasPrefix(secret, []byte(SecretPrefix)) && !bytes.Equal(key, secret) {
			t.Fatalf("Key(%q) changed a raw secret", secret)
		}
		again, err := Key([]byte(SecretPrefix + base64.StdEncoding.EncodeToString(key)))
		if err != nil || !bytes.Equal(again, key) {
			t.Fatalf("Key of the re-encoded key of %q: %x, %v; want %x", secret, again, err, key)
		}
		now := time.Unix(1_700_000_000, 0)
		h := Sign(secret, "msg_1", now, body)
		if err := VerifyAt(secret, h, body, 0, now); err != nil {
			t.Fatalf("signature of %q does not verify: %v", secret, err)
		}
		if err := VerifyAt(secret, h, append(append([]byte(nil), body...), 'x'), 0, now); err == nil {
			t.Fatalf("signature of %q verifies a changed body", secret)
		}
	})
}

// FuzzVerify: Verify never panics and never accepts a delivery it did not sign, whatever the
// headers say.
func FuzzVerify(f *testing.F) {
	f.Add(vectorSecret, vectorID, "1614265330", vectorSignature, vectorBody)
	f.Add(vectorSecret, "", "", "", "")
	f.Add("whsec_!!", "id", "x", "v1,", "b")
	f.Add("raw", "id", "-9223372036854775808", "v1,AAAA v2,BBBB v1", "b")
	f.Fuzz(func(t *testing.T, secret, id, ts, sig, body string) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		now := time.Unix(1614265330, 0)
		err := VerifyAt([]byte(secret), h, []byte(body), time.Minute, now)
		if err != nil {
			return
		}
		// Accepted: one of the listed signatures must be the HMAC of exactly this id,
		// timestamp and body under the secret's key.
		key, kerr := Key([]byte(secret))
		if kerr != nil {
			t.Fatalf("accepted with an unusable secret %q", secret)
		}
		want := "v1," + base64.StdEncoding.EncodeToString(mac(key, id, h.Get(HeaderTimestamp), []byte(body)))
		found := false
		for _, v := range h.Values(HeaderSignature) {
			for _, f := range strings.Fields(v) {
				found = found || f == want
			}
		}
		if !found {
			t.Fatalf("accepted %q for %q, but the signature is %q", sig, body, want)
		}
	})
}
