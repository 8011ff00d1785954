package argocd

import (
	"context"
	"fmt"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Argo CD's settings ConfigMap and the keys KICK reads from it.
const (
	SettingsConfigMap    = "argocd-cm"
	keyTrackingMethod    = "application.resourceTrackingMethod"
	keyInstallationID    = "installationID"
	keyInstanceLabelKey  = "application.instanceLabelKey"
	settingsTTL          = 30 * time.Second
	settingsErrorBackoff = 5 * time.Second
)

// settingsSource reads argocd-cm past the manager's cache (which keeps no
// ConfigMap data) and remembers it for a short while, so a burst of gate
// decisions costs one GET.
type settingsSource struct {
	reader    client.Reader
	namespace string
	fallback  Settings
	ttl       time.Duration
	now       func() time.Time

	mu      sync.Mutex
	at      time.Time
	cached  Settings
	err     error
	errTill time.Time
}

func newSettingsSource(reader client.Reader, opts Options) *settingsSource {
	fallback := Settings{
		Method:         argov1alpha1.TrackingMethod(opts.TrackingMethod),
		InstallationID: opts.InstallationID,
		LabelKey:       opts.LabelKey,
	}
	if fallback.Method == "" {
		fallback.Method = argov1alpha1.TrackingMethodAnnotation
	}
	if fallback.LabelKey == "" {
		fallback.LabelKey = DefaultLabelKey
	}
	return &settingsSource{reader: reader, namespace: opts.Namespace, fallback: fallback, ttl: settingsTTL, now: time.Now}
}

// get returns the current tracking settings: argocd-cm's values where it
// sets them, the manager's flags otherwise.
func (s *settingsSource) get(ctx context.Context) (Settings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if !s.at.IsZero() && now.Sub(s.at) < s.ttl {
		return s.cached, nil
	}
	if s.err != nil && now.Before(s.errTill) {
		return Settings{}, s.err
	}
	var cm corev1.ConfigMap
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: SettingsConfigMap}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		s.cached = s.fallback
	case err != nil:
		s.err = fmt.Errorf("read ConfigMap %s/%s: %w", s.namespace, SettingsConfigMap, err)
		s.errTill = now.Add(settingsErrorBackoff)
		return Settings{}, s.err
	default:
		s.cached = settingsFrom(cm.Data, s.fallback)
	}
	s.at, s.err = now, nil
	return s.cached, nil
}

// forget drops the remembered settings (and a remembered read error), so
// the next get reads argocd-cm again.
func (s *settingsSource) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at, s.err, s.errTill = time.Time{}, nil, time.Time{}
}

// settingsFrom overlays argocd-cm data on the fallback settings.
func settingsFrom(data map[string]string, fallback Settings) Settings {
	s := fallback
	if v, ok := data[keyTrackingMethod]; ok && v != "" {
		s.Method = argov1alpha1.TrackingMethod(v)
	}
	if v, ok := data[keyInstallationID]; ok {
		s.InstallationID = v
	}
	if v, ok := data[keyInstanceLabelKey]; ok && v != "" {
		s.LabelKey = v
	}
	return s
}
