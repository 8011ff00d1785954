package main

// The manager's cluster permissions, generated into deploy/rbac by
// `make generate`. Least privilege: read sources, patch only the workload
// kinds KICK restarts, read the policies people write (and write only their
// status), own its records (KickRequests, SourceObservations), events and
// the leader-election lease.
// Each optional integration (Argo CD, Flux, Kargo, Rollouts, CSI) has its
// own ClusterRole, generated from the markers in its package into
// deploy/rbac/NAME and granted by the chart or a kustomize component only
// when the integration is enabled.

// KickPolicies and NotificationPolicies are written by people: the manager
// only reads them and writes their status. KickRequests and
// SourceObservations are the manager's own records.
// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickpolicies;notificationpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickrequests;sourceobservations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickpolicies/status;kickrequests/status;notificationpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=replicasets;controllerrevisions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// --metrics-secure asks the API server who a /metrics caller is and
// whether it may get /metrics, and a timeline bound beyond loopback who
// its caller is and where it may list KickRequests (the rights of
// system:auth-delegator).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// Namespaced to the manager's own namespace: the leader-election lease and
// the fingerprint key Secret.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kick-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=kick-system,resources=secrets,verbs=create
