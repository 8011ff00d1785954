package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/timeline"
)

// timelineQueue is the timeline's router queue (drop-oldest).
const timelineQueue = 4096

// wireTimeline subscribes the timeline to the router and adds its server
// to the manager, unless --timeline-bind-address is 0.
func wireTimeline(mgr ctrl.Manager, opts options, rt *router.Router, kinds *workload.Registry) error {
	if !opts.timelineEnabled() {
		return nil
	}
	sub, err := timeline.Subscribe(rt, timelineQueue)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	var access timeline.Access
	if !timeline.LoopbackOnly(opts.timelineAddr) {
		rv, err := newReviewer(mgr.GetConfig())
		if err != nil {
			return err
		}
		access = timelineAccess(rv, ctrl.Log.WithName("timeline").Info)
	}
	return mgr.Add(timeline.New(timeline.Options{
		Addr:         opts.timelineAddr,
		CertDir:      opts.timelineCertDir,
		Cache:        mgr.GetCache(),
		Kinds:        kinds,
		History:      timeline.NewHistory(opts.timelineHistorySize, opts.timelineHistoryAge),
		Subscription: sub,
		Events:       timeline.EventSource(cs),
		Access:       access,
		Log:          ctrl.Log.WithName("timeline"),
	}))
}

// timelineAccess lets a caller see the namespaces in which it may list
// KickRequests: its bearer token is reviewed (TokenReview), then each
// namespace (SubjectAccessReview; one cluster-wide question first, so a
// cluster reader costs one review, not one per namespace). The reviewer
// remembers the answers per user and namespace for a while (see
// reviewCacheSize and allowedTTL), so a viewer refreshing the overview does
// not cost a review per namespace each time.
func timelineAccess(rv *reviewer, logInfo func(string, ...any)) timeline.Access {
	list := func(ns string) authzv1.SubjectAccessReviewSpec {
		return authzv1.SubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: ns, Verb: "list", Group: kickv1alpha1.GroupVersion.Group, Resource: "kickrequests",
		}}
	}
	logFailure := func(code int, why string) {
		if code == http.StatusServiceUnavailable {
			logInfo("cannot review a timeline request", "error", why)
		}
	}
	return func(r *http.Request) (func(context.Context, string) int, int) {
		u, code, why := rv.user(r)
		if code != http.StatusOK {
			logFailure(code, why)
			return nil, code
		}
		all, why := rv.allowed(r.Context(), u, list(""))
		switch all {
		case http.StatusOK:
			return func(context.Context, string) int { return http.StatusOK }, http.StatusOK
		case http.StatusForbidden:
		default:
			logFailure(all, why)
			return nil, all
		}
		return func(ctx context.Context, ns string) int {
			code, why := rv.allowed(ctx, u, list(ns))
			logFailure(code, why)
			return code
		}, http.StatusOK
	}
}

// timelineTLSErrors checks --timeline-cert-dir: required off loopback (no
// bearer token in cleartext), and holding tls.crt and tls.key when set.
func timelineTLSErrors(addr, certDir string) []error {
	if err := timeline.CheckTLS(addr, certDir, "--timeline-cert-dir"); err != nil {
		return []error{fmt.Errorf("--timeline-bind-address: %w", err)}
	}
	var errs []error
	if certDir != "" {
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(certDir, f)); err != nil {
				errs = append(errs, fmt.Errorf("--timeline-cert-dir: %w", err))
			}
		}
	}
	return errs
}
