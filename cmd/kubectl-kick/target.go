package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/metadata"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// kindAliases maps the accepted spellings (lower case) to a target kind.
var kindAliases = map[string]kickv1alpha1.TargetKind{
	"deployment": kickv1alpha1.TargetDeployment, "deployments": kickv1alpha1.TargetDeployment, "deploy": kickv1alpha1.TargetDeployment,
	"statefulset": kickv1alpha1.TargetStatefulSet, "statefulsets": kickv1alpha1.TargetStatefulSet, "sts": kickv1alpha1.TargetStatefulSet,
	"daemonset": kickv1alpha1.TargetDaemonSet, "daemonsets": kickv1alpha1.TargetDaemonSet, "ds": kickv1alpha1.TargetDaemonSet,
	"rollout": kickv1alpha1.TargetRollout, "rollouts": kickv1alpha1.TargetRollout,
}

// allKinds are the kinds restart, explain and timeline accept.
var allKinds = []kickv1alpha1.TargetKind{kickv1alpha1.TargetDeployment, kickv1alpha1.TargetStatefulSet, kickv1alpha1.TargetDaemonSet, kickv1alpha1.TargetRollout}

// parseKind resolves a kind or alias, case-insensitively.
func parseKind(s string) (kickv1alpha1.TargetKind, error) {
	if k, ok := kindAliases[strings.ToLower(s)]; ok {
		return k, nil
	}
	return "", usagef("unknown kind %q: use deployment (deploy), statefulset (sts), daemonset (ds) or rollout", s)
}

// targetArg reads the one KIND/NAME argument of a command.
func targetArg(args []string, command string) (kickv1alpha1.TargetKind, string, error) {
	switch len(args) {
	case 0:
		return "", "", usagef("%s needs KIND/NAME, e.g. kubectl kick %s deployment/web", command, command)
	case 1:
		return parseTarget(args[0])
	}
	return "", "", usagef("%s takes one KIND/NAME, got %q", command, args)
}

// parseTarget parses KIND/NAME.
func parseTarget(s string) (kickv1alpha1.TargetKind, string, error) {
	kindStr, name, ok := strings.Cut(s, "/")
	if !ok {
		return "", "", usagef("%q is not KIND/NAME, e.g. deployment/web", s)
	}
	kind, err := parseKind(kindStr)
	if err != nil {
		return "", "", err
	}
	if name == "" {
		return "", "", usagef("missing name in %q, e.g. %s/web", s, strings.ToLower(string(kind)))
	}
	if strings.Contains(name, "/") {
		return "", "", usagef("%q is not KIND/NAME, e.g. deployment/web", s)
	}
	return kind, name, nil
}

// kindPrefixes are the "KIND/" completions of a partial KIND: the kinds'
// full names, or when none matches, the short names (deploy/, sts/, ds/).
func kindPrefixes(kinds []kickv1alpha1.TargetKind, partial string) []string {
	partial = strings.ToLower(partial)
	var full, short []string
	for alias, k := range kindAliases {
		plural := alias == strings.ToLower(string(k))+"s"
		if !slices.Contains(kinds, k) || !strings.HasPrefix(alias, partial) || plural {
			continue
		}
		if alias == strings.ToLower(string(k)) {
			full = append(full, alias+"/")
		} else {
			short = append(short, alias+"/")
		}
	}
	if len(full) == 0 {
		full = short
	}
	slices.Sort(full)
	return full
}

// resourceOfKind is the API resource that holds workloads of kind.
func resourceOfKind(kind kickv1alpha1.TargetKind) schema.GroupVersionResource {
	if kind == kickv1alpha1.TargetRollout {
		return schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	}
	return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: strings.ToLower(string(kind)) + "s"}
}

// completionTimeout bounds the cluster reads behind one <TAB>.
const completionTimeout = 5 * time.Second

// completeTarget completes the KIND/NAME argument: first the KIND/ prefix,
// then the names of that kind's workloads in the namespace, read (as
// metadata only) with the kubeconfig flags given so far.
func completeTarget(cf *genericclioptions.ConfigFlags, kinds []kickv1alpha1.TargetKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kindStr, partial, ok := strings.Cut(toComplete, "/")
		if !ok {
			return kindPrefixes(kinds, kindStr), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		}
		kind, err := parseKind(kindStr)
		if err != nil || !slices.Contains(kinds, kind) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, err := namespaceOf(cf)
		if err != nil {
			cobra.CompErrorln(err.Error())
			return nil, cobra.ShellCompDirectiveError
		}
		names, err := listNames(cmd.Context(), cf, resourceOfKind(kind), ns)
		if err != nil {
			cobra.CompErrorln(err.Error())
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, name := range names {
			if strings.HasPrefix(name, partial) {
				out = append(out, kindStr+"/"+name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerNamespaceCompletion completes -n/--namespace with the
// namespaces the caller may list.
func registerNamespaceCompletion(root *cobra.Command, cf *genericclioptions.ConfigFlags) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		names, err := listNames(cmd.Context(), cf, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "")
		if err != nil {
			cobra.CompErrorln(err.Error())
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, name := range names {
			if strings.HasPrefix(name, toComplete) {
				out = append(out, name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// namespaceOf is the namespace the kubeconfig flags select.
func namespaceOf(cf *genericclioptions.ConfigFlags) (string, error) {
	ns, _, err := cf.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	return ns, nil
}

// listNames lists the names of resource in namespace ("" for all, or a
// cluster-scoped resource), sorted, reading metadata only.
func listNames(ctx context.Context, cf *genericclioptions.ConfigFlags, resource schema.GroupVersionResource, namespace string) ([]string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.Timeout = completionTimeout
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	list, err := mc.Resource(resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", resource.Resource, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, item := range list.Items {
		names = append(names, item.Name)
	}
	slices.Sort(names)
	return names, nil
}
