package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestReadPreviewObjects(t *testing.T) {
	in := `apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: hunter2}
---
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: other}
data: {a: b}
`
	objs, err := readPreviewObjects(strings.NewReader(in), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].kind != "Secret" || objs[0].namespace != "shop" || objs[1].namespace != "other" || objs[1].name != "cfg" {
		t.Fatalf("objects %+v", objs)
	}
	for _, bad := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {}\n",
		"",
		"kind: [",
	} {
		if _, err := readPreviewObjects(strings.NewReader(bad), "shop"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPrintPreviewShowsOnlyKICKsAnswer(t *testing.T) {
	obj := previewObject{kind: "Secret", namespace: "shop", name: "db"}
	var b bytes.Buffer
	printPreview(&b, obj, []string{"kick: restarts deployment/web now (policy default)", "metadata.finalizers: something else"}, nil)
	if got := b.String(); got != "secret/db -n shop:\n  kick: restarts deployment/web now (policy default)\n" {
		t.Errorf("output %q", got)
	}
	b.Reset()
	printPreview(&b, obj, nil, nil)
	if !strings.Contains(b.String(), "no answer from KICK") {
		t.Errorf("output %q", b.String())
	}
	b.Reset()
	printPreview(&b, obj, nil, errors.New("forbidden"))
	if !strings.Contains(b.String(), "refused the dry run: forbidden") {
		t.Errorf("output %q", b.String())
	}
}

func TestPreviewUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"preview"}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "-f FILE") {
		t.Errorf("code %d, stderr %q", code, errOut.String())
	}
}
