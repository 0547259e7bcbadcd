// Package declare reads declared syncs: ConfigMaps labelled
// plimsoll.dev/sync-declaration whose data key sync.yaml says where a
// sync's manifests come from, how often to look, and the identity it
// writes as. A sync is named after its ConfigMap. Parse checks a
// declaration as a whole, strictly: an unknown field, a malformed
// repository URL, branch, path, interval, window, key, namespace or
// ServiceAccount is an error naming the field. What only the cluster can
// tell (does the credentials Secret exist, may the daemon act as the
// ServiceAccount) is for the caller to check (see Spec.Credentials and
// Spec.ServiceAccount).
package declare

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/source"
	"plimsoll.dev/plimsoll/sync/window"
)

// Fields of sync.yaml and limits of a declaration.
const (
	FieldRepository     = "repository"
	FieldBranch         = "branch"
	FieldPath           = "path"
	FieldInterval       = "interval"
	FieldCredentials    = "credentials"
	FieldVerify         = "verify"
	FieldDecryption     = "decryption"
	FieldWindows        = "windows"
	FieldPrune          = "prune"
	FieldNamespace      = "namespace"
	FieldServiceAccount = "serviceAccount"
	FieldOCI            = "oci"
	// Fields of verify.
	fieldOpenPGP = "openpgp"
	fieldSSH     = "ssh"
	fieldCosign  = "cosign"
	// The keyless identity an OCI artifact may be signed by: the trusted
	// root's text, the OIDC issuer and the identity, as expressions.
	fieldTrustedRoot = "trustedRoot"
	fieldIssuer      = "issuer"
	fieldIdentity    = "identity"

	// MinInterval is the shortest interval a declaration may ask for: a
	// repository polled more often than every second loads its server for
	// nothing.
	MinInterval = time.Second
	// maxDocumentBytes bounds sync.yaml; a declaration is a dozen lines.
	maxDocumentBytes = 64 << 10
)

// fields are the keys sync.yaml may hold, in the order docs/syncs.md gives
// them.
var fields = []string{FieldRepository, FieldBranch, FieldOCI, FieldPath, FieldInterval, FieldCredentials, FieldVerify, FieldDecryption,
	FieldWindows, FieldPrune, FieldNamespace, FieldServiceAccount}

// Identity is a ServiceAccount a sync writes as.
type Identity struct {
	Namespace, Name string
}

// String is "namespace/name".
func (i Identity) String() string { return i.Namespace + "/" + i.Name }

// UserName is the name the API server knows the ServiceAccount by, the
// one a request impersonates: "system:serviceaccount:<namespace>:<name>".
func (i Identity) UserName() string {
	return "system:serviceaccount:" + i.Namespace + ":" + i.Name
}

// Spec is one declared sync, checked.
type Spec struct {
	// Name is the sync's name: its declaration's name.
	Name string
	// Repository is the Git URL, or an OCI repository's oci:// URL;
	// Branch the Git branch followed (default "main"); Path the directory
	// rendered (default ".").
	Repository, Branch, Path string
	// OCI, when Repository is an oci:// URL, is the artifact followed
	// (see artifact.ParseRef), PlainHTTP whether its registry speaks plain
	// HTTP, and CosignKeys the keys it must be signed with (nil: not
	// verified). Branch is "" then.
	OCI        *artifact.Ref
	PlainHTTP  bool
	CosignKeys *artifact.Keys
	// Interval is how often the repository is polled; 0 for the daemon's
	// --interval.
	Interval time.Duration
	// Credentials names a Secret in the declaration's namespace holding
	// the Git credentials (see docs/syncs.md for its keys); "" for none.
	Credentials string
	// Keyring and AllowedSigners, when set, are the keys a commit must be
	// signed with (OpenPGP, SSH), as --verify-key and --verify-ssh-key.
	Keyring        *source.Keyring
	AllowedSigners *source.AllowedSigners
	// Verify is the text of the keys, Keyring's, AllowedSigners' then
	// CosignKeys', for telling two declarations' keys apart.
	Verify [3]string
	// Decryption is how the sync decrypts the SOPS-encrypted files of
	// its commits.
	Decryption Decryption
	// Windows hold changes while they say so; WindowSpecs are as written.
	Windows     window.Windows
	WindowSpecs []string
	// Prune deletes what left Git, and what the sync applied once its
	// declaration is gone. Default true.
	Prune bool
	// Namespace is given to namespaced objects that set none; "" for the
	// daemon's --namespace.
	Namespace string
	// ServiceAccount is the identity every write of the sync impersonates.
	ServiceAccount Identity
	// Digest tells two versions of a declaration apart: the same name and
	// document give the same digest.
	Digest string
}

