package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

const holdsResource = "kickholds.kick.corewire.io"

const holdLong = `Freeze KICK's restarts during an incident with a KickHold in the namespace:

  namespace            every restart in the namespace
  secret/NAME          restarts that would bring in a change of the Secret
  configmap/NAME       (cm) the same for a ConfigMap
  secretproviderclass/NAME  (spc) the same for a Secrets Store CSI class
  deployment/NAME      every restart of the workload (also sts/, ds/, rollout/)

Held restarts wait in phase WaitingForGate with reason Held and run once the
hold is released ("kubectl kick release") or expires (--for). Restarts that
already started are not stopped. A hold acts only in its own namespace.
Holding again updates the reason and the expiry.

Exit codes: 0 held; 2 bad usage or an API error (such as permission denied).`

const holdExample = `  # Stop restarts for changes of the Secret db in namespace shop
  kubectl kick hold secret/db -n shop --reason "INC-42: rotating the DB password"

  # Freeze every restart in the namespace for two hours
  kubectl kick hold namespace -n shop --reason "INC-42" --for 2h

  # Let them go again
  kubectl kick release secret/db -n shop`

const releaseLong = `Release what "kubectl kick hold" froze: delete the KickHolds in the namespace
that name the target. The restarts they held are looked at again at once.

Exit codes: 0 released; 1 nothing holds the target; 2 bad usage or an API
error (such as permission denied).`

// holdAliases maps the accepted spellings (lower case) of a hold's kind.
var holdAliases = map[string]kickv1alpha1.HoldKind{
	"namespace": kickv1alpha1.HoldNamespace, "namespaces": kickv1alpha1.HoldNamespace, "ns": kickv1alpha1.HoldNamespace,
	"secret": kickv1alpha1.HoldSecret, "secrets": kickv1alpha1.HoldSecret,
	"configmap": kickv1alpha1.HoldConfigMap, "configmaps": kickv1alpha1.HoldConfigMap, "cm": kickv1alpha1.HoldConfigMap,
	"secretproviderclass": kickv1alpha1.HoldSecretProviderClass, "secretproviderclasses": kickv1alpha1.HoldSecretProviderClass,
	"spc": kickv1alpha1.HoldSecretProviderClass,
}

// parseHoldTarget parses the target of hold and release: "namespace",
// "namespace/NAME" (which must be the namespace worked in) or KIND/NAME.
// It returns the namespace a "namespace/NAME" names, "" otherwise.
func parseHoldTarget(args []string, command string) (kickv1alpha1.HoldTarget, string, error) {
	if len(args) != 1 {
		return kickv1alpha1.HoldTarget{}, "", usagef("%s takes one target: namespace, secret/NAME, configmap/NAME or a workload such as deployment/NAME, got %q", command, args)
	}
	kindStr, name, hasName := strings.Cut(args[0], "/")
	if k, ok := holdAliases[strings.ToLower(kindStr)]; ok {
		switch {
		case k == kickv1alpha1.HoldNamespace:
			return kickv1alpha1.HoldTarget{Kind: k}, name, nil
		case !hasName || name == "" || strings.Contains(name, "/"):
			return kickv1alpha1.HoldTarget{}, "", usagef("%q is not KIND/NAME, e.g. %s/db", args[0], strings.ToLower(string(k)))
		}
		return kickv1alpha1.HoldTarget{Kind: k, Name: name}, "", nil
	}
	kind, name, err := parseTarget(args[0])
	if err != nil {
		return kickv1alpha1.HoldTarget{}, "", usagef("%s: %v (or namespace, secret/NAME, configmap/NAME, secretproviderclass/NAME)", command, err)
	}
	return kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldKind(kind), Name: name}, "", nil
}

