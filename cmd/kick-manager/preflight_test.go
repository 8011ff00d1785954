package main

import (
	"flag"
	"strings"
	"testing"
)

// TestPreflightFlagsNameWhatIsWrong: bad combinations of the preflight's
// flags are refused at start with the flag to fix.
func TestPreflightFlagsNameWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preflight", "--preflight-deny-in-deny-windows", "--preflight-deny-exempt", "robot:x"}, "--preflight-deny-exempt: \"robot:x\""},
		{[]string{"--preflight", "--preflight-deny-exempt", "user:alice"}, "--preflight-deny-exempt needs --preflight-deny-in-deny-windows"},
		{[]string{"--preflight", "--preflight-client-names", "kube-apiserver"}, "--preflight-client-names needs --preflight-client-ca"},
		{[]string{"--preflight-client-ca", "/ca.crt"}, "need --preflight"},
		{[]string{"--preflight", "--preflight-max-in-flight", "0"}, "--preflight-max-in-flight must be positive"},
	} {
		var p preflightOptions
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		p.bind(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		errs := p.validate("kick-system")
		var msgs []string
		for _, err := range errs {
			msgs = append(msgs, err.Error())
		}
		if got := strings.Join(msgs, "; "); !strings.Contains(got, tc.want) {
			t.Errorf("%q: errors %q, want one containing %q", tc.args, got, tc.want)
		}
	}
	var p preflightOptions
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	p.bind(fs)
	if err := fs.Parse([]string{"--preflight", "--preflight-deny-in-deny-windows", "--preflight-deny-exempt", "serviceaccount:cert-manager/cert-manager,group:sec"}); err != nil {
		t.Fatal(err)
	}
	if errs := p.validate("kick-system"); len(errs) > 0 || p.exempt.Empty() {
		t.Errorf("valid exemptions: %v, parsed %+v", errs, p.exempt)
	}
}
