package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kick-operator/kick/restart/observe"
	preflightadmission "github.com/kick-operator/kick/restart/preflight/admission"
	"github.com/kick-operator/kick/restart/preflight/certs"
	"github.com/kick-operator/kick/restart/workload"
)

// preflightOptions are the flags of the admission preflight (off by
// default).
type preflightOptions struct {
	enabled              bool
	bindAddress          string
	certDir              string
	certSecret           string
	certHosts            stringList
	certValidity         time.Duration
	webhookConfiguration string
	budget               time.Duration
	denyInDenyWindows    bool
	denyExempt           stringList
	clientCA             string
	clientNames          stringList
	maxInFlight          int

	exempt preflightadmission.Exemptions
}

func (p *preflightOptions) bind(fs *flag.FlagSet) {
	fs.BoolVar(&p.enabled, "preflight", false, "serve the advisory admission preflight: warnings on Secret and ConfigMap writes saying which workloads KICK will restart, and when")
	fs.StringVar(&p.bindAddress, "preflight-bind-address", ":9443", "address the preflight webhook (HTTPS) binds to")
	fs.StringVar(&p.certDir, "preflight-cert-dir", "", "directory holding tls.crt and tls.key for the preflight, e.g. from cert-manager, reloaded when they change (empty: the manager keeps its own CA and certificate in --preflight-cert-secret and patches the caBundle)")
	fs.StringVar(&p.certSecret, "preflight-cert-secret", "kick-preflight-tls", "Secret in --namespace holding the preflight's own CA and serving certificate")
	fs.Var(&p.certHosts, "preflight-cert-hosts", "comma-separated DNS names and IP addresses of the preflight serving certificate (default kick-preflight.NAMESPACE.svc and kick-preflight.NAMESPACE.svc.cluster.local)")
	fs.DurationVar(&p.certValidity, "preflight-cert-validity", 90*24*time.Hour, "lifetime of the preflight serving certificate (renewed after two thirds; its CA lives four times as long)")
	fs.StringVar(&p.webhookConfiguration, "preflight-webhook-configuration", "kick-preflight", "ValidatingWebhookConfiguration whose caBundle the manager keeps current")
	fs.DurationVar(&p.budget, "preflight-budget", preflightadmission.DefaultBudget, "time the preflight may take to answer before it warns that it cannot assess")
	fs.BoolVar(&p.denyInDenyWindows, "preflight-deny-in-deny-windows", false, "with --preflight: refuse updates of a Secret's data while a workload consuming it is inside a Deny window (a policy choice; off: the preflight only warns)")
	fs.Var(&p.denyExempt, "preflight-deny-exempt", "comma-separated writers deny mode never refuses: user:NAME, group:NAME, serviceaccount:NAMESPACE/NAME (e.g. cert-manager, external-secrets, the team rotating leaked credentials)")
	fs.StringVar(&p.clientCA, "preflight-client-ca", "", "PEM file of the CA that signs the API server's webhook client certificate; the webhook then requires that certificate (without it, the preflight cannot tell the API server from other callers and answers every review with an empty allow)")
	fs.Var(&p.clientNames, "preflight-client-names", "comma-separated names (common name or DNS name) the API server's client certificate may carry (empty: any certificate --preflight-client-ca verifies)")
	fs.IntVar(&p.maxInFlight, "preflight-max-in-flight", preflightadmission.DefaultMaxInFlight, "reviews the preflight answers at once, of which one namespace may hold a fair share; more are refused at once and the writes go ahead unassessed")
}

