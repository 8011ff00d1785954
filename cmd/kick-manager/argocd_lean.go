//go:build noargocd

package main

import (
	"context"
	"errors"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/observe"
)

// The lean build: no Argo CD or Kargo integration linked (see
// argocd_linked.go). run hands the process over to the Argo CD build before
// any of these could be called; they only guard against a wiring mistake.

const buildName = "lean"

const argoCDLinked = false

var errArgoCDNotLinked = errors.New("this kick-manager build does not include the Argo CD integration")

func addArgoCDToScheme(*k8sruntime.Scheme) error { return errArgoCDNotLinked }

func (in *integrations) argoCDCacheOptions(map[client.Object]cache.ByObject) {}

func (in *integrations) followArgoCDSettings(*observe.SourceCache) {}

func (in *integrations) registerArgoCD(context.Context, ctrl.Manager, gitops.Workloads) error {
	return errArgoCDNotLinked
}
