package main

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/csi"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/inflight"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/policy"
	"github.com/kick-operator/kick/restart/request"
	"github.com/kick-operator/kick/restart/rollout"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks"
)

// configWorkers is the worker count of the controllers that only report on
// configuration objects (KickPolicy status, NotificationPolicy): one queue
// entry per policy, a handful of changes at a time. --max-concurrent-reconciles
// sizes the controllers on the restart path, where a burst of changes waits
// on the API server; an idle worker still holds a goroutine stack.
const configWorkers = 2

// wire registers the indexes, the router and every controller with mgr.
func wire(ctx context.Context, mgr ctrl.Manager, opts options, keys *observe.Fingerprinter, active *integrations, sources *observe.SourceCache) error {
	log := ctrl.Log.WithName("router")
	rt := router.New(router.Options{Registerer: metrics.Registry, Log: log.Info})
	go func() { <-ctx.Done(); rt.Close() }()

	kinds := active.workloads()
	if err := discovery.RegisterIndexesFor(ctx, mgr.GetFieldIndexer(), kinds.Objects()...); err != nil {
		return err
	}
	if err := workload.RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if active.argoRollouts {
		if err := rollout.RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
	}
	// The observer announces a change while it writes its record; a restart
	// waits for the record only before its patch.
	records := &inflight.Records{}
	observer := &observe.SourceReconciler{
		Records:   records,
		Client:    mgr.GetClient(),
		Live:      mgr.GetAPIReader(),
		Router:    rt,
		Keys:      keys,
		IsManaged: request.Managed(mgr.GetClient()),
		Kinds:     kinds,
		// Bounds the memory of full reads whatever the worker count.
		MaxFullReads: opts.maxFullReads,
	}
	if err := observer.SetupWithManager(mgr, observe.Options{MaxConcurrentReconciles: opts.maxConcurrent, SourceCache: sources}); err != nil {
		return err
	}
	enqueueSources := observer.EnqueueSourcesOf
	if active.csi {
		if err := csi.RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		mounts := &csi.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Router:    rt,
			Keys:      keys,
			IsManaged: request.Managed(mgr.GetClient()),
			Kinds:     kinds,
		}
		if err := mounts.SetupWithManager(mgr, csi.Options{MaxConcurrentReconciles: opts.maxConcurrent}); err != nil {
			return err
		}
		enqueueSources = func(ctx context.Context, workloads ...client.Object) error {
			if err := observer.EnqueueSourcesOf(ctx, workloads...); err != nil {
				return err
			}
			return mounts.EnqueueClassesOf(ctx, workloads...)
		}
	}
	if err := active.registerProviders(ctx, mgr, kinds); err != nil {
		return err
	}
	// Every controller's Events go through one bounded recorder.
	recorders, err := newThrottledRecorders(ctx, mgr.GetConfig(), mgr.GetScheme())
	if err != nil {
		return err
	}
	if err := (&policy.Reconciler{ProviderAvailable: active.gitops.Available, Kinds: kinds, Recorder: recorders.For(policy.ControllerName)}).SetupWithManager(mgr, policy.Options{MaxConcurrentReconciles: configWorkers}); err != nil {
		return err
	}
	// The notification policies watch the Secrets they read their
	// credentials from: the cache of Secrets keeps those too.
	sources.Keep(func(kind string, src client.Object) bool {
		return kind == discovery.KindSecret && sinks.UsesSecret(ctx, mgr.GetClient(), src)
	}, &kickv1alpha1.NotificationPolicy{})
	if err := (&sinks.Reconciler{Recorder: recorders.For(sinks.ControllerName)}).SetupWithManager(mgr, sinks.Options{
		Router:     rt,
		Registerer: metrics.Registry,
		// Added to the addresses sinks always refuse.
		DenyCIDRs:               opts.webhookDenyCIDRs,
		AllowCIDRs:              opts.webhookAllowCIDRs,
		MaxConcurrentReconciles: configWorkers,
		Replay:                  &request.Replayer{Client: mgr.GetClient(), Kinds: kinds},
		FanOuts:                 &request.FanOuts{Client: mgr.GetClient(), Kinds: kinds, KeyNames: keys.KeyName},
		ReplayWindow:            opts.replayWindow,
	}); err != nil {
		return err
	}
	if err := setupPreflight(ctx, mgr, opts, active, kinds, keys); err != nil {
		return err
	}
	if err := wireTimeline(mgr, opts, rt, kinds); err != nil {
		return err
	}
	tracer, err := startTracing(ctx, opts)
	if err != nil {
		return err
	}
	return request.SetupWithManager(ctx, mgr, request.Options{
		Recorder:                recorders.For("kick-request"),
		Router:                  rt,
		GitOps:                  active.gitops,
		Wakes:                   active.gitops.Wakes(),
		Metrics:                 request.NewMetrics(metrics.Registry),
		MaxConcurrentReconciles: opts.maxConcurrent,
		RolloutTimeout:          opts.rolloutTimeout,
		MaxConcurrentRestarts:   opts.maxRestarts,
		WavePoll:                opts.wavePoll,
		Retention:               opts.requestRetention,
		EnqueueSources:          enqueueSources,
		Kinds:                   kinds,
		CSI:                     active.csi,
		NoHolds:                 active.holdsOff,
		KeyNames:                keys.KeyName,
		Tracer:                  tracer,
		Records:                 records,
	})
}
