package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHelpAndUsage(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 0, "kubectl kick restart KIND/NAME"},
		{[]string{"help"}, 0, "Exit codes"},
		{[]string{"--help"}, 0, "kubectl kick explain"},
		{[]string{"frobnicate"}, 2, `"frobnicate" is not available`},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code {
			t.Errorf("run(%v) = %d, want %d", tc.args, code, tc.code)
		}
		if got := out.String() + errOut.String(); !strings.Contains(got, tc.contains) {
			t.Errorf("run(%v) output does not contain %q:\n%s", tc.args, tc.contains, got)
		}
	}
}