// FieldError is a declaration field at fault.
type FieldError struct {
	// Field is the path of the field in sync.yaml, such as "interval" or
	// "verify.openpgp"; "" when the document as a whole is.
	Field string
	// Reason says what is wrong, for people.
	Reason string
}

// Error is "field interval: ..." or, for the whole document, the reason.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return "field " + e.Field + ": " + e.Reason
}

// fieldErr builds a FieldError.
func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// IsDeclaration reports whether labels mark a declaration.
func IsDeclaration(labels map[string]string) bool {
	_, ok := labels[contract.LabelSyncDeclaration]
	return ok
}

// Parse reads the declaration cm. Its error is a *FieldError, naming the
// field of sync.yaml at fault, or the ConfigMap's name when that is.
func Parse(cm *corev1.ConfigMap) (*Spec, error) {
	if msgs := validation.IsDNS1123Label(cm.Name); len(msgs) > 0 {
		return nil, &FieldError{Reason: fmt.Sprintf("name %q is not a sync name (the sync is named after its declaration): %s", cm.Name, strings.Join(msgs, "; "))}
	}
	data, ok := cm.Data[contract.SyncDeclarationKey]
	if !ok {
		return nil, &FieldError{Reason: fmt.Sprintf("data key %s is missing: a declaration holds its sync in it", contract.SyncDeclarationKey)}
	}
	doc, err := decode([]byte(data))
	if err != nil {
		return nil, err
	}
	spec, err := doc.spec(cm.Name)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(cm.Name + "\x00" + data))
	spec.Digest = hex.EncodeToString(sum[:8])
	return spec, nil
}

// document is sync.yaml as written.
type document struct {
	Repository     string        `yaml:"repository"`
	Branch         string        `yaml:"branch"`
	OCI            ociDoc        `yaml:"oci"`
	Path           string        `yaml:"path"`
	Interval       string        `yaml:"interval"`
	Credentials    string        `yaml:"credentials"`
	Verify         verifyDoc     `yaml:"verify"`
	Decryption     decryptionDoc `yaml:"decryption"`
	Windows        []string      `yaml:"windows"`
	Prune          *bool         `yaml:"prune"`
	Namespace      string        `yaml:"namespace"`
	ServiceAccount string        `yaml:"serviceAccount"`
}

type verifyDoc struct {
	OpenPGP     string `yaml:"openpgp"`
	SSH         string `yaml:"ssh"`
	Cosign      string `yaml:"cosign"`
	TrustedRoot string `yaml:"trustedRoot"`
	Issuer      string `yaml:"issuer"`
	Identity    string `yaml:"identity"`
}

// keyless reports whether any field of the keyless identity is given.
func (v verifyDoc) keyless() bool { return v.TrustedRoot != "" || v.Issuer != "" || v.Identity != "" }

