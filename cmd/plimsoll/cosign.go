package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"plimsoll.dev/plimsoll/sync/artifact"
)

// cosignTrust are the flags of what a kind of OCI content must be signed
// with (docs/oci.md#verification): cosign public keys, a keyless
// identity, or both. prefix names the flags: --<prefix>-verify-key and
// the rest.
type cosignTrust struct {
	prefix           string
	keyFile          string
	rootFile         string
	issuer, identity string
}

// addFlags registers the flags; what says what they check ("artifacts",
// "the charts from OCI registries") and verb what is done with it.
func (c *cosignTrust) addFlags(fs *pflag.FlagSet, verb, what string) {
	fs.StringVar(&c.keyFile, c.prefix+"-verify-key", "", "cosign public keys (PEM, as cosign.pub): "+verb+" only "+what+" signed by one of them (or by the keyless identity)")
	fs.StringVar(&c.rootFile, c.prefix+"-verify-trusted-root", "", "Sigstore trusted root (trusted_root.json) that keyless signatures of "+what+" are verified against offline; with --"+c.prefix+"-verify-issuer and --"+c.prefix+"-verify-identity")
	fs.StringVar(&c.issuer, c.prefix+"-verify-issuer", "", "OIDC issuer of the keyless signatures of "+what+" to trust: a regular expression matched against the whole issuer")
	fs.StringVar(&c.identity, c.prefix+"-verify-identity", "", "identity of the keyless signatures of "+what+" to trust (the certificate's e-mail or URI): a regular expression matched against the whole of it")
}

// flag is the name of one of the flags.
func (c *cosignTrust) flag(name string) string { return "--" + c.prefix + "-verify-" + name }

// read reads the keys and the keyless identity of the flags; nil when
// none is set. The keyless flags go together.
func (c *cosignTrust) read() (*artifact.Keys, error) {
	var keys *artifact.Keys
	if c.keyFile != "" {
		k, err := readKeys(c.flag("key"), c.keyFile, artifact.ReadKeys)
		if err != nil {
			return nil, err
		}
		keys = k
	}
	keyless := map[string]bool{c.flag("trusted-root"): c.rootFile != "", c.flag("issuer"): c.issuer != "", c.flag("identity"): c.identity != ""}
	if !keyless[c.flag("trusted-root")] && !keyless[c.flag("issuer")] && !keyless[c.flag("identity")] {
		return keys, nil
	}
	for _, f := range []string{c.flag("trusted-root"), c.flag("issuer"), c.flag("identity")} {
		if !keyless[f] {
			return nil, fmt.Errorf("%s is required with the other keyless flags (%s, %s and %s go together)", f, c.flag("trusted-root"), c.flag("issuer"), c.flag("identity"))
		}
	}
	text, err := os.ReadFile(c.rootFile)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.flag("trusted-root"), err)
	}
	keys, err = keys.WithKeyless(text, c.issuer, c.identity)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", c.flag("trusted-root"), c.rootFile, err)
	}
	return keys, nil
}
