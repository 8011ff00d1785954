package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// InstallCRDs creates, or updates, every CustomResourceDefinition found in the
// .yaml files of dirs (other kinds are ignored) and waits until each one is
// Established and published in the OpenAPI v3 document of its group-version,
// so objects of the new kinds can be created, and explained, right away.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dirs ...string) error {
	crds, err := ReadCRDs(dirs...)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		_, err := api.Create(ctx, crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *apiextensionsv1.CustomResourceDefinition
			if cur, err = api.Get(ctx, crd.Name, metav1.GetOptions{}); err == nil {
				crd.ResourceVersion = cur.ResourceVersion
				_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("install CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		name := crd.Name
		err := WaitFor(ctx, 60*time.Second, nil, "CRD "+name+" to be Established", func() (bool, error) {
			cur, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, cond := range cur.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	return waitPublished(ctx, cfg, crds)
}

// waitPublished waits until every served version of every CRD has a schema in
// the API server's OpenAPI v3 document. The server publishes it a moment after
// the CRD is Established; until then `kubectl explain` cannot find the kind.
func waitPublished(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	want := map[string][]string{} // "apis/<group>/<version>" -> kinds
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				path := "apis/" + crd.Spec.Group + "/" + v.Name
				want[path] = append(want[path], crd.Spec.Names.Kind)
			}
		}
	}
	return WaitFor(ctx, 60*time.Second, nil, "the CRDs' OpenAPI schemas to be published", func() (bool, error) {
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			return false, nil
		}
		for path, kinds := range want {
			gv, ok := paths[path]
			if !ok {
				return false, nil
			}
			doc, err := gv.Schema("application/json")
			if err != nil {
				return false, nil
			}
			published := publishedKinds(doc)
			for _, kind := range kinds {
				if !published[kind] {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// publishedKinds lists the kinds an OpenAPI v3 document has schemas for.
func publishedKinds(doc []byte) map[string]bool {
	var parsed struct {
		Components struct {
			Schemas map[string]struct {
				GVK []struct {
					Kind string `json:"kind"`
				} `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	kinds := map[string]bool{}
	if json.Unmarshal(doc, &parsed) != nil {
		return kinds
	}
	for _, schema := range parsed.Components.Schemas {
		for _, gvk := range schema.GVK {
			kinds[gvk.Kind] = true
		}
	}
	return kinds
}

// ReadCRDs parses the CustomResourceDefinitions in the .yaml/.yml files of
// dirs, in file-name order.
func ReadCRDs(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("read CRD directory: %w", err)
		}
		var files []string
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
		sort.Strings(files)
		for _, f := range files {
			crds, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, crds...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition found in %s", strings.Join(dirs, ", "))
	}
	return out, nil
}

func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if meta.Kind != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			// Some upstream files carry fields newer than our types know;
			// fall back to the lenient decoder rather than refusing them.
			crd = &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(doc, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		out = append(out, crd)
	}
}
