package gitopsstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// argoInstall is the part of Argo CD's install the application controller
// and the repo-server need: the settings ConfigMaps and Secret (labelled
// part-of argocd, which the settings manager selects on) and the default
// AppProject (the API server creates it upstream; it does not run here).
const argoInstall = `
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: %[1]s
  labels: {app.kubernetes.io/name: argocd-cm, app.kubernetes.io/part-of: argocd}
data:
  # Annotation tracking is the default of Argo CD 3; tests may change it.
  application.resourceTrackingMethod: annotation
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-rbac-cm
  namespace: %[1]s
  labels: {app.kubernetes.io/name: argocd-rbac-cm, app.kubernetes.io/part-of: argocd}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cmd-params-cm
  namespace: %[1]s
  labels: {app.kubernetes.io/name: argocd-cmd-params-cm, app.kubernetes.io/part-of: argocd}
---
apiVersion: v1
kind: Secret
metadata:
  name: argocd-secret
  namespace: %[1]s
  labels: {app.kubernetes.io/name: argocd-secret, app.kubernetes.io/part-of: argocd}
stringData:
  server.secretkey: %[2]s
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: %[1]s}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
`

// startArgo installs Argo CD's settings and runs redis, the repo-server and
// the application controller, each on 127.0.0.1 (but see the note on the
// controller's metrics listener).
func (s *Stack) startArgo(ctx context.Context) error {
	s.progress("installing Argo CD's settings in namespace %s", s.ArgoNamespace)
	if err := s.Apply(ctx, fmt.Sprintf(argoInstall, s.ArgoNamespace, randomHex(16))); err != nil {
		return err
	}
	p, err := ports(4)
	if err != nil {
		return err
	}
	redisPort, repoPort, repoMetrics, ctrlMetrics := p[0], p[1], p[2], p[3]

	s.progress("starting redis on %s", addr(redisPort))
	redisDir := filepath.Join(s.dir, "redis")
	if err := mkdirs(redisDir); err != nil {
		return err
	}
	redis, err := s.startSystem("redis", "redis-server",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(redisPort), "--dir", redisDir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--loglevel", "warning")
	if err != nil {
		return err
	}
	if err := waitTCP(ctx, redis, redisPort); err != nil {
		return err
	}

	conf := filepath.Join(s.dir, "argocd-conf")
	env := []string{
		// git-verify-wrapper.sh, which the repo-server runs from $PATH,
		// is installed next to the binaries.
		"PATH=" + s.opts.BinDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		// The in-cluster destination (https://kubernetes.default.svc) is
		// reached through $KUBECONFIG instead of a pod's service account.
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_APP_CONF_PATH=" + conf,
		"ARGOCD_GNUPGHOME=" + filepath.Join(conf, "gnupg"),
		"ARGOCD_TLS_DATA_PATH=" + filepath.Join(conf, "tls"),
		"ARGOCD_SSH_DATA_PATH=" + filepath.Join(conf, "ssh"),
	}
	if err := mkdirs(filepath.Join(conf, "gnupg"), filepath.Join(conf, "tls"), filepath.Join(conf, "ssh")); err != nil {
		return err
	}
	s.progress("starting argocd-repo-server on %s", addr(repoPort))
	repo, err := s.start("argocd-repo-server", "argocd-repo-server", env,
		"--address", "127.0.0.1", "--port", strconv.Itoa(repoPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(repoMetrics),
		"--redis", addr(redisPort), "--disable-tls", "--client-ca-path=",
		"--logformat", "text", "--loglevel", "info")
	if err != nil {
		return err
	}
	if err := waitTCP(ctx, repo, repoPort); err != nil {
		return err
	}

	// The controller's metrics and health listener is hard-wired upstream
	// to 0.0.0.0:--metrics-port; every other listener here is loopback.
	s.progress("starting argocd-application-controller (metrics on port %d)", ctrlMetrics)
	ctrl, err := s.start("argocd-application-controller", "argocd-application-controller", env,
		"--kubeconfig", s.cluster.Kubeconfig, "--namespace", s.ArgoNamespace,
		"--redis", addr(redisPort),
		"--repo-server", addr(repoPort), "--repo-server-plaintext",
		"--metrics-port", strconv.Itoa(ctrlMetrics),
		"--app-resync", strconv.Itoa(int(s.opts.AppResync.Seconds())),
		"--status-processors", "4", "--operation-processors", "4",
		"--logformat", "text", "--loglevel", "info")
	if err != nil {
		return err
	}
	return waitHTTP(ctx, ctrl, "http://"+addr(ctrlMetrics)+"/healthz")
}
