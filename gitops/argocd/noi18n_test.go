package argocd

import (
	"testing"

	"github.com/chai2010/gettext-go"
)

// TestKubectlTranslationsUnloaded: the kubectl command packages the Argo CD types pull in call
// i18n.T while they initialise; with noi18n initialised first, kubectl's catalogue is never
// bound (loading it binds the "k8s" domain), so its megabytes stay out of the heap.
func TestKubectlTranslationsUnloaded(t *testing.T) {
	if d := gettext.SetDomain(""); d == "k8s" {
		t.Fatal("kubectl's translation catalogue was loaded: noi18n no longer runs before the kubectl commands")
	}
}
