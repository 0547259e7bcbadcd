package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"plimsoll.dev/plimsoll/daemon/fleet"
	psync "plimsoll.dev/plimsoll/sync"
	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/declare"
	"plimsoll.dev/plimsoll/sync/helm"
	"plimsoll.dev/plimsoll/sync/source"
)

// ociOptions are the flags of a sync whose manifests come from an OCI
// artifact rather than Git (docs/oci.md).
type ociOptions struct {
	repository  string
	tag, semver string
	digest      string
	plainHTTP   bool
	// verify is what its artifacts must be signed with.
	verify cosignTrust
}

func (o *ociOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.repository, "oci-repository", "", "take the manifests from an OCI artifact of this repository (oci://host[:port]/path), as flux push artifact and oras push make them, instead of Git (--repo)")
	fs.StringVar(&o.tag, "oci-tag", "", "tag of the artifact to follow (default latest)")
	fs.StringVar(&o.semver, "oci-semver", "", "follow the highest tag in this semver range (such as '>=1.2.0 <2.0.0') instead of one tag")
	fs.StringVar(&o.digest, "oci-digest", "", "apply this digest (sha256:...) of the repository and no other")
	fs.BoolVar(&o.plainHTTP, "oci-plain-http", false, "talk to the registry of --oci-repository over plain HTTP")
	o.verify.prefix = "oci"
	o.verify.addFlags(fs, "apply", "artifacts")
}

// ociFlags are the flags only an OCI source takes, and gitFlags those
// only a Git one does: each is refused with the other source.
func (o *sourceOptions) ociFlags() map[string]bool {
	return map[string]bool{"--oci-tag": o.oci.tag != "", "--oci-semver": o.oci.semver != "", "--oci-digest": o.oci.digest != "",
		"--oci-plain-http": o.oci.plainHTTP, "--oci-verify-key": o.oci.verify.keyFile != "",
		"--oci-verify-trusted-root": o.oci.verify.rootFile != "", "--oci-verify-issuer": o.oci.verify.issuer != "",
		"--oci-verify-identity": o.oci.verify.identity != ""}
}

func (o *sourceOptions) gitFlags() map[string]bool {
	return map[string]bool{"--verify-key": o.verifyKeyFile != "", "--verify-ssh-key": o.verifySSHKeyFile != "",
		"--git-username": o.gitUsername != "", "--git-password-file": o.gitPasswordFile != "", "--git-password-env": o.gitPasswordEnv != "",
		"--git-token-file": o.gitTokenFile != "", "--git-token-env": o.gitTokenEnv != "", "--ssh-key-file": o.sshKeyFile != "",
		"--ssh-known-hosts-file": o.sshKnownHostsFile != "", "--ssh-key-passphrase-file": o.sshKeyPassphraseFile != "",
		"--hold-rewinds": o.holdRewinds}
}

// isOCI reports whether the sync's manifests come from an OCI artifact,
// after checking that the flags name one source, with only its flags.
func (o *sourceOptions) isOCI() (bool, error) {
	switch {
	case o.repo != "" && o.oci.repository != "":
		return false, errors.New("give --repo (a Git repository) or --oci-repository (an OCI artifact), not both")
	case o.repo == "" && o.oci.repository == "":
		return false, errors.New("--repo (a Git repository) or --oci-repository (an OCI artifact) is required")
	}
	oci := o.oci.repository != ""
	wrong, other := o.ociFlags(), "--oci-repository"
	if oci {
		wrong, other = o.gitFlags(), "--repo"
	}
	for _, flag := range slices.Sorted(maps.Keys(wrong)) {
		if wrong[flag] {
			return false, fmt.Errorf("%s goes with %s, not with the source given", flag, other)
		}
	}
	return oci, nil
}

// artifactConfig builds the OCI source configuration from the flags: the
// reference checked, the keys and keyless identity of --oci-verify-* read, the registry
// credentials of --helm-credentials-file.
func (o *sourceOptions) artifactConfig() (artifact.Config, error) {
	ref, err := artifact.ParseRef(o.oci.repository, o.oci.tag, o.oci.semver, o.oci.digest)
	if err != nil {
		return artifact.Config{}, fmt.Errorf("--oci-repository: %w", err)
	}
	cfg := artifact.Config{Ref: ref, PlainHTTP: o.oci.plainHTTP, Timeout: o.gitTimeout}
	if cfg.Keys, err = o.oci.verify.read(); err != nil {
		return artifact.Config{}, err
	}
	if o.helmCredentialsFile != "" {
		creds, err := helm.LoadCredentials(o.helmCredentialsFile)
		if err != nil {
			return artifact.Config{}, fmt.Errorf("--helm-credentials-file: %w", err)
		}
		cfg.Credentials = creds
	}
	return cfg, nil
}

