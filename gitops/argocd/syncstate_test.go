package argocd

import (
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestSyncState(t *testing.T) {
	synced := argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced}}
	op := map[string]*argov1alpha1.OperationState{
		"Running":     {Phase: "Running"},
		"Terminating": {Phase: "Terminating"},
		"Succeeded":   {Phase: "Succeeded"},
		"Failed":      {Phase: "Failed"},
	}
	cases := []struct {
		name string
		app  argov1alpha1.Application
		want kickv1alpha1.GateReason
		msg  string
	}{
		{name: "synced", app: argov1alpha1.Application{Status: synced}, want: kickv1alpha1.GateAllowed},
		{name: "synced and degraded", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
			Sync: synced.Sync, Health: argov1alpha1.AppHealthStatus{Status: "Degraded"}}}, want: kickv1alpha1.GateAllowed},
		{name: "no status", want: kickv1alpha1.GateOwnerOutOfSync, msg: "no sync status yet"},
		{name: "out of sync", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
			Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeOutOfSync}}}, want: kickv1alpha1.GateOwnerOutOfSync, msg: "is OutOfSync"},
		{name: "unknown", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
			Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeUnknown}}}, want: kickv1alpha1.GateOwnerOutOfSync, msg: "is Unknown"},
		{name: "operation requested", app: argov1alpha1.Application{Status: synced, Operation: &argov1alpha1.Operation{
			InitiatedBy: argov1alpha1.OperationInitiator{Username: "alice"}}}, want: kickv1alpha1.GateOwnerReconciling, msg: "requested by alice"},
		{name: "automated operation", app: argov1alpha1.Application{Status: synced, Operation: &argov1alpha1.Operation{
			InitiatedBy: argov1alpha1.OperationInitiator{Automated: true}}}, want: kickv1alpha1.GateOwnerReconciling, msg: "(automated)"},
		{name: "running while out of sync", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
			Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeOutOfSync}, OperationState: op["Running"]}},
			want: kickv1alpha1.GateOwnerReconciling, msg: "Running"},
		{name: "running, its operation still set (as the controller writes it)", app: argov1alpha1.Application{
			Operation: &argov1alpha1.Operation{InitiatedBy: argov1alpha1.OperationInitiator{Automated: true}},
			Status:    argov1alpha1.ApplicationStatus{Sync: synced.Sync, OperationState: op["Running"]}},
			want: kickv1alpha1.GateOwnerReconciling, msg: "has a sync operation Running"},
		{name: "terminating", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{Sync: synced.Sync, OperationState: op["Terminating"]}},
			want: kickv1alpha1.GateOwnerReconciling, msg: "Terminating"},
		{name: "finished operation", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{Sync: synced.Sync, OperationState: op["Succeeded"]}},
			want: kickv1alpha1.GateAllowed},
		{name: "failed operation but synced", app: argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{Sync: synced.Sync, OperationState: op["Failed"]}},
			want: kickv1alpha1.GateAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.app.Namespace, c.app.Name = "argocd", "web"
			got, msg := SyncState(&c.app)
			if got != c.want || !strings.Contains(msg, c.msg) || !strings.Contains(msg, "Application argocd/web") {
				t.Fatalf("SyncState = %s %q, want %s mentioning %q", got, msg, c.want, c.msg)
			}
		})
	}
}
