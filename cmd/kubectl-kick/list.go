package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

const listLong = `List the KickRequests of the namespace (or of every namespace with -A):
each request's target, phase, the reason behind the phase, and its age.`

const listExample = `  kubectl kick list -n shop
  kubectl kick list -A`

type listOptions struct {
	allNamespaces bool
}

func (o *listOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the requests of every namespace")
}

func (o *listOptions) validate(args []string, cf *genericclioptions.ConfigFlags) error {
	if err := noArgs("list", args, ""); err != nil {
		return err
	}
	if o.allNamespaces && cf.Namespace != nil && *cf.Namespace != "" {
		return usagef("use either -n/--namespace or -A/--all-namespaces, not both")
	}
	return nil
}

func newListCommand(cf *genericclioptions.ConfigFlags, code *int) *cobra.Command {
	return subcommand(&cobra.Command{
		Use:               "list",
		Aliases:           []string{"ls"},
		Short:             "List KickRequests",
		Long:              listLong,
		Example:           listExample,
		ValidArgsFunction: cobra.NoFileCompletions,
	}, cf, code, &listOptions{}, runList)
}

func runList(ctx context.Context, o *listOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	s, code, ok := begin(cf, stderr)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ns := s.namespace
	if o.allNamespaces {
		ns = ""
	}
	var list kickv1alpha1.KickRequestList
	if err := s.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return report(stderr, apiError("list", ns, err))
	}
	if len(list.Items) == 0 {
		if ns == "" {
			fmt.Fprintln(stderr, "No KickRequests found.")
		} else {
			fmt.Fprintf(stderr, "No KickRequests found in namespace %s.\n", ns)
		}
		return exitOK
	}
	printTable(stdout, list.Items, o.allNamespaces, time.Now())
	return exitOK
}

// printTable prints requests as a kubectl-style table.
func printTable(out io.Writer, items []kickv1alpha1.KickRequest, withNamespace bool, now time.Time) {
	sort.Slice(items, func(i, j int) bool {
		if items[i].Namespace != items[j].Namespace {
			return items[i].Namespace < items[j].Namespace
		}
		return items[i].Name < items[j].Name
	})
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	cols := []string{"NAME", "KIND", "TARGET", "PHASE", "REASON", "AGE"}
	if withNamespace {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for i := range items {
		kr := &items[i]
		row := []string{
			kr.Name,
			string(kr.Spec.TargetRef.Kind),
			kr.Spec.TargetRef.Name,
			orNone(string(kr.Status.Phase)),
			orNone(requestReason(kr)),
			age(now.Sub(kr.CreationTimestamp.Time)),
		}
		if withNamespace {
			row = append([]string{kr.Namespace}, row...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

// requestReason is the Completed condition's reason for a finished
// request, else the last gate reason.
func requestReason(kr *kickv1alpha1.KickRequest) string {
	if kr.Status.Phase.IsTerminal() {
		if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionCompleted); c != nil {
			return c.Reason
		}
	}
	if kr.Status.Gate != nil {
		return string(kr.Status.Gate.Reason)
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// age formats a duration like kubectl's short ages: 5s, 3m, 2h, 4d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
