package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// The rule: an answer that says anything about a namespace (its consumers,
// policies, windows, GitOps owners) goes only to a caller proven to be the
// API server, that is one that presented a client certificate which the
// configured client CA verified (and, when names are configured, that
// carries one of them). Every other caller gets an empty allow, the same for
// every review, which says nothing. The review's userInfo is believed, for
// the deny-mode exemptions, only from the proven API server; the empty
// allow never denies, so a forged userInfo gains nothing either.

// ClientAuth verifies the API server's client certificate.
type ClientAuth struct {
	// CAs verify the client certificate; nil means no caller is ever
	// proven to be the API server.
	CAs *x509.CertPool
	// Names, when set, are the only certificate names (common name or DNS
	// name) accepted.
	Names []string
}

// LoadClientAuth reads the PEM CA bundle at caFile.
func LoadClientAuth(caFile string, names []string) (*ClientAuth, error) {
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read the client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("%s holds no PEM certificate; give the CA that signs the API server's webhook client certificate", caFile)
	}
	return &ClientAuth{CAs: pool, Names: names}, nil
}

// Configure makes the TLS server require a client certificate that the CAs
// verify: a caller without one never reaches the handler.
func (a *ClientAuth) Configure(c *tls.Config) {
	if a == nil || a.CAs == nil {
		return
	}
	c.ClientCAs = a.CAs
	c.ClientAuth = tls.RequireAndVerifyClientCert
}

// APIServer reports whether r comes from the API server under the rule
// above.
func (a *ClientAuth) APIServer(r *http.Request) bool {
	if a == nil || a.CAs == nil || r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return false
	}
	if len(a.Names) == 0 {
		return true
	}
	leaf := r.TLS.VerifiedChains[0][0]
	for _, n := range append([]string{leaf.Subject.CommonName}, leaf.DNSNames...) {
		if slices.Contains(a.Names, n) {
			return true
		}
	}
	return false
}

type apiServerKey struct{}

// WithCaller is the admission.Webhook's WithContextFunc: it records in the
// context whether the request comes from the API server.
func (a *ClientAuth) WithCaller(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, apiServerKey{}, a.APIServer(r))
}

// fromAPIServer reports what WithCaller recorded.
func fromAPIServer(ctx context.Context) bool {
	ok, _ := ctx.Value(apiServerKey{}).(bool)
	return ok
}

// Exemptions are the writers deny mode lets through: "user:NAME",
// "group:NAME" and "serviceaccount:NAMESPACE/NAME".
type Exemptions struct {
	users, groups []string
}

// ParseExemptions parses the entries, naming the first bad one.
func ParseExemptions(entries []string) (Exemptions, error) {
	var e Exemptions
	for _, entry := range entries {
		kind, name, ok := strings.Cut(entry, ":")
		if !ok || name == "" {
			return e, fmt.Errorf("%q: want user:NAME, group:NAME or serviceaccount:NAMESPACE/NAME", entry)
		}
		switch kind {
		case "user":
			e.users = append(e.users, name)
		case "group":
			e.groups = append(e.groups, name)
		case "serviceaccount":
			ns, sa, ok := strings.Cut(name, "/")
			if !ok || ns == "" || sa == "" || strings.Contains(sa, "/") {
				return e, fmt.Errorf("%q: want serviceaccount:NAMESPACE/NAME", entry)
			}
			e.users = append(e.users, "system:serviceaccount:"+ns+":"+sa)
		default:
			return e, fmt.Errorf("%q: unknown kind %q; want user, group or serviceaccount", entry, kind)
		}
	}
	return e, nil
}

// Empty reports whether no writer is exempt.
func (e Exemptions) Empty() bool { return len(e.users) == 0 && len(e.groups) == 0 }

// Match reports whether u is exempt.
func (e Exemptions) Match(u authenticationv1.UserInfo) bool {
	if slices.Contains(e.users, u.Username) {
		return true
	}
	for _, g := range u.Groups {
		if slices.Contains(e.groups, g) {
			return true
		}
	}
	return false
}
