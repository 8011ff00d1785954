// Command kick-manager is the KICK operator: it parses flags and wires the
// controllers into a controller-runtime manager. It holds no decision logic.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/go-logr/logr"
	uberzap "go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/cmd/kick-manager/internal/lazylog"
	"github.com/kick-operator/kick/cmd/kick-manager/internal/memtrim"
	"github.com/kick-operator/kick/restart/indexed"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/workload"
)

// newLogger is the manager's logger from the --zap-* flags. Context fields
// (controller-runtime adds four to every reconcile's logger) are encoded
// when a line is written, not when they are added (package lazylog).
func newLogger(opts *zap.Options) logr.Logger {
	eager := zap.New(zap.UseFlagOptions(opts), zap.RawZapOpts(uberzap.WrapCore(lazylog.Core)))
	return logr.New(lazylog.Sink(eager.GetSink()))
}

// bindFlags registers the manager's flags on fs: its options, the --zap-*
// logging flags and --version. --kubeconfig is not among them:
// controller-runtime's config package registers it on flag.CommandLine.
// docs/reference/configuration.md lists every flag (TestFlagTable).
func bindFlags(fs *flag.FlagSet, opts *options, zapOpts *zap.Options) (showVersion *bool) {
	opts.bind(fs)
	zapOpts.BindFlags(fs)
	return fs.Bool("version", false, "print the version and exit")
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kick-manager:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts options
	zapOpts := zap.Options{}
	showVersion := bindFlags(flag.CommandLine, &opts, &zapOpts)
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return nil
	}
	if err := opts.validate(); err != nil {
		return err
	}
	// Collect at --gc-percent heap growth (see defaultGCPercent). GOGC (and
	// GOMEMLIMIT, which the manifests set from the container's limit) still
	// win when set.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(opts.gcPercent)
	}
	ctrl.SetLogger(newLogger(&zapOpts))
	log := ctrl.Log.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no cluster to talk to: %w (pass --kubeconfig or run in a pod)", err)
	}
	tuneClient(cfg, opts)

	// Optional integrations are detected once, before the manager exists:
	// a watch on a kind the API server does not serve would abort it.
	probe, err := discoveryProbe(cfg)
	if err != nil {
		return err
	}
	active, err := probeIntegrations(opts, probe, func(name string, missing schema.GroupVersionKind) {
		log.Info("integration skipped: its API is not served; restart the manager after installing it to enable it",
			"integration", name, "missingKind", missing.String())
	})
	if err != nil {
		return fmt.Errorf("probe integrations: %w", err)
	}
	// Helm never upgrades a chart's CRDs: a manager newer than its CRDs must
	// not watch (and so abort on) a kind that is not installed.
	holdKind := kickv1alpha1.GroupVersion.WithKind("KickHold")
	if served, err := probe(holdKind); err != nil {
		return fmt.Errorf("probe %s: %w", holdKind, err)
	} else if !served {
		active.holdsOff = true
		log.Info("KickHolds are not served: kubectl kick hold has no effect until this release's CRDs are installed (kubectl apply -k deploy/crds, or the chart's crds/) and the manager restarted",
			"missingKind", holdKind.String())
	}
	if active.argoCD && !argoCDLinked {
		exe, err := os.Executable()
		if err == nil {
			log.Info("Argo CD is served: handing over to the build that includes the Argo CD integration", "binary", argoCDBuild)
			err = handOverToArgoCDBuild(exe, os.Args[1:], os.Environ())
		}
		log.Error(err, "the Argo CD integration cannot run; continuing without it")
		active.withoutArgoCD(fmt.Sprintf("this kick-manager build does not include the Argo CD integration and could not hand over to %s: %v", argoCDBuild, err))
	}

	scheme := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, kickv1alpha1.AddToScheme, active.addToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}

	// The fingerprint key must exist before the source controllers start:
	// they fingerprint a consumed Secret or ConfigMap when it changes.
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	key, err := observe.EnsureKey(ctx, direct, opts.namespace)
	if err != nil {
		return err
	}
	keys := observe.NewFingerprinter(key)
	byObject := cacheByObject(active, opts)
	sources := sourceCache(active)

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The manager's client carries the cache's indexes, so the restart
		// path reads them without building a list (restart/indexed).
		NewClient: indexed.NewClient,
		Cache: cache.Options{
			// Secrets and ConfigMaps are cached metadata-only and cut down
			// to what decisions read, ReplicaSets without their pod
			// templates; everything else drops managedFields.
			ByObject:         byObject,
			DefaultTransform: cache.TransformStripManagedFields(),
			// Of the Secrets and ConfigMaps, only those the observer
			// follows (consumed, recorded) stay in the cache.
			NewInformer: sources.NewInformer,
		},
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.probeAddr,
		PprofBindAddress:              opts.pprofAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              "kick-manager.kick.corewire.io",
		LeaderElectionNamespace:       opts.namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.leaseDuration,
		RenewDeadline:                 &opts.renewDeadline,
		RetryPeriod:                   &opts.retryPeriod,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	var synced atomic.Bool
	if err := mgr.AddReadyzCheck("caches", func(*http.Request) error {
		if !synced.Load() {
			return errors.New("informer caches are not synced yet")
		}
		return nil
	}); err != nil {
		return err
	}
	if err := wire(ctx, mgr, opts, keys, active, sources); err != nil {
		return err
	}

	// The first LIST of every object leaves garbage behind (what the cache
	// transforms dropped); hand it back once synced. After that, the heap a
	// burst of work grew goes back whenever the manager has gone quiet.
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			synced.Store(true)
			runtime.GC()
			debug.FreeOSMemory()
			if opts.releaseIdleMemory {
				trimLog := ctrl.Log.WithName("memory")
				memtrim.Run(ctx, memtrim.DefaultInterval, memtrim.DefaultPolicy, func(r memtrim.Released) {
					trimLog.V(1).Info("returned memory to the operating system while idle",
						"heldMB", r.Before>>20, "nowMB", r.After>>20, "took", r.Took.String())
				})
			}
		}
	}()

	log.Info("starting kick-manager", "version", version, "build", buildName, "namespace", opts.namespace,
		"leaderElection", opts.leaderElect, "maxConcurrentReconciles", opts.maxConcurrent)
	return mgr.Start(ctx)
}