// decode reads the one YAML document of sync.yaml, refusing unknown and
// repeated fields by name before any value is read.
func decode(data []byte) (*document, error) {
	if len(data) > maxDocumentBytes {
		return nil, &FieldError{Reason: fmt.Sprintf("%s is %d bytes, more than the %d a declaration may hold", contract.SyncDeclarationKey, len(data), maxDocumentBytes)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Reason: contract.SyncDeclarationKey + " is empty"}
		}
		return nil, &FieldError{Reason: fmt.Sprintf("%s is not YAML: %v", contract.SyncDeclarationKey, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &FieldError{Reason: contract.SyncDeclarationKey + " holds more than one YAML document"}
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, &FieldError{Reason: contract.SyncDeclarationKey + " is not a mapping of fields"}
	}
	if err := knownKeys(top, "", fields); err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		nested := map[string][]string{FieldVerify: {fieldOpenPGP, fieldSSH, fieldCosign, fieldTrustedRoot, fieldIssuer, fieldIdentity}, FieldOCI: ociFields, FieldDecryption: decryptionFields}
		if allowed, ok := nested[top.Content[i].Value]; ok {
			if err := knownKeys(top.Content[i+1], top.Content[i].Value+".", allowed); err != nil {
				return nil, err
			}
		}
	}
	doc := &document{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, value := top.Content[i].Value, top.Content[i+1]
		if err := decodeField(doc, key, value); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// knownKeys refuses a key of mapping n that is not in allowed, or is given
// twice; prefix starts the field paths of n's keys.
func knownKeys(n *yaml.Node, prefix string, allowed []string) error {
	if n.Kind != yaml.MappingNode {
		return fieldErr(strings.TrimSuffix(prefix, "."), "want a mapping of fields")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch {
		case !slices.Contains(allowed, k.Value):
			return fieldErr(prefix+k.Value, "unknown field (a declaration has %s)", strings.Join(allowed, ", "))
		case seen[k.Value]:
			return fieldErr(prefix+k.Value, "given twice")
		}
		seen[k.Value] = true
	}
	return nil
}

// decodeField reads the value of field key into doc.
func decodeField(doc *document, key string, value *yaml.Node) error {
	targets := map[string]any{
		FieldRepository: &doc.Repository, FieldBranch: &doc.Branch, FieldPath: &doc.Path, FieldInterval: &doc.Interval,
		FieldCredentials: &doc.Credentials, FieldVerify: &doc.Verify, FieldWindows: &doc.Windows, FieldPrune: &doc.Prune,
		FieldNamespace: &doc.Namespace, FieldServiceAccount: &doc.ServiceAccount, FieldOCI: &doc.OCI, FieldDecryption: &doc.Decryption,
	}
	if err := value.Decode(targets[key]); err != nil {
		return fieldErr(key, "line %d: want %s", value.Line, want(key))
	}
	return nil
}

// want says what field takes, for its type errors.
func want(field string) string {
	switch field {
	case FieldVerify:
		return "a mapping of openpgp, ssh and cosign keys"
	case FieldOCI:
		return "a mapping of tag, semver, digest and plainHTTP"
	case FieldDecryption:
		return "a mapping of secret (a Secret's name) and required (true or false)"
	case FieldWindows:
		return "a list of windows ('deny|allow CRON DURATION')"
	case FieldPrune:
		return "true or false"
	}
	return "a string"
}

// spec checks the document of the declaration name.
func (d *document) spec(name string) (*Spec, error) {
	s := &Spec{Name: name, Branch: d.Branch, Path: d.Path, Credentials: d.Credentials, Namespace: d.Namespace, Prune: true}
	if d.Repository == "" {
		return nil, fieldErr(FieldRepository, "required: the Git URL of the sync's manifests, or an OCI repository's oci:// URL")
	}
	s.Repository = d.Repository
	if err := s.readSource(d); err != nil {
		return nil, err
	}
	p, err := cleanPath(d.Path)
	if err != nil {
		return nil, fieldErr(FieldPath, "%v", err)
	}
	s.Path = p
	if d.Interval != "" {
		iv, err := time.ParseDuration(d.Interval)
		switch {
		case err != nil:
			return nil, fieldErr(FieldInterval, "%q is not a duration (such as 30s or 5m)", d.Interval)
		case iv < MinInterval:
			return nil, fieldErr(FieldInterval, "%s is shorter than the shortest interval, %s", iv, MinInterval)
		}
		s.Interval = iv
	}
	if d.Credentials != "" {
		if msgs := validation.IsDNS1123Subdomain(d.Credentials); len(msgs) > 0 {
			return nil, fieldErr(FieldCredentials, "%q is not a Secret name: %s", d.Credentials, strings.Join(msgs, "; "))
		}
	}
	if err := s.readKeys(d.Verify); err != nil {
		return nil, err
	}
	if s.Decryption, err = readDecryption(d.Decryption); err != nil {
		return nil, err
	}
	for i, w := range d.Windows {
		parsed, err := window.Parse(w)
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("%s[%d]", FieldWindows, i), "%v", err)
		}
		s.Windows = append(s.Windows, parsed)
		s.WindowSpecs = append(s.WindowSpecs, w)
	}
	if d.Prune != nil {
		s.Prune = *d.Prune
	}
	if d.Namespace != "" {
		if msgs := validation.IsDNS1123Label(d.Namespace); len(msgs) > 0 {
			return nil, fieldErr(FieldNamespace, "%q is not a namespace name: %s", d.Namespace, strings.Join(msgs, "; "))
		}
	}
	id, err := parseIdentity(d.ServiceAccount)
	if err != nil {
		return nil, fieldErr(FieldServiceAccount, "%v", err)
	}
	s.ServiceAccount = id
	return s, nil
}

