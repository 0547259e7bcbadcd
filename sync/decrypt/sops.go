package decrypt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/logging"
	"github.com/getsops/sops/v3/pgp"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

func init() {
	// SOPS logs through loggers of its own, to stderr, and some of its
	// warnings quote a value; the daemon's log is its own.
	for _, l := range logging.Loggers {
		l.SetOutput(io.Discard)
	}
}

// Error is a SOPS-encrypted file that could not be decrypted. Its message
// is the reason alone: the renderer names the file, as it names the file
// of any read that failed ("read deploy/db.yaml: ...").
type Error struct {
	// File is the slash path of the file in the commit.
	File string
	// Reason says why, for people; it never quotes a value.
	Reason string
}

func (e *Error) Error() string { return e.Reason }

// format is how SOPS reads and writes one kind of file.
type format struct {
	// store decrypts and emits the file; parse reads its plain tree,
	// which for the binary envelope is the JSON around the data.
	store, parse sops.Store
}

// formatOf returns the SOPS format of a file, by its name as the sops
// command tells it: YAML, JSON, dotenv, INI, or the binary envelope.
func formatOf(name string) format {
	switch path.Ext(name) {
	case ".yaml", ".yml":
		s := sopsyaml.NewStore(&config.YAMLStoreConfig{})
		return format{store: s, parse: s}
	case ".json":
		s := sopsjson.NewStore(&config.JSONStoreConfig{})
		return format{store: s, parse: s}
	case ".env":
		s := dotenv.NewStore(&config.DotenvStoreConfig{})
		return format{store: s, parse: s}
	case ".ini":
		s := ini.NewStore(&config.INIStoreConfig{})
		return format{store: s, parse: s}
	}
	return format{store: sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{}), parse: sopsjson.NewStore(&config.JSONStoreConfig{})}
}

// metadataKey is what every SOPS file holds, under the sops map or as a
// flattened "sops_" key.
const metadataKey = "sops"

// Encrypted reports whether data, the content of the file name, carries
// SOPS's metadata: a top-level sops map holding a mac, or a sops_mac
// key (dotenv). Content that does not parse in the file's format is not
// encrypted: the renderer reports what is wrong with it.
func Encrypted(name string, data []byte) bool {
	if !bytes.Contains(data, []byte(metadataKey)) {
		return false
	}
	branches, err := safeParse(formatOf(name).parse, data)
	if err != nil {
		return false
	}
	for _, b := range branches {
		for _, item := range b {
			key, _ := item.Key.(string)
			if key == metadataKey+"_mac" {
				return true
			}
			if key != metadataKey {
				continue
			}
			meta, ok := item.Value.(sops.TreeBranch)
			if !ok {
				continue
			}
			for _, m := range meta {
				if k, _ := m.Key.(string); k == "mac" {
					return true
				}
			}
		}
	}
	return false
}

// safeParse reads a file's plain tree, turning a panic of the parser
// into an error: no file of a commit may bring the daemon down.
func safeParse(s sops.Store, data []byte) (branches sops.TreeBranches, err error) {
	defer func() {
		if r := recover(); r != nil {
			branches, err = nil, fmt.Errorf("the file cannot be parsed: %v", r)
		}
	}()
	return s.LoadPlainFile(data)
}

// load reads an encrypted file's tree and metadata, a panic of SOPS
// turned into an error.
func load(s sops.Store, data []byte) (tree sops.Tree, err error) {
	defer func() {
		if r := recover(); r != nil {
			tree, err = sops.Tree{}, fmt.Errorf("%v", r)
		}
	}()
	return s.LoadEncryptedFile(data)
}

// Decrypt returns the plaintext of name, a SOPS-encrypted file whose
// content is data, decrypted with keys, in the file's own format. The MAC
// is checked: a file changed after it was encrypted is refused.
func Decrypt(name string, data []byte, keys *Keys) ([]byte, error) {
	plain, _, err := decryptFile(name, data, keys)
	return plain, err
}

