package argocd

import (
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// SyncState decides whether an Application is reconciled: no operation
// running or requested, and status.sync.status Synced. It returns
// GateAllowed or the reason to wait, with a message. Health is not looked
// at: a degraded application may be exactly the one a restart fixes.
func SyncState(app *argov1alpha1.Application) (kickv1alpha1.GateReason, string) {
	name := "Application " + app.Namespace + "/" + app.Name
	// The application controller keeps the operation field set while the
	// operation runs and clears it (operation: null) when it completes, so
	// a running operation is named first, a requested one after.
	if st := app.Status.OperationState; st != nil && (st.Phase == "Running" || st.Phase == "Terminating") {
		msg := fmt.Sprintf("%s has a sync operation %s", name, st.Phase)
		if !st.StartedAt.IsZero() {
			msg += " since " + st.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		return kickv1alpha1.GateOwnerReconciling, msg
	}
	if op := app.Operation; op != nil {
		by := ""
		switch {
		case op.InitiatedBy.Automated:
			by = " (automated)"
		case op.InitiatedBy.Username != "":
			by = " by " + op.InitiatedBy.Username
		}
		return kickv1alpha1.GateOwnerReconciling, fmt.Sprintf("%s has an operation requested%s that Argo CD has not finished", name, by)
	}
	switch app.Status.Sync.Status {
	case argov1alpha1.SyncStatusCodeSynced:
		return kickv1alpha1.GateAllowed, name + " is Synced"
	case "":
		return kickv1alpha1.GateOwnerOutOfSync, name + " has no sync status yet: Argo CD has not compared it with Git"
	}
	return kickv1alpha1.GateOwnerOutOfSync, fmt.Sprintf("%s is %s, not Synced", name, app.Status.Sync.Status)
}
