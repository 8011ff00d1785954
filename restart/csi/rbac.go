package csi

// RBAC for the Secrets Store CSI integration; generated into
// deploy/rbac/secrets-store-csi and granted only when the integration is
// enabled.
//
// +kubebuilder:rbac:groups=secrets-store.csi.x-k8s.io,resources=secretproviderclasses;secretproviderclasspodstatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get
