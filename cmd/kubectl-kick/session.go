package main

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/rollout"
)

const requestsResource = "kickrequests.kick.corewire.io"

// session is a connection to the cluster with the caller's credentials.
type session struct {
	client    client.WithWatch
	namespace string
}

func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kickv1alpha1.AddToScheme, rollout.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

func connect(cf *genericclioptions.ConfigFlags) (*session, error) {
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cf.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connect to the cluster: %w", err)
	}
	return &session{client: c, namespace: ns}, nil
}

// apiError explains an API error on KickRequests; for Forbidden it names
// the permission the caller lacks.
func apiError(verb, namespace string, err error) error {
	return resourceError(verb, requestsResource, namespace, err)
}

// resourceError explains an API error on one of KICK's resources.
func resourceError(verb, resource, namespace string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		where := "in namespace " + namespace
		if namespace == "" {
			where = "cluster-wide"
		}
		return fmt.Errorf("permission denied: you need %q on %s %s (ask for a Role granting it)\n  %v", verb, resource, where, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("not authenticated to the cluster; check your kubeconfig and credentials: %v", err)
	case meta.IsNoMatchError(err) || isMissingResource(err):
		return fmt.Errorf("the %s API (%s) is not installed in this cluster; install or upgrade KICK first: %v", resource, kickv1alpha1.GroupVersion, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the API server did not answer in time: %v", err)
	}
	return fmt.Errorf("%s %s: %v", verb, resource, err)
}

func isMissingResource(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return apierrors.IsNotFound(err) && (d == nil || d.Name == "")
}
