package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"plimsoll.dev/plimsoll/analysis"
	"plimsoll.dev/plimsoll/internal/redact"
	"plimsoll.dev/plimsoll/sync/source"
	"plimsoll.dev/plimsoll/sync/window"
)

// Defaults of the command line.
const (
	defaultBranch     = "main"
	defaultNamespace  = "default"
	defaultSyncName   = "default"
	defaultListen     = ":8080"
	defaultGitTimeout = 60 * time.Second
	// inClusterNamespaceFile holds the namespace of a pod's ServiceAccount.
	inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
	// clientQPS and clientBurst let a sync of thousands of objects go at
	// the API server's pace rather than client-go's default 5 QPS.
	clientQPS   = 1000
	clientBurst = 2000
)

// sourceOptions are the flags shared by run, sync and diff: where the
// manifests come from and where they go.
type sourceOptions struct {
	repo, branch, path string
	interval           time.Duration
	kubeconfig         string
	kubeContext        string
	namespace          string
	watchNamespaces    []string
	syncName           string
	statusNamespace    string
	prune, allowEmpty  bool
	// holdRewinds is --hold-rewinds (run and sync only).
	holdRewinds bool
	windows     []string
	cacheDir    string
	gitTimeout  time.Duration
	logFormat   string
	logLevel    string

	gitUsername                     string
	gitPasswordFile, gitPasswordEnv string
	gitTokenFile, gitTokenEnv       string
	sshKeyFile, sshKnownHostsFile   string
	sshKeyPassphraseFile            string
	verifyKeyFile, verifySSHKeyFile string

	prometheusURL, prometheusTokenFile string
	// helmCredentialsFile is --helm-credentials-file; helmVerify is what
	// charts from OCI registries must be signed with (--helm-verify-*).
	helmCredentialsFile string
	helmVerify          cosignTrust
	// decryption is --decryption-secret and --decryption-required.
	decryption decryptionOptions
	// oci are the flags of an OCI artifact source.
	oci ociOptions
}

func (o *sourceOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.repo, "repo", "", "Git repository URL (file://, https://, ssh:// or git@host:path); required unless --oci-repository")
	fs.StringVar(&o.branch, "branch", defaultBranch, "branch to follow")
	fs.StringVar(&o.path, "path", ".", "directory of the repository to render")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&o.kubeContext, "context", "", "kubeconfig context to use")
	fs.StringVar(&o.namespace, "namespace", defaultNamespace, "namespace for namespaced objects that set none")
	fs.StringSliceVar(&o.watchNamespaces, "watch-namespace", nil, "limit the daemon to these namespaces (repeatable or comma-separated): it watches and writes only there, and refuses a commit with an object elsewhere or a cluster-scoped one (default: all namespaces)")
	fs.StringVar(&o.syncName, "sync-name", defaultSyncName, "name of this sync: its status ConfigMap is plimsoll-sync-<name>")
	fs.StringVar(&o.statusNamespace, "status-namespace", "", "namespace of the status ConfigMap (default: the daemon's own namespace in a cluster, else --namespace)")
	fs.BoolVar(&o.prune, "prune", true, "delete objects that left Git")
	fs.BoolVar(&o.allowEmpty, "allow-empty", false, "allow a commit that renders no object (and so prunes everything)")
	fs.StringArrayVar(&o.windows, "window", nil, "sync window 'deny|allow CRON DURATION' (UTC); repeatable")
	fs.StringVar(&o.cacheDir, "cache-dir", filepath.Join(os.TempDir(), "plimsoll"), "directory for the local clone")
	fs.DurationVar(&o.gitTimeout, "git-timeout", defaultGitTimeout, "timeout of every Git network call")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "lowest level logged: debug, info, warn or error (debug adds each action the rollout controller executes)")

	fs.StringVar(&o.gitUsername, "git-username", "", "HTTPS username (default \"git\" with a token)")
	fs.StringVar(&o.gitPasswordFile, "git-password-file", "", "file holding the HTTPS password")
	fs.StringVar(&o.gitPasswordEnv, "git-password-env", "", "environment variable holding the HTTPS password")
	fs.StringVar(&o.gitTokenFile, "git-token-file", "", "file holding an HTTPS token")
	fs.StringVar(&o.gitTokenEnv, "git-token-env", "", "environment variable holding an HTTPS token")
	fs.StringVar(&o.sshKeyFile, "ssh-key-file", "", "SSH private key file")
	fs.StringVar(&o.sshKeyPassphraseFile, "ssh-key-passphrase-file", "", "file holding the SSH key's passphrase")
	fs.StringVar(&o.sshKnownHostsFile, "ssh-known-hosts-file", "", "known_hosts file; required with SSH")
	fs.StringVar(&o.verifyKeyFile, "verify-key", "", "armored OpenPGP public keys: apply only commits signed by one of them (with --verify-ssh-key, by a key of either)")
	fs.StringVar(&o.verifySSHKeyFile, "verify-ssh-key", "", "allowed_signers file (the format of ssh-keygen -Y verify and git's gpg.ssh.allowedSignersFile): apply only commits SSH-signed by one of its keys (with --verify-key, by a key of either)")
	fs.StringVar(&o.prometheusURL, "prometheus-url", "", "Prometheus the analyses' prometheus metrics query (e.g. http://prometheus.monitoring:9090)")
	fs.StringVar(&o.prometheusTokenFile, "prometheus-token-file", "", "file holding a bearer token for --prometheus-url")
	fs.StringVar(&o.helmCredentialsFile, "helm-credentials-file", "", "credentials of Helm chart repositories and OCI registries (those of charts and of --oci-repository), in the format of Docker's config.json (what helm registry login writes)")
	o.decryption.addFlags(fs)
	o.helmVerify.prefix = "helm"
	o.helmVerify.addFlags(fs, "render", "the charts from OCI registries")
	o.oci.addFlags(fs)
}

