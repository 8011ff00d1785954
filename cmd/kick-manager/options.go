package main

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/request"
)

// options are the manager's command-line settings. Defaults follow the
// configuration reference; the Helm chart and kustomize manifests set them.
type options struct {
	metricsAddr        string
	metricsSecure      bool
	metricsCertDir     string
	probeAddr          string
	pprofAddr          string
	leaderElect        bool
	leaseDuration      time.Duration
	renewDeadline      time.Duration
	retryPeriod        time.Duration
	namespace          string
	maxConcurrent      int
	maxFullReads       int
	gcPercent          int
	releaseIdleMemory  bool
	kubeAPIQPS         float64
	kubeAPIBurst       int
	kubeAPICompression bool
	rolloutTimeout     time.Duration
	maxRestarts        int
	wavePoll           time.Duration
	requestRetention   time.Duration
	replayWindow       time.Duration
	enableArgoCD       bool
	enableFlux         bool
	enableKargo        bool
	enableArgoRollouts bool
	enableCSI          bool
	argoCDNamespace    string
	argoCDAppNSs       stringList
	// Used when argocd-cm does not say (application.resourceTrackingMethod,
	// installationID, application.instanceLabelKey).
	argoCDTrackingMethod string
	argoCDInstallationID string
	argoCDLabelKey       string
	webhookDenyCIDRs     prefixList
	webhookAllowCIDRs    prefixList
	timelineAddr         string
	timelineCertDir      string
	timelineHistorySize  int
	timelineHistoryAge   time.Duration
	otlpEndpoint         string
	otlpInsecure         bool
	preflight            preflightOptions
}

// defaultGCPercent is --gc-percent's default: the heap is mostly caches that
// change slowly and the manager is idle most of the time, so collecting at 35%
// growth keeps its memory small for little CPU. The collector's CPU grows
// with what the manager allocates; since reconcile loggers encode their
// context only when they write (package lazylog), a burst of restarts costs
// at 35% what it cost at 50% before, for about 2.5 MB less at the peak. 25%
// kept about 1.5 MB less again but cost 20-40% more CPU in a burst, which on a
// small control plane competes with the API server (see the performance guide).
const defaultGCPercent = 35

func defaultNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "kick-system"
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address the /metrics endpoint binds to; 0 disables it")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", false, "serve /metrics over HTTPS and only to callers whose bearer token the API server authenticates (TokenReview) and allows to get the /metrics URL (SubjectAccessReview); the manifests turn it on")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "with --metrics-secure: directory holding tls.crt and tls.key for the /metrics endpoint, reloaded when they change (empty: a self-signed certificate made at start-up)")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz endpoints bind to")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "address a Go pprof endpoint binds to, for profiling (empty: off)")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader so only one replica acts (the manifests turn it on)")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "with --leader-elect: how long the other replicas wait after the leader's last renewal before taking over; a leader that crashed is replaced after at most this long")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "with --leader-elect: how long the leader keeps trying to renew before it gives up leading and exits; shorter than the lease duration")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "with --leader-elect: how often replicas try to acquire or renew the lease")
	fs.StringVar(&o.namespace, "namespace", defaultNamespace(), "the manager's own namespace: leader-election lease and fingerprint key Secret live here (default $POD_NAMESPACE, else kick-system)")
	fs.IntVar(&o.maxConcurrent, "max-concurrent-reconciles", 32, "workers of each controller on the restart path (sources, CSI mounts, requests); the KickPolicy status and NotificationPolicy controllers use 2")
	fs.IntVar(&o.maxFullReads, "max-full-source-reads", observe.DefaultMaxFullReads, "Secrets and ConfigMaps read in full (to fingerprint them) at once; bounds the memory a tenant's large Secrets can take")
	fs.BoolVar(&o.releaseIdleMemory, "release-idle-memory", true, "once the manager has been quiet for five seconds after work, collect garbage and return the freed heap to the operating system (only when that wins back at least 2 MiB: about once per busy period, at most once per 2 MiB allocated while idle), so its resident memory follows its live data between bursts")
	fs.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, "heap growth in percent at which the Go runtime collects garbage (Go's own default is 100); lower keeps memory smaller for more CPU. The GOGC environment variable wins when set")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", 0, "client-side rate limit for API requests per second; 0 leaves it off")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 0, "client-side burst when --kube-api-qps is set")
	fs.BoolVar(&o.kubeAPICompression, "kube-api-compression", false, "accept gzip-compressed API responses; off by default: next to its API server the manager saves the CPU of compressing and decompressing every LIST and watch, and a decompressor (about 40 KB) per open watch")
	fs.DurationVar(&o.rolloutTimeout, "rollout-timeout", 15*time.Minute, "how long a restart's rollout may take before the request fails")
	fs.IntVar(&o.maxRestarts, "max-concurrent-restarts", 0, "most restarts in progress (issued, rollout not yet complete) across the cluster; 0 means no cap. Free slots go to namespaces in turn, so a namespace with many waiting restarts cannot starve one with a few. KickPolicy restart.maxConcurrent caps each policy on top")
	fs.DurationVar(&o.wavePoll, "wave-poll", request.DefaultWavePoll, "how often a restart that an earlier restart wave holds looks again when nothing woke it: a safety net, since the earlier wave's completions and the end of its bake wake it")
	fs.DurationVar(&o.requestRetention, "request-retention", 24*time.Hour, "how long finished KickRequests are kept")
	fs.DurationVar(&o.replayWindow, "notification-replay-window", time.Hour, "after a manager start, re-send notifications of request transitions this recent that a NotificationPolicy may not have delivered before (same event ids); 0 turns replay off")
	fs.BoolVar(&o.enableArgoCD, "enable-argocd", true, "gate on Argo CD Applications and AppProjects (skipped when the CRDs are absent)")
	fs.BoolVar(&o.enableFlux, "enable-flux", true, "gate on Flux Kustomizations and HelmReleases (skipped when the CRDs are absent)")
	fs.BoolVar(&o.enableKargo, "enable-kargo", false, "gate on Kargo Stages and Promotions (skipped when the CRDs are absent)")
	fs.BoolVar(&o.enableArgoRollouts, "enable-argo-rollouts", false, "restart argoproj.io Rollouts (skipped when the CRD is absent)")
	fs.BoolVar(&o.enableCSI, "enable-csi-integration", false, "observe SecretProviderClassPodStatus for Secrets Store CSI rotation (skipped when the CRD is absent)")
	fs.StringVar(&o.argoCDNamespace, "argocd-namespace", "argocd", "namespace of the Argo CD control plane")
	fs.Var(&o.argoCDAppNSs, "argocd-application-namespaces", "comma-separated further namespaces holding Argo CD Applications")
	fs.StringVar(&o.argoCDTrackingMethod, "argocd-tracking-method", "annotation", "Argo CD resource tracking method (annotation, label, annotation+label) when argocd-cm does not set application.resourceTrackingMethod")
	fs.StringVar(&o.argoCDInstallationID, "argocd-installation-id", "", "Argo CD installation id when argocd-cm does not set installationID")
	fs.StringVar(&o.argoCDLabelKey, "argocd-label-key", "app.kubernetes.io/instance", "label key of Argo CD label tracking when argocd-cm does not set application.instanceLabelKey")
	fs.Var(&o.webhookDenyCIDRs, "webhook-deny-cidrs", "comma-separated CIDRs notification webhooks may never reach, in addition to those always refused (loopback, unspecified, link-local, cloud metadata addresses)")
	fs.StringVar(&o.timelineAddr, "timeline-bind-address", "127.0.0.1:8082", "address the timeline UI and API bind to; 0 disables it. On a loopback address anyone who can reach it may read it; elsewhere a caller needs a bearer token and sees only namespaces in which it may list KickRequests")
	fs.StringVar(&o.timelineCertDir, "timeline-cert-dir", "", "directory holding tls.crt and tls.key for the timeline, which then speaks HTTPS (reloaded when they change); required off loopback")
	fs.IntVar(&o.timelineHistorySize, "timeline-history-size", 50000, "entries the timeline keeps in memory at most; when full, the namespace holding the most loses its oldest entry")
	fs.DurationVar(&o.timelineHistoryAge, "timeline-history-age", 24*time.Hour, "how long the timeline keeps an entry; 0 keeps entries until --timeline-history-size pushes them out")
	fs.StringVar(&o.otlpEndpoint, "otel-otlp-endpoint", "", "host:port of an OTLP/gRPC collector that receives one OpenTelemetry trace per restart cycle (empty: tracing is off and costs nothing)")
	fs.BoolVar(&o.otlpInsecure, "otel-otlp-insecure", false, "send traces to --otel-otlp-endpoint without TLS")
	o.preflight.bind(fs)
	fs.Var(&o.webhookAllowCIDRs, "webhook-allow-cidrs", "comma-separated CIDRs notification webhooks are restricted to (default: any not denied); a listed range also opens an always-refused one it names as precisely, e.g. 127.0.0.0/8 for receivers on loopback")
}

