package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/sync/declare"
	"plimsoll.dev/plimsoll/sync/decrypt"
)

// decryptionOptions are the flags of a sync's decryption of the
// SOPS-encrypted files in Git.
type decryptionOptions struct {
	// secret is --decryption-secret, "namespace/name".
	secret string
	// required is --decryption-required.
	required bool
}

func (o *decryptionOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.secret, "decryption-secret", "", "Secret NAMESPACE/NAME holding the keys that decrypt the SOPS-encrypted files in Git: age identities under keys ending in .agekey, armored OpenPGP private keys under keys ending in .asc (Flux's names)")
	fs.BoolVar(&o.required, "decryption-required", false, "refuse a commit holding a Secret that is not SOPS-encrypted: a v1 Secret manifest, a secretGenerator's env or file, or its literals")
}

// decryptor builds the sync's decryption from the flags; the Secret is
// read with client before each render that meets an encrypted file.
func (o *decryptionOptions) decryptor(client kubernetes.Interface) (*decrypt.Decryptor, error) {
	if o.secret == "" {
		return decrypt.New(decrypt.Config{Required: o.required}), nil
	}
	ns, name, ok := strings.Cut(o.secret, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, fmt.Errorf("--decryption-secret %q: want NAMESPACE/NAME of a Secret", o.secret)
	}
	return secretDecryptor(client, ns, name, o.required), nil
}

// secretDecryptor decrypts with the keys of Secret namespace/name, read
// with client before each render that meets an encrypted file, so that
// a Secret rotated is used from the next sync on.
func secretDecryptor(client kubernetes.Interface, namespace, name string, required bool) *decrypt.Decryptor {
	return decrypt.New(decrypt.Config{Secret: namespace + "/" + name, Required: required,
		Load: func(ctx context.Context) (map[string][]byte, error) {
			s, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("it does not exist")
			}
			if err != nil {
				return nil, fmt.Errorf("read it: %w", err)
			}
			return s.Data, nil
		}})
}

// declaredDecryptor builds a declared sync's decryption: its Secret is in
// the declarations' namespace, as its credentials are.
func declaredDecryptor(client kubernetes.Interface, namespace string, d declare.Decryption) *decrypt.Decryptor {
	if d.Secret == "" {
		return decrypt.New(decrypt.Config{Required: d.Required})
	}
	return secretDecryptor(client, namespace, d.Secret, d.Required)
}