// measurer builds the analyses' measurer from the flags: Prometheus at
// --prometheus-url with the token of --prometheus-token-file, and client
// for Jobs and the Secrets of web checks.
func (o *sourceOptions) measurer(client kubernetes.Interface) (*analysis.Measurer, error) {
	cfg := analysis.Config{PrometheusURL: o.prometheusURL, Client: client}
	if o.prometheusURL != "" {
		if u, err := url.Parse(o.prometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--prometheus-url %q: want an http or https URL", redact.URL(o.prometheusURL))
		}
	}
	if o.prometheusTokenFile != "" {
		token, err := os.ReadFile(o.prometheusTokenFile)
		if err != nil {
			return nil, fmt.Errorf("read --prometheus-token-file: %w", err)
		}
		cfg.PrometheusBearerToken = strings.TrimSpace(string(token))
	}
	return analysis.NewMeasurer(cfg), nil
}

// newLogger builds the structured logger the flags ask for.
func (o *sourceOptions) newLogger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, fmt.Errorf("unknown --log-level %q (want debug, info, warn or error)", o.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("unknown --log-format %q (want text or json)", o.logFormat)
}

// restConfig loads the cluster connection the way kubectl does.
func (o *sourceOptions) restConfig() (*rest.Config, error) {
	cfg, _, err := loadKubeconfig(o.kubeconfig, o.kubeContext)
	return cfg, err
}

// loadKubeconfig loads the connection to the cluster the way kubectl does
// (an explicit file, else $KUBECONFIG or ~/.kube/config, else in-cluster),
// with context kubeContext when set, and returns the context's namespace
// ("" when it names none).
func loadKubeconfig(kubeconfig, kubeContext string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("load kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		ns = ""
	}
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.UserAgent = "plimsoll/" + version
	return cfg, ns, nil
}

// protobuf returns a copy of cfg that speaks protobuf, as the cluster's own
// controllers do, for the clientset of the built-in kinds. The rollout
// controller's informers see every event of every pod of its workloads
// (20,000 while 1,000 workloads of 10 pods roll). The API server encodes
// each event in protobuf for the controller manager and the scheduler
// already and hands another protobuf watcher the same bytes, where a JSON
// watcher costs it a second encoding; and protobuf is the cheaper of the
// two for the daemon to decode. The dynamic client of the sync stays on
// JSON: it handles any kind, custom ones too.
func protobuf(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeProtobuf
	out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return out
}

// resolveStatusNamespace applies the --status-namespace default: the
// daemon's own namespace when it runs in a pod, else --namespace.
func (o *sourceOptions) resolveStatusNamespace() string {
	if o.statusNamespace != "" {
		return o.statusNamespace
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if raw, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(raw)); ns != "" {
			return ns
		}
	}
	return o.namespace
}

