package argocd

// RBAC for the Argo CD integration; generated into deploy/rbac/argocd and
// granted only when the integration is enabled.
//
// +kubebuilder:rbac:groups=argoproj.io,resources=applications;appprojects,verbs=get;list;watch
