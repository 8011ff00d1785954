package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
	"time"
)

// The Standard Webhooks reference test vector, as published with the specification's
// reference libraries.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignPublishedVector(t *testing.T) {
	h := Sign([]byte(vectorSecret), vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody))
	if got := h.Get(HeaderSignature); got != vectorSignature {
		t.Errorf("signature = %q, want %q", got, vectorSignature)
	}
	if got := h.Get(HeaderID); got != vectorID {
		t.Errorf("id = %q", got)
	}
	if got := h.Get(HeaderTimestamp); got != "1614265330" {
		t.Errorf("timestamp = %q", got)
	}
	// A trailing newline, as a Secret value read from a file often has, is ignored.
	h = Sign([]byte(vectorSecret+"\n"), vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody))
	if got := h.Get(HeaderSignature); got != vectorSignature {
		t.Errorf("with newline: signature = %q, want %q", got, vectorSignature)
	}
	if err := VerifyAt([]byte(vectorSecret), h, []byte(vectorBody), time.Minute, time.Unix(vectorTimestamp+30, 0)); err != nil {
		t.Errorf("verify vector: %v", err)
	}
}

// independent computes the signature straight from the scheme's definition.
func independent(key []byte, id string, unix string, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + unix + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestSignMatchesIndependentComputation(t *testing.T) {
	rawKey := []byte{0, 1, 2, 0xfe, 0xff, 'k', 'e', 'y'}
	ts := time.Date(2026, 3, 1, 12, 0, 0, 987654321, time.UTC) // sub-second part is dropped
	cases := []struct {
		name   string
		secret []byte
		key    []byte
	}{
		{"raw bytes", []byte("plain shared secret"), []byte("plain shared secret")},
		{"whsec padded", []byte("whsec_" + base64.StdEncoding.EncodeToString(rawKey)), rawKey},
		{"whsec unpadded", []byte("whsec_" + base64.RawStdEncoding.EncodeToString(rawKey)), rawKey},
		{"raw bytes with newline kept", []byte("secret\n"), []byte("secret\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"phase":"Succeeded"}`
			h := Sign(tc.secret, "evt-1", ts, []byte(body))
			want := independent(tc.key, "evt-1", "1772366400", body)
			if got := h.Get(HeaderSignature); got != want {
				t.Errorf("signature = %q, want %q", got, want)
			}
			if got := h.Get(HeaderTimestamp); got != "1772366400" {
				t.Errorf("timestamp = %q", got)
			}
			if len(h) != 3 {
				t.Errorf("headers = %v, want exactly three", h)
			}
		})
	}
}

func TestKey(t *testing.T) {
	cases := []struct {
		secret  string
		wantErr bool
	}{
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},
		{"whsec_not base64!", true},
		{"whsec_", true},
		{"", true},
		{"anything else", false},
	}
	for _, tc := range cases {
		_, err := Key([]byte(tc.secret))
		if (err != nil) != tc.wantErr {
			t.Errorf("Key(%q) error = %v, want error %v", tc.secret, err, tc.wantErr)
		}
	}
}

func TestVerify(t *testing.T) {
	secret := []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"namespace":"team-a","phase":"Failed"}`)
	signed := Sign(secret, "id-42", now, body)

	with := func(mut func(h http.Header)) http.Header {
		h := signed.Clone()
		mut(h)
		return h
	}
	cases := []struct {
		name   string
		secret []byte
		header http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"round trip", secret, signed, body, now, nil},
		{"clock ahead within tolerance", secret, signed, body, now.Add(4 * time.Minute), nil},
		{"clock behind within tolerance", secret, signed, body, now.Add(-4 * time.Minute), nil},
		{"too old", secret, signed, body, now.Add(6 * time.Minute), ErrTimestamp},
		{"from the future", secret, signed, body, now.Add(-6 * time.Minute), ErrTimestamp},
		{"tampered body", secret, signed, []byte(`{"namespace":"team-a","phase":"Succeeded"}`), now, ErrNoMatch},
		{"other secret", []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("another key"))), signed, body, now, ErrNoMatch},
		{"tampered id", secret, with(func(h http.Header) { h.Set(HeaderID, "id-43") }), body, now, ErrNoMatch},
		{"tampered timestamp", secret, with(func(h http.Header) { h.Set(HeaderTimestamp, "1800000001") }), body, now, ErrNoMatch},
		{"bad timestamp", secret, with(func(h http.Header) { h.Set(HeaderTimestamp, "soon") }), body, now, ErrBadTimestamp},
		{"missing signature", secret, with(func(h http.Header) { h.Del(HeaderSignature) }), body, now, ErrMissingHeaders},
		{"missing id", secret, with(func(h http.Header) { h.Del(HeaderID) }), body, now, ErrMissingHeaders},
		{"rotation list", secret, with(func(h http.Header) {
			h.Set(HeaderSignature, "v1,bm9wZQ== v1a,ignored "+signed.Get(HeaderSignature))
		}), body, now, nil},
		{"wrong version", secret, with(func(h http.Header) {
			h.Set(HeaderSignature, "v2,"+signed.Get(HeaderSignature)[3:])
		}), body, now, ErrNoMatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyAt(tc.secret, tc.header, tc.body, 0, tc.now)
			if !errors.Is(err, tc.want) {
				t.Errorf("VerifyAt = %v, want %v", err, tc.want)
			}
		})
	}

	// Verify uses the real clock: a fresh signature passes.
	fresh := Sign(secret, "id-1", time.Now(), body)
	if err := Verify(secret, fresh, body, time.Minute); err != nil {
		t.Errorf("Verify fresh: %v", err)
	}
}
