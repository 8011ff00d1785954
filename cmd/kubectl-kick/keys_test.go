package main

import (
	"encoding/json"
	"strings"
	"testing"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
)

func TestDescribeKeys(t *testing.T) {
	rec := &kickv1alpha1.SourceObservation{Spec: kickv1alpha1.SourceObservationSpec{Keys: &kickv1alpha1.KeyHistory{Count: 2,
		Entries: []kickv1alpha1.KeyObservation{{ID: "00000000000000aa", Fingerprint: "0000000000000001"}, {ID: "00000000000000bb", Fingerprint: "0000000000000002"}}}}}
	reads := &discovery.Keys{Names: []string{"DB_PASSWORD"}}
	all := &kickv1alpha1.KickPolicy{Spec: kickv1alpha1.KickPolicySpec{Restart: &kickv1alpha1.RestartSpec{Keys: kickv1alpha1.KeysAll}}}

	var d dependencyResult
	describeKeys(&d, depFacts{reads: reads, record: rec}, &kickv1alpha1.KickPolicy{})
	if d.KeysRead == nil || *d.KeysRead != 1 || d.KeyEntries == nil || *d.KeyEntries != 2 || d.KeyLevel == "" {
		t.Fatalf("key-level dependency: %+v", d)
	}
	d.Record = "Relevant"
	text := recordText(d)
	out, _ := json.Marshal(d)
	if !strings.Contains(text, "reads 1 of 2 keys") || strings.Contains(text+string(out), "DB_PASSWORD") {
		t.Fatalf("text %q, json %s: want a count and no key name", text, out)
	}

	if d.Reads != "changes of the 1 key(s) it reads" {
		t.Fatalf("reads %q", d.Reads)
	}
	d = dependencyResult{}
	describeKeys(&d, depFacts{reads: reads, record: rec}, all)
	if d.KeyLevel != "" || d.Reads != "every key" {
		t.Fatalf("restart.keys All: %+v", d)
	}
	d = dependencyResult{}
	describeKeys(&d, depFacts{reads: &discovery.Keys{All: true}, record: rec}, nil)
	if d.KeysRead != nil || d.KeyLevel != "" {
		t.Fatalf("every key read: %+v", d)
	}
	d = dependencyResult{}
	describeKeys(&d, depFacts{reads: reads, record: &kickv1alpha1.SourceObservation{}}, nil)
	if d.KeysRead == nil || d.KeyLevel != "" {
		t.Fatalf("a record without keys: %+v", d)
	}
}