// holdScope returns the namespace a hold or release works in: the one
// "namespace/NAME" names, which must agree with -n when both are given.
func holdScope(named string, cf *genericclioptions.ConfigFlags) error {
	if named == "" || cf.Namespace == nil || *cf.Namespace == "" || *cf.Namespace == named {
		if named != "" && cf.Namespace != nil {
			*cf.Namespace = named
		}
		return nil
	}
	return usagef("namespace/%s and -n %s name different namespaces", named, *cf.Namespace)
}

// holdOptions is the parsed command line of "hold".
type holdOptions struct {
	target    kickv1alpha1.HoldTarget
	reason    string
	expiresIn time.Duration
}

func (o *holdOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.reason, "reason", "", "why restarts are frozen, e.g. an incident ticket (required; shown on every held request; no secrets)")
	fs.DurationVar(&o.expiresIn, "for", 0, "end the hold by itself after this long (default: until released)")
}

func (o *holdOptions) validate(args []string, cf *genericclioptions.ConfigFlags) error {
	t, named, err := parseHoldTarget(args, "hold")
	if err != nil {
		return err
	}
	o.target = t
	switch {
	case strings.TrimSpace(o.reason) == "":
		return usagef("hold needs --reason, e.g. --reason \"INC-42: rotating the DB password\"")
	case len(o.reason) > 512:
		return usagef("--reason is %d bytes; at most 512", len(o.reason))
	case o.expiresIn < 0:
		return usagef("--for must be positive, got %s", o.expiresIn)
	}
	return holdScope(named, cf)
}

func newHoldCommand(cf *genericclioptions.ConfigFlags, code *int) *cobra.Command {
	return subcommand(&cobra.Command{
		Use:     "hold TARGET --reason TEXT",
		Short:   "Freeze KICK's restarts of a namespace, a workload or a source's changes",
		Long:    holdLong,
		Example: holdExample,
	}, cf, code, &holdOptions{}, runHold)
}

func runHold(ctx context.Context, o *holdOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	s, code, ok := begin(cf, stderr)
	if !ok {
		return code
	}
	return s.hold(ctx, o, time.Now(), stdout, stderr)
}

func (s *session) hold(ctx context.Context, o *holdOptions, now time.Time, stdout, stderr io.Writer) int {
	h := &kickv1alpha1.KickHold{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: kickv1alpha1.HoldName(o.target)},
		Spec:       kickv1alpha1.KickHoldSpec{Target: o.target, Reason: o.reason},
	}
	if o.expiresIn > 0 {
		at := metav1.NewTime(now.Add(o.expiresIn).Truncate(time.Second))
		h.Spec.ExpiresAt = &at
	}
	what := describeHold(o.target, s.namespace)
	err := s.client.Create(ctx, h)
	if apierrors.IsAlreadyExists(err) {
		return s.holdAgain(ctx, h, what, stdout, stderr)
	}
	if err != nil {
		return report(stderr, resourceError("create", holdsResource, s.namespace, err))
	}
	fmt.Fprintf(stdout, "kickhold/%s created: %s%s until \"kubectl kick release %s -n %s\"\n",
		h.Name, what, expiry(h), holdArg(o.target), s.namespace)
	return exitOK
}

// holdAgain updates the hold that already holds the target; a KickHold of
// that name made by hand for another target is left alone and a new one
// is created beside it.
func (s *session) holdAgain(ctx context.Context, want *kickv1alpha1.KickHold, what string, stdout, stderr io.Writer) int {
	have := &kickv1alpha1.KickHold{}
	if err := s.client.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return report(stderr, resourceError("get", holdsResource, s.namespace, err))
	}
	if have.Spec.Target != want.Spec.Target {
		want.Name, want.GenerateName = "", want.Name+"-"
		if err := s.client.Create(ctx, want); err != nil {
			return report(stderr, resourceError("create", holdsResource, s.namespace, err))
		}
		fmt.Fprintf(stdout, "kickhold/%s created: %s%s\n", want.Name, what, expiry(want))
		return exitOK
	}
	base := have.DeepCopy()
	have.Spec.Reason, have.Spec.ExpiresAt = want.Spec.Reason, want.Spec.ExpiresAt
	if err := s.client.Patch(ctx, have, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return report(stderr, resourceError("patch", holdsResource, s.namespace, err))
	}
	fmt.Fprintf(stdout, "kickhold/%s updated (held since %s): %s%s\n",
		have.Name, have.CreationTimestamp.UTC().Format(time.RFC3339), what, expiry(have))
	return exitOK
}

