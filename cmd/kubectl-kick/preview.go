package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// preview asks the API server to apply (or delete) Secrets and ConfigMaps
// from a file as a server-side dry run and prints what KICK's admission
// preflight answers. Nothing is written; the preflight is the same code the
// manager decides with, so the answer is the manager's.

type previewOptions struct {
	file   string
	delete bool
}

// previewObject is one Secret or ConfigMap of the file.
type previewObject struct {
	kind, namespace, name string
	body                  []byte // JSON, for the apply patch
}

const previewLong = `Ask the API server to apply (or with --delete, delete) the Secrets and
ConfigMaps of FILE as a dry run, and print what KICK's admission preflight
answers: which workloads it will restart, and when. Nothing is written. It
needs the preflight enabled in the manager (--preflight);
"kubectl apply --dry-run=server" shows the same warnings.

Exit codes: 0 answered; 1 the API server refused a dry run; 2 bad usage.`

const previewExample = `  kubectl kick preview -f db-secret.yaml -n shop
  kubectl kick preview -f old-config.yaml --delete
  kubectl create secret generic db --from-literal=password=x --dry-run=client -o yaml | kubectl kick preview -f -`

func (o *previewOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.file, "filename", "f", "", "file with Secrets and ConfigMaps (YAML or JSON, several documents allowed; - for standard input)")
	fs.BoolVar(&o.delete, "delete", false, "preview deleting the objects instead of applying them")
}

func (o *previewOptions) validate(args []string, _ *genericclioptions.ConfigFlags) error {
	if err := noArgs("preview", args, "; give the objects with -f FILE"); err != nil {
		return err
	}
	if o.file == "" {
		return usagef("preview needs -f FILE (or -f - for standard input)")
	}
	return nil
}

func newPreviewCommand(cf *genericclioptions.ConfigFlags, code *int) *cobra.Command {
	cmd := subcommand(&cobra.Command{
		Use:               "preview -f FILE",
		Short:             "Show which workloads KICK would restart for a change, without making it",
		Long:              previewLong,
		Example:           previewExample,
		ValidArgsFunction: cobra.NoFileCompletions,
	}, cf, code, &previewOptions{}, runPreview)
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// readPreviewObjects parses the documents of r and keeps Secrets and
// ConfigMaps; anything else is an error naming the document.
func readPreviewObjects(r io.Reader, defaultNamespace string) ([]previewObject, error) {
	var out []previewObject
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		body, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if string(body) == "null" {
			continue
		}
		var head struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(body, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if head.APIVersion != "v1" || (head.Kind != "Secret" && head.Kind != "ConfigMap") {
			return nil, usagef("document %d is %s %s; preview takes Secrets and ConfigMaps (apiVersion v1)", i, head.APIVersion, head.Kind)
		}
		if head.Metadata.Name == "" {
			return nil, usagef("document %d (%s) has no metadata.name", i, head.Kind)
		}
		ns := head.Metadata.Namespace
		if ns == "" {
			ns = defaultNamespace
		}
		out = append(out, previewObject{kind: head.Kind, namespace: ns, name: head.Metadata.Name, body: body})
	}
	if len(out) == 0 {
		return nil, usagef("no Secret or ConfigMap found in the input")
	}
	return out, nil
}

// warningCollector keeps the warnings the API server relays, in order.
type warningCollector struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningCollector) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	w.warnings = append(w.warnings, text)
	w.mu.Unlock()
}

// take returns and forgets the warnings collected so far.
func (w *warningCollector) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}

func runPreview(ctx context.Context, o *previewOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	in := io.Reader(os.Stdin)
	if o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return report(stderr, usagef("%v", err))
		}
		defer f.Close()
		in = f
	}
	ns, _, err := cf.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return report(stderr, fmt.Errorf("kubeconfig: %w", err))
	}
	objects, err := readPreviewObjects(in, ns)
	if err != nil {
		return report(stderr, err)
	}
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		return report(stderr, fmt.Errorf("kubeconfig: %w", err))
	}
	warnings := &warningCollector{}
	cfg.WarningHandler = warnings
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return report(stderr, fmt.Errorf("connect to the cluster: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	code := exitOK
	for _, obj := range objects {
		err := dryRun(ctx, cs, obj, o.delete)
		printPreview(stdout, obj, warnings.take(), err)
		if err != nil {
			code = exitFailed
		}
	}
	return code
}

// dryRun applies (server-side) or deletes obj with dryRun=All: admission,
// the preflight included, runs; storage does not.
func dryRun(ctx context.Context, cs kubernetes.Interface, obj previewObject, del bool) error {
	dry := []string{metav1.DryRunAll}
	if del {
		opts := metav1.DeleteOptions{DryRun: dry}
		if obj.kind == "Secret" {
			return cs.CoreV1().Secrets(obj.namespace).Delete(ctx, obj.name, opts)
		}
		return cs.CoreV1().ConfigMaps(obj.namespace).Delete(ctx, obj.name, opts)
	}
	opts := metav1.PatchOptions{DryRun: dry, FieldManager: "kubectl-kick-preview", Force: ptr.To(true)}
	var err error
	if obj.kind == "Secret" {
		_, err = cs.CoreV1().Secrets(obj.namespace).Patch(ctx, obj.name, types.ApplyPatchType, obj.body, opts)
	} else {
		_, err = cs.CoreV1().ConfigMaps(obj.namespace).Patch(ctx, obj.name, types.ApplyPatchType, obj.body, opts)
	}
	return err
}

// printPreview prints KICK's answer for one object: its warnings, or why
// there is none.
func printPreview(w io.Writer, obj previewObject, warnings []string, err error) {
	fmt.Fprintf(w, "%s/%s -n %s:\n", strings.ToLower(obj.kind), obj.name, obj.namespace)
	if err != nil {
		fmt.Fprintf(w, "  the API server refused the dry run: %v\n", err)
		return
	}
	var kick []string
	for _, text := range warnings {
		if strings.HasPrefix(text, "kick:") {
			kick = append(kick, text)
		}
	}
	if len(kick) == 0 {
		fmt.Fprintf(w, "  no answer from KICK: no workload KICK manages consumes it, or the preflight webhook is not enabled\n")
		return
	}
	for _, text := range kick {
		fmt.Fprintf(w, "  %s\n", text)
	}
}