func (o *options) validate() error {
	var errs []error
	if o.maxFullReads < 1 {
		errs = append(errs, fmt.Errorf("--max-full-source-reads must be at least 1, got %d", o.maxFullReads))
	}
	if o.maxConcurrent < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.maxConcurrent))
	}
	if o.gcPercent < 1 {
		errs = append(errs, fmt.Errorf("--gc-percent must be at least 1, got %d", o.gcPercent))
	}
	if o.kubeAPIQPS < 0 || o.kubeAPIBurst < 0 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must not be negative"))
	}
	if o.maxRestarts < 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-restarts must be 0 (no cap) or more, got %d", o.maxRestarts))
	}
	if o.wavePoll <= 0 {
		errs = append(errs, fmt.Errorf("--wave-poll must be positive, got %s", o.wavePoll))
	}
	if o.rolloutTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--rollout-timeout must be positive, got %s", o.rolloutTimeout))
	}
	if o.requestRetention <= 0 {
		errs = append(errs, fmt.Errorf("--request-retention must be positive, got %s", o.requestRetention))
	}
	if o.replayWindow < 0 {
		errs = append(errs, fmt.Errorf("--notification-replay-window must not be negative, got %s", o.replayWindow))
	}
	// The bounds client-go's leader election enforces, said in flag names.
	if o.retryPeriod <= 0 || o.renewDeadline <= o.retryPeriod*6/5 || o.leaseDuration <= o.renewDeadline {
		errs = append(errs, fmt.Errorf("leader election needs --leader-elect-lease-duration (%s) > --leader-elect-renew-deadline (%s) > 1.2 × --leader-elect-retry-period (%s) > 0",
			o.leaseDuration, o.renewDeadline, o.retryPeriod))
	}
	switch o.argoCDTrackingMethod {
	case "annotation", "label", "annotation+label":
	default:
		errs = append(errs, fmt.Errorf("--argocd-tracking-method must be annotation, label or annotation+label, got %q", o.argoCDTrackingMethod))
	}
	if o.timelineHistorySize < 1 {
		errs = append(errs, fmt.Errorf("--timeline-history-size must be at least 1, got %d", o.timelineHistorySize))
	}
	if o.timelineEnabled() {
		errs = append(errs, timelineTLSErrors(o.timelineAddr, o.timelineCertDir)...)
	}
	if o.timelineHistoryAge < 0 {
		errs = append(errs, fmt.Errorf("--timeline-history-age must not be negative, got %s", o.timelineHistoryAge))
	}
	if o.otlpInsecure && o.otlpEndpoint == "" {
		errs = append(errs, errors.New("--otel-otlp-insecure needs --otel-otlp-endpoint"))
	}
	if o.otlpEndpoint != "" && strings.Contains(o.otlpEndpoint, "://") {
		errs = append(errs, fmt.Errorf("--otel-otlp-endpoint takes host:port, not a URL: %q", o.otlpEndpoint))
	}
	if o.namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if o.metricsCertDir != "" {
		if !o.metricsSecure {
			errs = append(errs, errors.New("--metrics-cert-dir needs --metrics-secure: the certificate is only used for HTTPS"))
		}
		// controller-runtime falls back to a self-signed certificate when
		// the files are missing; a mount that went wrong should fail here.
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(o.metricsCertDir, f)); err != nil {
				errs = append(errs, fmt.Errorf("--metrics-cert-dir: %w", err))
			}
		}
	}
	errs = append(errs, o.preflight.validate(o.namespace)...)
	return errors.Join(errs...)
}

// timelineEnabled reports whether the timeline runs.
func (o *options) timelineEnabled() bool { return o.timelineAddr != "0" && o.timelineAddr != "" }

// stringList is a comma-separated flag value.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	*s = nil
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

// prefixList is a comma-separated list of CIDRs.
type prefixList []netip.Prefix

func (p *prefixList) String() string {
	parts := make([]string, len(*p))
	for i, pr := range *p {
		parts[i] = pr.String()
	}
	return strings.Join(parts, ",")
}

func (p *prefixList) Set(v string) error {
	*p = nil
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		pr, err := netip.ParsePrefix(part)
		if err != nil {
			return fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8: %w", part, err)
		}
		*p = append(*p, pr.Masked())
	}
	return nil
}