// describeHold says what a hold of t freezes, for people.
func describeHold(t kickv1alpha1.HoldTarget, namespace string) string {
	switch {
	case t.Kind == kickv1alpha1.HoldNamespace:
		return "every restart in namespace " + namespace + " waits"
	case t.Kind.IsSource():
		return fmt.Sprintf("restarts that bring in a change of %s %s/%s wait", t.Kind, namespace, t.Name)
	}
	return fmt.Sprintf("every restart of %s %s/%s waits", t.Kind, namespace, t.Name)
}

func expiry(h *kickv1alpha1.KickHold) string {
	if h.Spec.ExpiresAt == nil {
		return ""
	}
	return " (expires at " + h.Spec.ExpiresAt.UTC().Format(time.RFC3339) + ")"
}

// holdArg is the command-line spelling of a hold's target.
func holdArg(t kickv1alpha1.HoldTarget) string {
	if t.Kind == kickv1alpha1.HoldNamespace {
		return "namespace"
	}
	return strings.ToLower(string(t.Kind)) + "/" + t.Name
}

// releaseOptions is the parsed command line of "release".
type releaseOptions struct {
	target kickv1alpha1.HoldTarget
}

func (o *releaseOptions) addFlags(*pflag.FlagSet) {}

func (o *releaseOptions) validate(args []string, cf *genericclioptions.ConfigFlags) error {
	t, named, err := parseHoldTarget(args, "release")
	if err != nil {
		return err
	}
	o.target = t
	return holdScope(named, cf)
}

func newReleaseCommand(cf *genericclioptions.ConfigFlags, code *int) *cobra.Command {
	return subcommand(&cobra.Command{
		Use:     "release TARGET",
		Short:   "Release what kubectl kick hold froze",
		Long:    releaseLong,
		Example: "  kubectl kick release secret/db -n shop\n  kubectl kick release namespace -n shop",
	}, cf, code, &releaseOptions{}, runRelease)
}

func runRelease(ctx context.Context, o *releaseOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	s, code, ok := begin(cf, stderr)
	if !ok {
		return code
	}
	return s.release(ctx, o, stdout, stderr)
}

// release deletes every KickHold of the namespace that names the target,
// whatever its name: holds made with kubectl have names of their own.
func (s *session) release(ctx context.Context, o *releaseOptions, stdout, stderr io.Writer) int {
	var list kickv1alpha1.KickHoldList
	if err := s.client.List(ctx, &list, client.InNamespace(s.namespace)); err != nil {
		return report(stderr, resourceError("list", holdsResource, s.namespace, err))
	}
	released := 0
	for i := range list.Items {
		h := &list.Items[i]
		if h.Spec.Target != o.target {
			continue
		}
		if err := s.client.Delete(ctx, h); client.IgnoreNotFound(err) != nil {
			return report(stderr, resourceError("delete", holdsResource, s.namespace, err))
		}
		fmt.Fprintf(stdout, "kickhold/%s deleted (%q, held since %s)\n", h.Name, h.Spec.Reason, h.CreationTimestamp.UTC().Format(time.RFC3339))
		released++
	}
	if released == 0 {
		fmt.Fprintf(stderr, "kubectl kick: no KickHold holds %s in namespace %s (see kubectl get kickholds -n %s)\n", holdArg(o.target), s.namespace, s.namespace)
		return exitFailed
	}
	fmt.Fprintf(stdout, "%s is released in namespace %s: the restarts it held go on as their other gates allow\n", holdArg(o.target), s.namespace)
	return exitOK
}
