package main

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// parseRestart parses a restart command line with the command's own
// flags and checks, without cobra and without running it.
func parseRestart(args []string) (*restartOptions, *genericclioptions.ConfigFlags, bool, error) {
	return parse(&restartOptions{}, args)
}

// parse parses args the way the subcommand with options o does, without
// cobra: a flag set of its own flags and the kubeconfig flags. helpRequested
// is set for -h/--help.
func parse[O options](o O, args []string) (_ O, _ *genericclioptions.ConfigFlags, helpRequested bool, _ error) {
	var zero O
	fs := pflag.NewFlagSet("kubectl kick", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by the caller
	cf := genericclioptions.NewConfigFlags(true)
	cf.AddFlags(fs)
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return zero, nil, true, nil
		}
		return zero, nil, false, usageError{err.Error()}
	}
	if err := o.validate(fs.Args(), cf); err != nil {
		return zero, nil, false, err
	}
	return o, cf, false, nil
}

// Each subcommand's --help is its own: its description, usage line and
// flags, not the overview.
func TestSubcommandHelp(t *testing.T) {
	for cmd, want := range map[string][]string{
		"restart":  {"kubectl kick restart KIND/NAME [flags]", "--wait", "Exit codes with --wait"},
		"explain":  {"kubectl kick explain KIND/NAME | secret/NAME | configmap/NAME [flags]", "-o, --output", "the verdict"},
		"list":     {"kubectl kick list [flags]", "-A, --all-namespaces", "Aliases:"},
		"timeline": {"kubectl kick timeline KIND/NAME [flags]", "--since", "oldest first"},
		"preview":  {"kubectl kick preview -f FILE [flags]", "-f, --filename", "--delete"},
		"version":  {"kubectl kick version [flags]", "--manager-namespace", "never fails"},
	} {
		var out, errOut bytes.Buffer
		if code := run([]string{cmd, "--help"}, &out, &errOut); code != exitOK {
			t.Fatalf("%s --help = %d: %s", cmd, code, errOut.String())
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s --help lacks %q:\n%s", cmd, w, out.String())
			}
		}
		if strings.Contains(out.String(), "Exit codes of \"preview\"") {
			t.Errorf("%s --help prints the overview", cmd)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out, errOut bytes.Buffer
		if code := run([]string{"completion", shell}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "kubectl-kick") {
			t.Errorf("completion %s = %d, %d bytes: %s", shell, code, out.Len(), errOut.String())
		}
	}
}

func TestVersionFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--version"}, &out, &errOut); code != exitOK || out.String() != version+"\n" {
		t.Fatalf("--version = %d %q", code, out.String())
	}
	if code := run([]string{"version", "extra"}, &out, &errOut); code != exitUsage {
		t.Fatalf("version extra = %d", code)
	}
}

func TestKindPrefixes(t *testing.T) {
	for _, tc := range []struct {
		kinds   []kickv1alpha1.TargetKind
		partial string
		want    []string
	}{
		{allKinds, "", []string{"daemonset/", "deployment/", "rollout/", "statefulset/"}},
		{allKinds[:3], "", []string{"daemonset/", "deployment/", "statefulset/"}},
		{allKinds, "D", []string{"daemonset/", "deployment/"}},
		{allKinds, "deploy", []string{"deployment/"}},
		{allKinds, "sts", []string{"sts/"}},
		{allKinds, "ds", []string{"ds/"}},
		{allKinds[:3], "ro", nil},
		{allKinds, "pod", nil},
	} {
		if got := kindPrefixes(tc.kinds, tc.partial); !slices.Equal(got, tc.want) {
			t.Errorf("kindPrefixes(%v, %q) = %q, want %q", tc.kinds, tc.partial, got, tc.want)
		}
	}
}

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"ghcr.io/kick-operator/kick:v0.2.0":            "v0.2.0",
		"ghcr.io/kick-operator/kick":                   "",
		"registry:5000/kick":                           "",
		"registry:5000/kick:v1":                        "v1",
		"ghcr.io/kick-operator/kick@sha256:abc":        "",
		"ghcr.io/kick-operator/kick:v0.2.0@sha256:abc": "v0.2.0",
		"": "",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestManagerVersionOf(t *testing.T) {
	d := func(label string, images ...string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		if label != "" {
			d.Labels = map[string]string{"app.kubernetes.io/version": label}
		}
		for i, image := range images {
			name := "sidecar"
			if i == 0 {
				name = "manager"
			}
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: name, Image: image})
		}
		return d
	}
	for _, tc := range []struct {
		d                 *appsv1.Deployment
		v, source, reason string
	}{
		{d("v0.1.0", "kick:v0.2.0", "proxy:v9"), "v0.2.0", "image tag", ""},
		{d("v0.1.0", "kick:latest"), "v0.1.0", "label", ""},
		{d("v0.1.0", "kick@sha256:abc"), "v0.1.0", "label", ""},
		{d("", "kick"), "", "", `its image "kick" carries no version tag and it has no app.kubernetes.io/version label`},
	} {
		v, source, reason := managerVersionOf(tc.d)
		if v != tc.v || source != tc.source || reason != tc.reason {
			t.Errorf("managerVersionOf = %q %q %q, want %q %q %q", v, source, reason, tc.v, tc.source, tc.reason)
		}
	}
}
