package observe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestEnsureKeyCreatesOnceAndReuses(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	key, err := EnsureKey(ctx, c, "kick-system")
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != KeySize {
		t.Fatalf("generated key has %d bytes, want %d", len(key), KeySize)
	}
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kick-system", Name: KeySecretName}, &s); err != nil {
		t.Fatal(err)
	}
	if s.Immutable == nil || !*s.Immutable || !bytes.Equal(s.Data[KeySecretDataKey], key) {
		t.Errorf("stored Secret: immutable=%v, same key=%v", s.Immutable, bytes.Equal(s.Data[KeySecretDataKey], key))
	}
	again, err := EnsureKey(ctx, c, "kick-system")
	if err != nil || !bytes.Equal(again, key) {
		t.Fatalf("second call: %v, same key=%v", err, bytes.Equal(again, key))
	}
	other, _ := EnsureKey(ctx, fake.NewClientBuilder().Build(), "kick-system")
	if bytes.Equal(other, key) {
		t.Error("two installations got the same key")
	}
}

func TestEnsureKeyLosesCreateRace(t *testing.T) {
	ctx := context.Background()
	winner := bytes.Repeat([]byte{7}, KeySize)
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			// Another replica creates the Secret between our read and our create.
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()},
				Data: map[string][]byte{KeySecretDataKey: winner}}
			if err := c.Create(ctx, s); err != nil {
				return err
			}
			return apierrors.NewAlreadyExists(corev1.Resource("secrets"), obj.GetName())
		},
	}).Build()
	key, err := EnsureKey(ctx, c, "kick-system")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(key, winner) {
		t.Error("the loser of the create race did not adopt the winner's key")
	}
}

func TestEnsureKeyRejectsCorruptKey(t *testing.T) {
	ctx := context.Background()
	short := []byte("short-secret-key-material")
	c := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kick-system", Name: KeySecretName},
		Data:       map[string][]byte{KeySecretDataKey: short},
	}).Build()
	_, err := EnsureKey(ctx, c, "kick-system")
	if err == nil {
		t.Fatal("a 25-byte key was accepted")
	}
	msg := err.Error()
	for _, want := range []string{"kick-system/" + KeySecretName, "25 bytes", "delete secret", "re-baselined", "without restarting"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, string(short)) {
		t.Error("the error leaks the key")
	}
	if _, err := EnsureKey(ctx, c, ""); err == nil {
		t.Error("an empty namespace was accepted")
	}
}
