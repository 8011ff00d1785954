// Package csi follows Secrets Store CSI mounts: SecretProviderClass
// dependencies and the object versions SecretProviderClassPodStatus reports
// per pod.
package csi
