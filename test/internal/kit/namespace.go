package kit

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// maxPrefix keeps a namespace's name, with the random suffix the API
// server adds, within the 63 characters of a label.
const maxPrefix = 40

// NewNamespace creates a namespace of its own for one test, named
// prefix-<random> (prefix "": after the test's name), waits until its
// default ServiceAccount exists (pods are admitted only then; the
// controller manager creates it), and deletes it when the test ends
// (without waiting for it to go) unless it was deleted before.
func NewNamespace(t testing.TB, client kubernetes.Interface, prefix string) string {
	t.Helper()
	if prefix == "" {
		prefix = strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	}
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(prefix, "-") + "-"}}
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		err := client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete namespace %s: %v", ns.Name, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, PollInterval, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("wait for the default ServiceAccount of %s: %v", ns.Name, err)
	}
	return ns.Name
}
