package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// managerSelector finds the manager's Deployment: the chart and the
// kustomize install both label it so.
const managerSelector = "app.kubernetes.io/name=kick,app.kubernetes.io/component=manager"

// versionTimeout bounds the cluster read of "version".
const versionTimeout = 10 * time.Second

const versionLong = `Print the version of this client and, where it can be read, of the KICK
manager in the cluster. The manager's version is read from its Deployment
(labelled ` + managerSelector + `): the tag of
the manager's image, else the app.kubernetes.io/version label. When it
cannot be read, the reason is printed instead; the command never fails for
it. "kubectl kick --version" prints the client's version alone.`

const versionExample = `  kubectl kick version
  kubectl kick version -o json --manager-namespace kick-system`

type versionOptions struct {
	output           string
	managerNamespace string
}

func (o *versionOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.output, "output", "o", "", `output format: "json" for machines (default: text)`)
	fs.StringVar(&o.managerNamespace, "manager-namespace", "", "namespace of the manager's Deployment (default: look in every namespace)")
}

func (o *versionOptions) validate(args []string, _ *genericclioptions.ConfigFlags) error {
	if err := noArgs("version", args, ""); err != nil {
		return err
	}
	return checkOutput(o.output)
}

func newVersionCommand(cf *genericclioptions.ConfigFlags, code *int) *cobra.Command {
	cmd := subcommand(&cobra.Command{
		Use:               "version",
		Short:             "Print the client's and the manager's version",
		Long:              versionLong,
		Example:           versionExample,
		ValidArgsFunction: cobra.NoFileCompletions,
	}, cf, code, &versionOptions{}, runVersion)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "text"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// versionReport is the answer of "version" (-o json).
type versionReport struct {
	Client string `json:"client"`
	// Managers are the manager Deployments found, with their versions.
	Managers []managerVersion `json:"managers,omitempty"`
	// ManagerUnknown says why no manager version could be read.
	ManagerUnknown string `json:"managerUnknown,omitempty"`
}

type managerVersion struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	// Source is where the version was read: "image tag" or "label".
	Source string `json:"source"`
}

func runVersion(ctx context.Context, o *versionOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	r := versionReport{Client: version}
	r.Managers, r.ManagerUnknown = readManagerVersions(ctx, cf, o.managerNamespace)
	if o.output == "json" {
		return printJSON(stdout, stderr, r)
	}
	fmt.Fprintf(stdout, "client:  %s\n", r.Client)
	if r.ManagerUnknown != "" {
		fmt.Fprintf(stdout, "manager: unknown (%s)\n", r.ManagerUnknown)
	}
	for _, m := range r.Managers {
		fmt.Fprintf(stdout, "manager: %s (%s/%s, %s)\n", m.Version, m.Namespace, m.Name, m.Source)
	}
	return exitOK
}

// readManagerVersions reads the manager Deployments in namespace (every
// namespace when empty). It returns their versions, or why none could be
// read.
func readManagerVersions(ctx context.Context, cf *genericclioptions.ConfigFlags, namespace string) ([]managerVersion, string) {
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		return nil, "no cluster: " + err.Error()
	}
	cfg.Timeout = versionTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	list, err := cs.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: managerSelector})
	where := "in any namespace"
	if namespace != "" {
		where = "in namespace " + namespace
	}
	switch {
	case apierrors.IsForbidden(err) && namespace == "":
		return nil, "you may not list Deployments in every namespace; name the manager's with --manager-namespace"
	case apierrors.IsForbidden(err):
		return nil, "you may not list Deployments " + where
	case err != nil:
		return nil, "cannot read the cluster: " + err.Error()
	case len(list.Items) == 0:
		return nil, fmt.Sprintf("no Deployment labelled %s %s", managerSelector, where)
	}
	var found []managerVersion
	var reasons []string
	for i := range list.Items {
		d := &list.Items[i]
		v, source, reason := managerVersionOf(d)
		if reason != "" {
			reasons = append(reasons, fmt.Sprintf("%s/%s: %s", d.Namespace, d.Name, reason))
			continue
		}
		found = append(found, managerVersion{Namespace: d.Namespace, Name: d.Name, Version: v, Source: source})
	}
	if len(found) == 0 {
		return nil, strings.Join(reasons, "; ")
	}
	return found, ""
}

// managerVersionOf reads the version of a manager Deployment: the tag of
// the manager container's image (what runs), else the
// app.kubernetes.io/version label (what the chart installed). reason says
// why there is neither.
func managerVersionOf(d *appsv1.Deployment) (v, source, reason string) {
	containers := d.Spec.Template.Spec.Containers
	image := ""
	for _, c := range containers {
		if c.Name == "manager" {
			image = c.Image
		}
	}
	if image == "" && len(containers) > 0 {
		image = containers[0].Image
	}
	if tag := imageTag(image); tag != "" && tag != "latest" {
		return tag, "image tag", ""
	}
	if l := d.Labels["app.kubernetes.io/version"]; l != "" {
		return l, "label", ""
	}
	return "", "", fmt.Sprintf("its image %q carries no version tag and it has no app.kubernetes.io/version label", image)
}

// imageTag is the tag of an image reference ("" when there is none: a
// digest alone, or no tag).
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon <= slash {
		return "" // no tag; a colon before the last slash is a registry port
	}
	return image[colon+1:]
}