// decryptFile is Decrypt, also returning the values that were encrypted,
// decrypted, for the redaction of messages.
func decryptFile(name string, data []byte, keys *Keys) ([]byte, []string, error) {
	f := formatOf(name)
	tree, err := load(f.store, data)
	if err != nil {
		return nil, nil, &Error{File: name, Reason: "SOPS-encrypted, and its SOPS metadata cannot be read: " + err.Error()}
	}
	client := &keyClient{keys: keys}
	dataKey, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{client}, nil)
	if err != nil {
		if client.failed != nil {
			return nil, nil, &Error{File: name, Reason: fmt.Sprintf("SOPS-encrypted for %s, and the key of %s that matches fails: %v", recipients(tree.Metadata), keys.From, client.failed)}
		}
		return nil, nil, &Error{File: name, Reason: fmt.Sprintf("SOPS-encrypted for %s, and no key of %s decrypts it: it holds %s", recipients(tree.Metadata), keys.From, keys.Public())}
	}
	var sealed []any
	leaves(tree.Branches, &sealed)
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, nil, &Error{File: name, Reason: "SOPS-encrypted, and a value does not decrypt with the file's data key: the file was changed after it was encrypted (" + valueFree(err) + ")"}
	}
	want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, nil, &Error{File: name, Reason: "SOPS-encrypted, and its MAC does not decrypt: the file's metadata was changed after it was encrypted"}
	}
	if want != mac {
		return nil, nil, &Error{File: name, Reason: "SOPS-encrypted, and its MAC does not match its content: the file was changed after it was encrypted"}
	}
	out, err := f.store.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, nil, &Error{File: name, Reason: "SOPS-encrypted, and its plaintext cannot be written back in its format: " + valueFree(err)}
	}
	return out, encryptedValues(sealed, tree.Branches), nil
}

// leaves appends the values of a tree, comments left out, in the order
// SOPS walks them.
func leaves(v any, out *[]any) {
	switch v := v.(type) {
	case sops.TreeBranches:
		for _, b := range v {
			leaves(b, out)
		}
	case sops.TreeBranch:
		for _, item := range v {
			if _, ok := item.Key.(sops.Comment); !ok {
				leaves(item.Value, out)
			}
		}
	case []any:
		for _, x := range v {
			leaves(x, out)
		}
	default:
		*out = append(*out, v)
	}
}

// encryptedValues returns the plaintext of the string values that
// sealed, the leaves of the encrypted tree, held encrypted ("ENC[...]"),
// from the decrypted tree plain, and their lines: the values of a file
// left in plain text by encrypted_regex and the like are not secret, and
// neither are its numbers and booleans, which would only blot out every
// "true" of a message.
func encryptedValues(sealed []any, plain sops.TreeBranches) []string {
	var opened []any
	leaves(plain, &opened)
	var out []string
	for i, v := range sealed {
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, "ENC[") || i >= len(opened) {
			continue
		}
		text, ok := opened[i].(string)
		if !ok {
			continue
		}
		out = append(out, text)
		for line := range strings.Lines(text) {
			if line = strings.TrimSpace(line); line != text {
				out = append(out, line)
			}
		}
	}
	return out
}

// valueFree is the part of a SOPS error that names no value: SOPS quotes
// the value it could not convert after the first ": " of some messages.
func valueFree(err error) string {
	msg := err.Error()
	for _, marker := range []string{"Could not convert ", "Expected encrypted value"} {
		if i := strings.Index(msg, marker); i >= 0 {
			return strings.TrimSpace(msg[:i] + marker)
		}
	}
	return msg
}

// recipients names the keys a file is encrypted for: "age age1...,
// OpenPGP 1234..., AWS KMS arn:...".
func recipients(m sops.Metadata) string {
	var names []string
	for _, group := range m.KeyGroups {
		for _, k := range group {
			switch k := k.(type) {
			case *sopsage.MasterKey:
				names = append(names, "age "+k.Recipient)
			case *pgp.MasterKey:
				names = append(names, "OpenPGP "+k.Fingerprint)
			default:
				names = append(names, k.TypeToIdentifier()+" "+k.ToString()+" (not read: only age and OpenPGP keys are)")
			}
		}
	}
	if len(names) == 0 {
		return "no key"
	}
	return strings.Join(names, ", ")
}

// errNoKeys is an encrypted file where no key is configured.
var errNoKeys = errors.New("SOPS-encrypted, and no decryption key is configured for this sync (--decryption-secret, or decryption.secret in its declaration)")
