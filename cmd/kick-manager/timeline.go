package main

import (
	"context"
	"net"
	"net/http"

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
	var access timeline.Access
	if !loopbackOnly(opts.timelineAddr) {
		cs, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		access = timelineAccess(&reviewer{cs: cs}, ctrl.Log.WithName("timeline").Info)
	}
	return mgr.Add(timeline.New(timeline.Options{
		Addr:         opts.timelineAddr,
		Cache:        mgr.GetCache(),
		Kinds:        kinds,
		History:      timeline.NewHistory(opts.timelineHistorySize, opts.timelineHistoryAge),
		Subscription: sub,
		Access:       access,
		Log:          ctrl.Log.WithName("timeline"),
	}))
}

// loopbackOnly reports whether addr listens on loopback only, where the
// timeline needs no authentication.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// timelineAccess lets a caller see the namespaces in which it may list
// KickRequests: its bearer token is reviewed (TokenReview), then each
// namespace (SubjectAccessReview; one cluster-wide question first, so a
// cluster reader costs one review, not one per namespace).
func timelineAccess(rv *reviewer, logInfo func(string, ...any)) timeline.Access {
	list := func(ns string) authzv1.SubjectAccessReviewSpec {
		return authzv1.SubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: ns, Verb: "list", Group: kickv1alpha1.GroupVersion.Group, Resource: "kickrequests",
		}}
	}
	return func(r *http.Request) (func(context.Context, string) bool, int) {
		u, code, why := rv.user(r)
		if code != http.StatusOK {
			if code == http.StatusServiceUnavailable {
				logInfo("cannot review a timeline request", "error", why)
			}
			return nil, code
		}
		if code, _ := rv.allowed(r, u, list("")); code == http.StatusOK {
			return func(context.Context, string) bool { return true }, http.StatusOK
		}
		return func(_ context.Context, ns string) bool {
			code, _ := rv.allowed(r, u, list(ns))
			return code == http.StatusOK
		}, http.StatusOK
	}
}