// readKeys reads the verification keys of v into s.
func (s *Spec) readKeys(v verifyDoc) error {
	if v.OpenPGP != "" {
		k, err := source.ReadKeyring([]byte(v.OpenPGP))
		if err != nil {
			return fieldErr(FieldVerify+"."+fieldOpenPGP, "%v", err)
		}
		s.Keyring = k
	}
	if v.SSH != "" {
		k, err := source.ReadAllowedSigners([]byte(v.SSH))
		if err != nil {
			return fieldErr(FieldVerify+"."+fieldSSH, "%v", err)
		}
		s.AllowedSigners = k
	}
	if v.Cosign != "" {
		k, err := artifact.ReadKeys([]byte(v.Cosign))
		if err != nil {
			return fieldErr(FieldVerify+"."+fieldCosign, "%v", err)
		}
		s.CosignKeys = k
	}
	cosign := v.Cosign
	if v.keyless() {
		if err := s.readKeyless(v); err != nil {
			return err
		}
		cosign = strings.Join([]string{v.Cosign, v.TrustedRoot, v.Issuer, v.Identity}, "\x00")
	}
	s.Verify = [3]string{v.OpenPGP, v.SSH, cosign}
	return nil
}

// readKeyless adds the keyless identity of v to s.CosignKeys: its three
// fields go together.
func (s *Spec) readKeyless(v verifyDoc) error {
	for _, f := range []struct{ name, value string }{{fieldTrustedRoot, v.TrustedRoot}, {fieldIssuer, v.Issuer}, {fieldIdentity, v.Identity}} {
		if f.value == "" {
			return fieldErr(FieldVerify+"."+f.name, "is required with the other keyless fields (verify.trustedRoot, verify.issuer and verify.identity go together)")
		}
	}
	k, err := s.CosignKeys.WithKeyless([]byte(v.TrustedRoot), v.Issuer, v.Identity)
	if err != nil {
		field := fieldTrustedRoot
		if bad := (*artifact.KeylessError)(nil); errors.As(err, &bad) {
			field = map[string]string{artifact.PartIssuer: fieldIssuer, artifact.PartIdentity: fieldIdentity}[bad.Part]
			if field == "" {
				field = fieldTrustedRoot
			}
		}
		return fieldErr(FieldVerify+"."+field, "%v", err)
	}
	s.CosignKeys = k
	return nil
}

// cleanPath checks a directory of the repository: relative, inside it.
func cleanPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%q is absolute: give a directory of the repository, relative to its root", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q leaves the repository", p)
	}
	return clean, nil
}

// parseIdentity reads "namespace/name".
func parseIdentity(text string) (Identity, error) {
	if text == "" {
		return Identity{}, errors.New("required: the ServiceAccount the sync writes as, as namespace/name")
	}
	ns, name, ok := strings.Cut(text, "/")
	if !ok {
		return Identity{}, fmt.Errorf("%q is not namespace/name", text)
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return Identity{}, fmt.Errorf("namespace %q of %q is not a namespace name: %s", ns, text, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return Identity{}, fmt.Errorf("name %q of %q is not a ServiceAccount name: %s", name, text, strings.Join(msgs, "; "))
	}
	return Identity{Namespace: ns, Name: name}, nil
}
