package main

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestHoldTargets(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  kickv1alpha1.HoldTarget
		named string
		err   string
	}{
		{args: []string{"namespace"}, want: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldNamespace}},
		{args: []string{"ns/shop"}, want: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldNamespace}, named: "shop"},
		{args: []string{"secret/db"}, want: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "db"}},
		{args: []string{"cm/flags"}, want: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldConfigMap, Name: "flags"}},
		{args: []string{"spc/vault"}, want: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecretProviderClass, Name: "vault"}},
		{args: []string{"deploy/web"}, want: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldDeployment, Name: "web"}},
		{args: []string{"sts/db"}, want: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldStatefulSet, Name: "db"}},
		{args: nil, err: "takes one target"},
		{args: []string{"secret"}, err: `"secret" is not KIND/NAME`},
		{args: []string{"secret/a/b"}, err: "is not KIND/NAME"},
		{args: []string{"pod/x"}, err: "unknown kind"},
	} {
		got, named, err := parseHoldTarget(tc.args, "hold")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want || named != tc.named):
			t.Errorf("%q = %+v %q %v, want %+v %q", tc.args, got, named, err, tc.want, tc.named)
		}
	}
}

func TestHoldFlags(t *testing.T) {
	ns := "other"
	cf := &genericclioptions.ConfigFlags{Namespace: &ns}
	for _, tc := range []struct {
		o    holdOptions
		args []string
		err  string
	}{
		{o: holdOptions{}, args: []string{"namespace"}, err: "hold needs --reason"},
		{o: holdOptions{reason: strings.Repeat("x", 513)}, args: []string{"namespace"}, err: "at most 512"},
		{o: holdOptions{reason: "x", expiresIn: -1}, args: []string{"namespace"}, err: "--for must be positive"},
		{o: holdOptions{reason: "x"}, args: []string{"namespace/shop"}, err: "name different namespaces"},
		{o: holdOptions{reason: "x"}, args: []string{"namespace/other"}},
	} {
		err := tc.o.validate(tc.args, cf)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v %q: error %v, want %q", tc.o, tc.args, err, tc.err)
		}
	}
	// HoldName and the target the release command finds agree.
	if n := kickv1alpha1.HoldName(kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "db"}); n != "hold-secret-db" {
		t.Errorf("HoldName = %q", n)
	}
}