// artifactSource builds the OCI source of the flags, and the key the
// fleet knows it by.
func (o *sourceOptions) artifactSource() (*artifact.Source, fleet.RepoKey, error) {
	cfg, err := o.artifactConfig()
	if err != nil {
		return nil, fleet.RepoKey{}, err
	}
	src, err := artifact.New(cfg)
	if err != nil {
		return nil, fleet.RepoKey{}, err
	}
	key := fleet.RepoKey{URL: cfg.Ref.String(), Verify: cfg.Keys.ID()}
	if cfg.Credentials != nil {
		key.Credentials = "flags"
	}
	return src, key, nil
}

// newSource builds the source of the flags' sync: a Git repository, or
// an OCI artifact.
func (o *sourceOptions) newSource() (psync.Source, error) {
	oci, err := o.isOCI()
	switch {
	case err != nil:
		return nil, err
	case oci:
		src, _, err := o.artifactSource()
		if err != nil {
			return nil, err
		}
		return src, nil
	}
	cfg, err := o.sourceConfig()
	if err != nil {
		return nil, err
	}
	return source.New(cfg)
}

// rootRepo is the fleet's Repo of the flags' sync, its source built once
// from the flags.
func (m *many) rootRepo() (*fleet.Repo, error) {
	o := m.o
	oci, err := o.isOCI()
	switch {
	case err != nil:
		return nil, err
	case oci:
		src, key, err := o.artifactSource()
		if err != nil {
			return nil, err
		}
		return m.fleet.Repo(key, openOnce(src)), nil
	}
	srcCfg, err := o.sourceConfig()
	if err != nil {
		return nil, err
	}
	key := fleet.RepoKey{URL: srcCfg.URL, Branch: srcCfg.Branch, Verify: keysDigest(o.verifyKeyFile, o.verifySSHKeyFile)}
	if srcCfg.Auth.Password != "" || len(srcCfg.Auth.SSHKey) > 0 {
		key.Credentials = "flags"
	}
	srcCfg.Dir = filepath.Join(o.cacheDir, repoDirName(key))
	repo, err := source.New(srcCfg)
	if err != nil {
		return nil, err
	}
	return m.fleet.Repo(key, openOnce(repo)), nil
}

// openOnce is the Opener of a source built once, from the flags.
func openOnce(src psync.Source) fleet.Opener {
	return func(_ context.Context, version string) (psync.Source, string, error) {
		if version != "" {
			return nil, version, nil
		}
		return src, "flags", nil
	}
}

// declaredKey is the fleet's key of a declared sync's source: its Git
// repository and branch, or its artifact reference (tag, range or
// digest included), with its credentials and keys.
func declaredKey(spec *declare.Spec) fleet.RepoKey {
	key := fleet.RepoKey{URL: spec.Repository, Branch: spec.Branch, Credentials: spec.Credentials, Verify: textDigest(spec.Verify[:]...)}
	if spec.OCI != nil {
		key.URL = spec.OCI.String()
	}
	return key
}

// Keys of a declared OCI sync's credentials Secret besides username,
// password and token: a kubernetes.io/dockerconfigjson Secret's, as Flux
// reads for an OCIRepository.
const credentialDockerConfig = ".dockerconfigjson"

// openArtifact builds the artifact source of a declared sync, logged in
// with the credentials of its Secret (data, nil without one): a Docker
// config.json under .dockerconfigjson, else username and password (or a
// token) for every host.
func (m *many) openArtifact(spec *declare.Spec, data map[string][]byte) (*artifact.Source, error) {
	cfg := artifact.Config{Ref: *spec.OCI, PlainHTTP: spec.PlainHTTP, Keys: spec.CosignKeys, Timeout: m.o.gitTimeout}
	switch {
	case len(data[credentialDockerConfig]) > 0:
		creds, err := helm.ParseCredentials(data[credentialDockerConfig], "Secret "+m.o.syncsNamespace+"/"+spec.Credentials+" key "+credentialDockerConfig)
		if err != nil {
			return nil, fmt.Errorf("read the credentials of sync %s: %w", spec.Name, err)
		}
		cfg.Credentials = creds
	case len(data) > 0:
		password := string(data[credentialPassword])
		if token := string(data[credentialToken]); token != "" {
			password = token
		}
		cfg.Credentials = anyHost{user: string(data[credentialUsername]), password: password}
	}
	src, err := artifact.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("open the artifact of sync %s: %w", spec.Name, err)
	}
	return src, nil
}

// anyHost is one user name and password, for the registry of a sync's
// artifact whatever its host.
type anyHost struct{ user, password string }

// ForHost returns the credentials, for every host.
func (a anyHost) ForHost(string) (user, password string, ok bool) {
	return a.user, a.password, a.user != "" || a.password != ""
}

// sourceAttrs are the log attributes of where the manifests come from:
// the Git repository and branch, or the OCI repository.
func (o *sourceOptions) sourceAttrs() []any {
	if o.oci.repository != "" {
		return []any{"ociRepository", o.oci.repository}
	}
	return []any{"repo", o.repo, "branch", o.branch}
}
