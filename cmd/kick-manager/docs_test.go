package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kick-operator/kick/hack/docscheck"
)

const configPage = "../../docs/reference/configuration.md"

// docs/reference/configuration.md lists every flag the manager accepts, no
// flag it does not, and each default written as one code span is the flag's.
func TestFlagTable(t *testing.T) {
	fs := flag.NewFlagSet("kick-manager", flag.ContinueOnError)
	bindFlags(fs, &options{}, &zap.Options{})
	kubeconfig := flag.CommandLine.Lookup("kubeconfig")
	if kubeconfig == nil {
		t.Fatal("controller-runtime no longer registers --kubeconfig on flag.CommandLine; register it in bindFlags")
	}
	fs.Var(kubeconfig.Value, kubeconfig.Name, kubeconfig.Usage)

	rows, err := docscheck.Table(configPage, "Manager flags")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range rows {
		names := docscheck.Code(r.Cells[0])
		if len(names) == 0 {
			t.Errorf("%s:%d: the first cell names no flag in backticks: %q", configPage, r.Line, r.Cells[0])
		}
		for _, n := range names {
			name := strings.TrimPrefix(n, "--")
			f := fs.Lookup(name)
			switch {
			case f == nil || name == n:
				t.Errorf("%s:%d: %s is not a flag of kick-manager; remove the row or fix the name", configPage, r.Line, n)
				continue
			case listed[name]:
				t.Errorf("%s:%d: %s is listed twice", configPage, r.Line, n)
			}
			listed[name] = true
			if len(names) == 1 && len(r.Cells) > 1 {
				if d := docscheck.Code(r.Cells[1]); len(d) == 1 && "`"+d[0]+"`" == r.Cells[1] && f.DefValue != "" && !sameDefault(d[0], f.DefValue) {
					t.Errorf("%s:%d: %s defaults to %q, the table says %s", configPage, r.Line, n, f.DefValue, r.Cells[1])
				}
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			t.Errorf("%s: --%s is missing from the table under \"Manager flags\" (its help: %s)", configPage, f.Name, f.Usage)
		}
	})
}

// sameDefault compares a documented default with a flag's, durations by
// value ("15m" is "15m0s").
func sameDefault(doc, def string) bool {
	if doc == def {
		return true
	}
	a, errA := time.ParseDuration(doc)
	b, errB := time.ParseDuration(def)
	return errA == nil && errB == nil && a == b
}