// tuneClient applies the --kube-api-* flags to the manager's API client
// configuration. controller-runtime leaves client-side throttling off; only
// a flag turns it on. Compression stays off unless asked for (a kubeconfig
// that disables it keeps it off).
func tuneClient(cfg *rest.Config, opts options) {
	if opts.kubeAPIQPS > 0 {
		cfg.QPS, cfg.Burst = float32(opts.kubeAPIQPS), opts.kubeAPIBurst
	}
	if !opts.kubeAPICompression {
		cfg.DisableCompression = true
	}
}

// metricsOptions configures the /metrics endpoint. Plain HTTP by default
// (local runs and tests); with --metrics-secure it serves HTTPS and lets a
// request through only when the API server authenticates its bearer token
// (TokenReview) and authorizes a get on the /metrics URL for that user
// (SubjectAccessReview), the way the API server guards its own /metrics.
func metricsOptions(opts options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.metricsAddr}
	if opts.metricsSecure {
		o.SecureServing = true
		o.FilterProvider = metricsAuth
		o.CertDir = opts.metricsCertDir
	}
	return o
}

// sourceCache is the filter of the manager's Secret and ConfigMap informers
// (see observe.SourceCache), keeping also the ConfigMap the Argo CD
// integration watches by name.
func sourceCache(active *integrations) *observe.SourceCache {
	sources := observe.NewSourceCache()
	if active.argoCD {
		active.followArgoCDSettings(sources)
	}
	return sources
}

// cacheByObject is the manager cache's per-kind settings: Secrets and
// ConfigMaps metadata-only, ReplicaSets without their pod templates, the
// active integrations' kinds. (The timeline watches Events without caching
// them.)
func cacheByObject(active *integrations, opts options) map[client.Object]cache.ByObject {
	byObject := observe.NewCacheOptions()
	byObject[&appsv1.ReplicaSet{}] = workload.ReplicaSetCacheOptions()
	active.cacheOptions(byObject)
	return byObject
}
