package rollout

// RBAC for the Argo Rollouts integration; generated into
// deploy/rbac/argo-rollouts and granted only when the integration is enabled.
//
// +kubebuilder:rbac:groups=argoproj.io,resources=rollouts,verbs=get;list;watch;patch
