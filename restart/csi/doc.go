// Package csi follows Secrets Store CSI mounts: per workload and SecretProviderClass, the object
// versions its pods report in SecretProviderClassPodStatus. Once every pod agrees, a new version set is a
// relevant change of the class for that workload, recorded and published like a Secret change.
//
// +groupName=secrets-store.csi.x-k8s.io
package csi