// sourceConfig reads the credentials the flags point at and builds the Git
// source configuration. Secrets are read from files or the environment,
// never from flags, so they do not show in the process list.
func (o *sourceOptions) sourceConfig() (source.Config, error) {
	if o.repo == "" {
		return source.Config{}, fmt.Errorf("--repo is required")
	}
	cfg := source.Config{
		URL:     o.repo,
		Branch:  o.branch,
		Timeout: o.gitTimeout,
		Dir:     filepath.Join(o.cacheDir, cloneDirName(o.repo, o.branch)),
	}
	password, err := secretFrom(o.gitPasswordFile, o.gitPasswordEnv, "Git password")
	if err != nil {
		return source.Config{}, err
	}
	token, err := secretFrom(o.gitTokenFile, o.gitTokenEnv, "Git token")
	if err != nil {
		return source.Config{}, err
	}
	passphrase, err := secretFrom(o.sshKeyPassphraseFile, "", "SSH key passphrase")
	if err != nil {
		return source.Config{}, err
	}
	cfg.Auth = source.Auth{Username: o.gitUsername, Password: password, SSHKeyPassphrase: passphrase}
	if token != "" {
		cfg.Auth.Password = token
	}
	for _, f := range []struct {
		flag, file string
		into       *[]byte
	}{
		{"--ssh-key-file", o.sshKeyFile, &cfg.Auth.SSHKey},
		{"--ssh-known-hosts-file", o.sshKnownHostsFile, &cfg.Auth.KnownHosts},
	} {
		if f.file == "" {
			continue
		}
		if *f.into, err = os.ReadFile(f.file); err != nil {
			return source.Config{}, fmt.Errorf("read %s: %w", f.flag, err)
		}
	}
	if o.verifyKeyFile != "" {
		if cfg.Keyring, err = readKeys("--verify-key", o.verifyKeyFile, source.ReadKeyring); err != nil {
			return source.Config{}, err
		}
	}
	if o.verifySSHKeyFile != "" {
		if cfg.AllowedSigners, err = readKeys("--verify-ssh-key", o.verifySSHKeyFile, source.ReadAllowedSigners); err != nil {
			return source.Config{}, err
		}
	}
	return cfg, nil
}

// readKeys reads the verification keys in the file flag names, with
// parse; an error names the flag and the file.
func readKeys[K any](flag, file string, parse func([]byte) (K, error)) (K, error) {
	var none K
	text, err := os.ReadFile(file)
	if err != nil {
		return none, fmt.Errorf("read %s: %w", flag, err)
	}
	keys, err := parse(text)
	if err != nil {
		return none, fmt.Errorf("read %s %s: %w", flag, file, err)
	}
	return keys, nil
}

// windows parses the --window flags.
func (o *sourceOptions) parseWindows() (window.Windows, error) {
	return window.ParseAll(o.windows)
}

// parseWatchNamespaces checks --watch-namespace: namespace names, each
// once; nil when the daemon may use every namespace.
func (o *sourceOptions) parseWatchNamespaces() ([]string, error) {
	var out []string
	for _, ns := range o.watchNamespaces {
		ns = strings.TrimSpace(ns)
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return nil, fmt.Errorf("--watch-namespace %q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
		}
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// secretFrom reads a secret from a file or an environment variable (at most
// one of them set); the error names where it looked, never the value.
func secretFrom(file, env, what string) (string, error) {
	switch {
	case file != "" && env != "":
		return "", fmt.Errorf("%s: give a file or an environment variable, not both", what)
	case file != "":
		raw, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read %s from %s: %w", what, file, err)
		}
		return strings.TrimSpace(string(raw)), nil
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return "", fmt.Errorf("read %s: environment variable %s is not set", what, env)
		}
		return strings.TrimSpace(v), nil
	}
	return "", nil
}

// cloneDirName gives each repository and branch a clone directory of its
// own, named by a digest so that the URL (which may name a user) is not
// spelled out on disk.
func cloneDirName(repo, branch string) string {
	sum := sha256.Sum256([]byte(repo + "\x00" + branch))
	return hex.EncodeToString(sum[:8])
}