func (p *preflightOptions) validate(namespace string) []error {
	if !p.enabled {
		if p.denyInDenyWindows || p.clientCA != "" {
			return []error{errors.New("--preflight-deny-in-deny-windows and --preflight-client-ca need --preflight")}
		}
		return nil
	}
	var errs []error
	var err error
	if p.exempt, err = preflightadmission.ParseExemptions(p.denyExempt); err != nil {
		errs = append(errs, fmt.Errorf("--preflight-deny-exempt: %w", err))
	}
	if !p.exempt.Empty() && !p.denyInDenyWindows {
		errs = append(errs, errors.New("--preflight-deny-exempt needs --preflight-deny-in-deny-windows"))
	}
	if len(p.clientNames) > 0 && p.clientCA == "" {
		errs = append(errs, errors.New("--preflight-client-names needs --preflight-client-ca"))
	}
	if p.maxInFlight <= 0 {
		errs = append(errs, fmt.Errorf("--preflight-max-in-flight must be positive, got %d", p.maxInFlight))
	}
	if _, _, err := splitBind(p.bindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--preflight-bind-address: %w", err))
	}
	if p.certValidity < 3*time.Second {
		errs = append(errs, fmt.Errorf("--preflight-cert-validity must be at least 3s, got %s", p.certValidity))
	}
	if p.budget <= 0 || p.budget >= time.Second {
		errs = append(errs, fmt.Errorf("--preflight-budget must be between 0 and 1s (the webhook's timeout), got %s", p.budget))
	}
	if len(p.certHosts) == 0 {
		p.certHosts = stringList{"kick-preflight." + namespace + ".svc", "kick-preflight." + namespace + ".svc.cluster.local"}
	}
	return errs
}

func splitBind(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return "", 0, fmt.Errorf("port %q is not a port number", port)
	}
	return host, n, nil
}

// setupPreflight adds the preflight webhook server (and, without
// --preflight-cert-dir, its certificate rotator) to mgr.
func setupPreflight(ctx context.Context, mgr ctrl.Manager, opts options, active *integrations, kinds *workload.Registry, keys *observe.Fingerprinter) error {
	p := opts.preflight
	if !p.enabled {
		return nil
	}
	host, port, err := splitBind(p.bindAddress)
	if err != nil {
		return err
	}
	var auth *preflightadmission.ClientAuth
	if p.clientCA != "" {
		if auth, err = preflightadmission.LoadClientAuth(p.clientCA, p.clientNames); err != nil {
			return fmt.Errorf("--preflight-client-ca: %w", err)
		}
	} else {
		ctrl.Log.WithName("preflight").Info("no --preflight-client-ca: the preflight cannot tell the API server from other callers, so it answers every review with an empty allow; see docs/guides/preflight.md")
	}
	wo := webhook.Options{Host: host, Port: port, CertDir: p.certDir, TLSOpts: []func(*tls.Config){auth.Configure}}
	if p.certDir == "" {
		direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return err
		}
		rot := &certs.Rotator{Client: direct, Namespace: opts.namespace, SecretName: p.certSecret, WebhookConfiguration: p.webhookConfiguration,
			Hosts: p.certHosts, Validity: p.certValidity, Log: ctrl.Log.WithName("preflight-certs")}
		if err := mgr.Add(rot); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("preflight-certificate", rot.Ready); err != nil {
			return err
		}
		wo.TLSOpts = append(wo.TLSOpts, func(c *tls.Config) { c.GetCertificate = rot.GetCertificate })
	}
	var synced atomic.Bool
	go func() { synced.Store(mgr.GetCache().WaitForCacheSync(ctx)) }()
	srv := webhook.NewServer(wo)
	checker := &preflightadmission.Checker{
		Client:            mgr.GetClient(),
		GitOps:            active.gitops,
		Kinds:             kinds,
		CSI:               active.csi,
		Keys:              keys,
		Ready:             synced.Load,
		Budget:            p.budget,
		DenyInDenyWindows: p.denyInDenyWindows,
		ClusterLimit:      opts.maxRestarts,
	}
	// The same bound twice: the guard counts every review from its first
	// byte, the shares charge the ones being answered to their namespaces.
	wh := &preflightadmission.Webhook{Handler: &preflightadmission.Handler{Checker: checker, Exempt: p.exempt,
		Shares: preflightadmission.NewShares(p.maxInFlight)}, Auth: auth}
	srv.Register(preflightadmission.Path, preflightadmission.NewGuard(wh, p.maxInFlight))
	return mgr.Add(srv)
}
