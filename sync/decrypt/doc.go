// Package decrypt opens the SOPS-encrypted files of a commit, in memory,
// as the sync renders it: manifests (YAML and JSON, whole or with
// encrypted_regex and the other partial modes), the env and files a
// kustomize secretGenerator reads, and Helm values files. FS wraps the
// commit's file system: a file that SOPS encrypted reads as its
// plaintext, any other file as it is. Nothing decrypted is written
// anywhere; it lives in the wrapper for one render and goes with it.
//
// The keys are age identities and OpenPGP private keys, read from a
// Secret under Flux's key names: every data key ending in ".agekey"
// holds age identities ("AGE-SECRET-KEY-1...", one a line, "#" comments
// allowed), every key ending in ".asc" an armored OpenPGP private key
// without a passphrase. Both are used in process: OpenPGP needs no gpg
// binary. Keys of cloud KMS services and Vault are not read.
//
// A file is SOPS-encrypted when it carries SOPS's metadata: a top-level
// "sops" map holding a "mac" (YAML, JSON, and the JSON envelope of any
// other file), a "sops_mac" line (dotenv) or a [sops] section (INI). The
// format is told from the file's name, as the sops command does: .yaml,
// .yml, .json, .env, .ini, and the binary envelope for the others.
//
// Errors say which file could not be read and why: no key configured, a
// file encrypted for keys the Secret does not hold (naming both), a value
// or the MAC that does not match (the file was changed after it was
// encrypted), metadata that cannot be read. No error quotes a decrypted
// value or a private key.
package decrypt
