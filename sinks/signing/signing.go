// Package signing signs webhook deliveries the Standard Webhooks way (webhook-id,
// webhook-timestamp and webhook-signature headers, HMAC-SHA256) and verifies such signatures,
// for tests and for receivers written in Go.
package signing

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks scheme.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix marks a secret written in Standard Webhooks form: "whsec_" followed by the
// base64 encoding of the key.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a webhook-timestamp may be from the verifier's clock when
// Verify is given no tolerance; the value Standard Webhooks recommends.
const DefaultTolerance = 5 * time.Minute

// Verification errors.
var (
	ErrMissingHeaders = errors.New("signing: webhook-id, webhook-timestamp or webhook-signature header missing")
	ErrBadTimestamp   = errors.New("signing: webhook-timestamp is not a unix time in seconds")
	ErrTimestamp      = errors.New("signing: webhook-timestamp is outside the tolerance")
	ErrNoMatch        = errors.New("signing: no webhook-signature matches the body")
)

// Key returns the HMAC key a secret stands for.
//
// A secret beginning with "whsec_" is in Standard Webhooks form: the rest, with surrounding
// white space removed (a Secret value often ends with a newline), is the key in standard
// base64, padded or not. Any other secret is used as the key byte for byte. Key fails for an
// empty key and for a "whsec_" secret whose rest is not base64.
func Key(secret []byte) ([]byte, error) {
	s, ok := bytes.CutPrefix(secret, []byte(SecretPrefix))
	if !ok {
		if len(secret) == 0 {
			return nil, errors.New("signing: the secret is empty")
		}
		return secret, nil
	}
	enc := string(bytes.TrimSpace(s))
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(enc)
	}
	if err != nil {
		return nil, fmt.Errorf("signing: the part after %q is not base64", SecretPrefix)
	}
	if len(key) == 0 {
		return nil, errors.New("signing: the secret's key is empty")
	}
	return key, nil
}

// keyOrRaw is Key, falling back to the secret's bytes when Key fails. Callers are expected to
// have rejected such secrets with Key already (as the dispatcher does when it loads a policy).
func keyOrRaw(secret []byte) []byte {
	if k, err := Key(secret); err == nil {
		return k
	}
	return secret
}

// Sign returns the three Standard Webhooks headers for one delivery attempt of body: id as
// webhook-id (keep it across retries), ts in unix seconds as webhook-timestamp, and
// webhook-signature "v1,<base64 HMAC-SHA256 over id.timestamp.body>". secret is read as
// described at Key; validate it with Key first, as Sign uses an invalid "whsec_" secret as
// raw bytes rather than failing.
func Sign(secret []byte, id string, ts time.Time, body []byte) http.Header {
	unix := strconv.FormatInt(ts.Unix(), 10)
	h := make(http.Header, 3)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, unix)
	h.Set(HeaderSignature, "v1,"+base64.StdEncoding.EncodeToString(mac(keyOrRaw(secret), id, unix, body)))
	return h
}

func mac(key []byte, id, unix string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(unix))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks that header carries a valid v1 signature of body made with secret (read as
// described at Key) and a webhook-timestamp within tolerance of the current time
// (DefaultTolerance when tolerance is not positive). The webhook-signature header may list
// several space-separated signatures, as during a key rotation; one match is enough.
func Verify(secret []byte, header http.Header, body []byte, tolerance time.Duration) error {
	return VerifyAt(secret, header, body, tolerance, time.Now())
}

// VerifyAt is Verify with the current time given.
func VerifyAt(secret []byte, header http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	key, err := Key(secret)
	if err != nil {
		return err
	}
	id, unix := header.Get(HeaderID), header.Get(HeaderTimestamp)
	sigs := header.Values(HeaderSignature)
	if id == "" || unix == "" || len(sigs) == 0 {
		return ErrMissingHeaders
	}
	secs, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if d := now.Sub(time.Unix(secs, 0)); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	want := mac(key, id, unix, body)
	for _, value := range sigs {
		for _, sig := range strings.Fields(value) {
			version, enc, ok := strings.Cut(sig, ",")
			if !ok || version != "v1" {
				continue
			}
			got, err := base64.StdEncoding.DecodeString(enc)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrNoMatch
}
