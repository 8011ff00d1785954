package sinks

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/sinks"
)

// yamlFence finds ```yaml blocks (Kubernetes objects, no info string after yaml).
var yamlFence = regexp.MustCompile("(?ms)^```ya?ml[ \t]*\n(.*?)^```")

// TestDocsSecretsOptIn: a documentation example that a reader copies must work, so every
// Secret a NotificationPolicy of the docs references is in the same example and carries the
// opt-in label; otherwise the policy would never become Ready.
func TestDocsSecretsOptIn(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	policies := 0
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range yamlFence.FindAllSubmatch(data, -1) {
			secrets := map[string]*corev1.Secret{}
			var refs []string
			dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(m[1])))
			for {
				doc, err := dec.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Errorf("%s: %v", rel, err)
					break
				}
				var meta struct{ Kind string }
				if yaml.Unmarshal(doc, &meta) != nil {
					continue
				}
				switch meta.Kind {
				case "Secret":
					var s corev1.Secret
					if err := yaml.Unmarshal(doc, &s); err == nil {
						secrets[s.Name] = &s
					}
				case "NotificationPolicy":
					var p kickv1alpha1.NotificationPolicy
					if err := yaml.Unmarshal(doc, &p); err != nil {
						t.Errorf("%s: %v", rel, err)
						continue
					}
					policies++
					refs = append(refs, sinks.ReferencedSecrets(&p)...)
				}
			}
			for _, name := range refs {
				s, ok := secrets[name]
				switch {
				case !ok:
					t.Errorf("%s: a NotificationPolicy example references Secret %q without showing it", rel, name)
				case !sinks.SecretAllowed(s):
					t.Errorf("%s: Secret %q of a NotificationPolicy example lacks the label %s: %q", rel, name,
						kickv1alpha1.NotificationSecretLabel, kickv1alpha1.NotificationSecretAllowed)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if policies < 3 {
		t.Fatalf("found %d NotificationPolicy examples under docs/; the extractor is broken", policies)
	}
}
