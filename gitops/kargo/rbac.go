package kargo

// RBAC for the Kargo integration; generated into deploy/rbac/kargo and
// granted only when the integration is enabled.
//
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages;promotions,verbs=get;list;watch
