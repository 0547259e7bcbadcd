package declare

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Checker checks declarations against the cluster, with the daemon's own
// rights. It is the sync's Declarations (see sync.Declarations).
type Checker struct {
	// Client reads Secrets and ServiceAccounts, and asks the API server
	// what the daemon may do (SelfSubjectAccessReview).
	Client kubernetes.Interface
	// Where is the namespace declarations are taken from, and their
	// credentials Secrets read in.
	Where string
}

// Namespace is the namespace declarations are taken from.
func (c *Checker) Namespace() string { return c.Where }

// Check refuses, as a *FieldError, a declaration whose credentials Secret
// does not exist in the declarations' namespace, whose ServiceAccount does
// not exist, or which names a ServiceAccount the daemon may not
// impersonate (no RBAC rule gives it the verb impersonate on that
// ServiceAccount). A Secret or ServiceAccount that inCommit says the
// commit applies counts as existing.
func (c *Checker) Check(ctx context.Context, spec *Spec, inCommit func(kind, namespace, name string) bool) error {
	if name := spec.Credentials; name != "" && !inCommit("Secret", c.Where, name) {
		_, err := c.Client.CoreV1().Secrets(c.Where).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fieldErr(FieldCredentials, "Secret %s/%s does not exist", c.Where, name)
		case err != nil:
			return fmt.Errorf("read credentials Secret %s/%s: %w", c.Where, name, err)
		}
	}
	return c.CheckIdentity(ctx, spec.ServiceAccount, inCommit)
}

// CheckIdentity refuses, as a *FieldError of serviceAccount, an identity
// the daemon may not use: one that does not exist (unless inCommit says
// the commit applies it) or that it may not impersonate.
func (c *Checker) CheckIdentity(ctx context.Context, id Identity, inCommit func(kind, namespace, name string) bool) error {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: id.Namespace, Name: id.Name},
	}}
	out, err := c.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("ask whether the daemon may act as ServiceAccount %s: %w", id, err)
	}
	if !out.Status.Allowed {
		return fieldErr(FieldServiceAccount, "this daemon may not act as ServiceAccount %s: no RBAC rule gives it the verb impersonate on it", id)
	}
	if inCommit != nil && inCommit("ServiceAccount", id.Namespace, id.Name) {
		return nil
	}
	_, err = c.Client.CoreV1().ServiceAccounts(id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fieldErr(FieldServiceAccount, "ServiceAccount %s does not exist", id)
	case err != nil:
		return fmt.Errorf("read ServiceAccount %s: %w", id, err)
	}
	return nil
}
