package source

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// AllowedSigners is the set of SSH keys a commit may be signed with, read
// from a file in the allowed_signers format of ssh-keygen(1): the format
// of git's gpg.ssh.allowedSignersFile, so that one file serves both
// `git verify-commit` and plimsoll.
type AllowedSigners struct {
	entries []allowedSigner
}

// allowedSigner is one line of an allowed_signers file.
type allowedSigner struct {
	line       int
	principals string
	key        ssh.PublicKey
	// namespaces is the pattern-list of the namespaces="..." option; ""
	// when the line has none, which allows every namespace.
	namespaces string
	// validAfter and validBefore bound when the key may have signed; zero
	// when unbounded.
	validAfter, validBefore time.Time
}

// ReadAllowedSigners parses an allowed_signers file. Each line is
//
//	principals [options] keytype base64-key [comment]
//
// and blank lines and lines starting with # are skipped. principals is a
// comma-separated list (quoted if it holds spaces); plimsoll shows it to
// name who signed. The options are ssh-keygen's, comma-separated:
// namespaces="pattern-list" (the key may sign only in the namespaces it
// matches, and a commit signature is in namespace "git"), and
// valid-after="time" and valid-before="time" (YYYYMMDD[HHMM[SS]], in UTC
// with a trailing Z or UTC, else in local time). cert-authority is
// refused: plimsoll does not verify signatures made with certificates, and
// a line it cannot honour is better refused at startup than read
// differently from git. A line that does not parse is an error naming its
// number; so is a file without any key.
func ReadAllowedSigners(text []byte) (*AllowedSigners, error) {
	var entries []allowedSigner
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseAllowedSigner(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		e.line = i + 1
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, errors.New("no allowed signer in it")
	}
	return &AllowedSigners{entries: entries}, nil
}

// parseAllowedSigner parses one non-empty, non-comment line.
func parseAllowedSigner(line string) (allowedSigner, error) {
	principals, rest, err := cutPrincipals(line)
	if err != nil {
		return allowedSigner{}, err
	}
	fields, err := splitQuoted(rest)
	if err != nil {
		return allowedSigner{}, err
	}
	if len(fields) > 0 {
		// An authorized_keys line, pasted as it is, starts with the key.
		if _, err := parseKey(principals, fields[0]); err == nil {
			return allowedSigner{}, errors.New("the line starts with a key: put the signer's principals (such as an email address) before it")
		}
	}
	if len(fields) < 2 {
		return allowedSigner{}, errors.New("want principals, options (optional), key type and key")
	}
	// Like ssh-keygen, read a key first, and only when there is none read
	// the first field as the options.
	e := allowedSigner{principals: principals}
	key, keyErr := parseKey(fields[0], fields[1])
	if keyErr == nil {
		e.key = key
		return e, nil
	}
	if len(fields) < 3 || !looksLikeOptions(fields[0]) {
		return allowedSigner{}, keyErr
	}
	if e.key, err = parseKey(fields[1], fields[2]); err != nil {
		return allowedSigner{}, err
	}
	if err := e.parseOptions(fields[0]); err != nil {
		return allowedSigner{}, err
	}
	return e, nil
}

// cutPrincipals splits off the first field of a line, the principals,
// which may be double-quoted.
func cutPrincipals(line string) (principals, rest string, err error) {
	if quoted, ok := strings.CutPrefix(line, `"`); ok {
		end := strings.IndexByte(quoted, '"')
		if end < 0 {
			return "", "", errors.New("principals: missing closing quote")
		}
		principals, rest = quoted[:end], quoted[end+1:]
	} else {
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			return "", "", errors.New("want principals, options (optional), key type and key")
		}
		principals, rest = line[:end], line[end:]
	}
	if principals == "" {
		return "", "", errors.New("principals are empty")
	}
	return principals, strings.TrimSpace(rest), nil
}

// splitQuoted splits s at runs of spaces and tabs that are outside double
// quotes; quotes are kept.
func splitQuoted(s string) ([]string, error) {
	var fields []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case !quoted && (r == ' ' || r == '\t'):
			if cur.Len() > 0 {
				fields = append(fields, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if quoted {
		return nil, errors.New("missing closing quote")
	}
	if cur.Len() > 0 {
		fields = append(fields, cur.String())
	}
	return fields, nil
}

// looksLikeOptions tells an options field from a key type: options hold
// an "=", a "," or a quote, or are the one flag option; no key type does.
func looksLikeOptions(field string) bool {
	return strings.ContainsAny(field, `=,"`) || strings.EqualFold(field, optionCertAuthority)
}

// parseKey reads a key given as its type and base64 blob, and checks that
// the type names the key the blob holds.
func parseKey(keyType, blob string) (ssh.PublicKey, error) {
	if !isKeyType(keyType) {
		return nil, fmt.Errorf("%q is not an SSH key type", keyType)
	}
	raw, err := base64.StdEncoding.DecodeString(blob)
	if err != nil {
		return nil, fmt.Errorf("%s key: not base64: %w", keyType, err)
	}
	key, err := ssh.ParsePublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", keyType, err)
	}
	if key.Type() != keyType {
		return nil, fmt.Errorf("key type %s does not match the key, which is %s", keyType, key.Type())
	}
	return key, nil
}

// isKeyType reports whether s names a type of SSH public key.
func isKeyType(s string) bool {
	switch s {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoSKED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
		ssh.KeyAlgoSKECDSA256, ssh.KeyAlgoRSA:
		return true
	}
	return false
}

// parseOptions reads the comma-separated options field into e.
func (e *allowedSigner) parseOptions(field string) error {
	opts, err := splitOptions(field)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, opt := range opts {
		name, value, hasValue := strings.Cut(opt, "=")
		name = strings.ToLower(name)
		if seen[name] {
			return fmt.Errorf("option %s is given twice", name)
		}
		seen[name] = true
		if name == optionCertAuthority && !hasValue {
			return errors.New("option cert-authority: signatures made with SSH certificates are not supported; list the signers' own keys")
		}
		if !hasValue {
			return fmt.Errorf("unknown option %q", opt)
		}
		unquoted, ok := unquote(value)
		if !ok {
			return fmt.Errorf("option %s: the value must be in double quotes", name)
		}
		switch name {
		case optionNamespaces:
			if unquoted == "" {
				return errors.New("option namespaces is empty")
			}
			e.namespaces = unquoted
		case optionValidAfter:
			if e.validAfter, err = parseSignerTime(unquoted); err != nil {
				return fmt.Errorf("option valid-after: %w", err)
			}
		case optionValidBefore:
			if e.validBefore, err = parseSignerTime(unquoted); err != nil {
				return fmt.Errorf("option valid-before: %w", err)
			}
		default:
			return fmt.Errorf("unknown option %q", opt)
		}
	}
	if !e.validAfter.IsZero() && !e.validBefore.IsZero() && !e.validBefore.After(e.validAfter) {
		return errors.New("valid-before is not after valid-after")
	}
	return nil
}

// splitOptions splits an options field at the commas outside quotes.
func splitOptions(field string) ([]string, error) {
	var opts []string
	start, quoted := 0, false
	for i := 0; i < len(field); i++ {
		switch field[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				opts = append(opts, field[start:i])
				start = i + 1
			}
		}
	}
	opts = append(opts, field[start:])
	for _, o := range opts {
		if o == "" {
			return nil, errors.New("empty option")
		}
	}
	return opts, nil
}

// unquote strips the double quotes around s.
func unquote(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// parseSignerTime reads a time as ssh-keygen does: YYYYMMDD, YYYYMMDDHHMM
// or YYYYMMDDHHMMSS, in UTC when it ends in Z or UTC and in local time
// otherwise.
func parseSignerTime(s string) (time.Time, error) {
	loc, digits := time.Local, s
	for _, suffix := range []string{"Z", "UTC"} {
		if len(s) > len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
			loc, digits = time.UTC, s[:len(s)-len(suffix)]
			break
		}
	}
	layout := map[int]string{8: "20060102", 12: "200601021504", 14: "20060102150405"}[len(digits)]
	if layout == "" {
		return time.Time{}, fmt.Errorf("%q is not YYYYMMDD[HHMM[SS]][Z]", s)
	}
	t, err := time.ParseInLocation(layout, digits, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not YYYYMMDD[HHMM[SS]][Z]: %w", s, err)
	}
	return t, nil
}

// lookup returns the lines that list key.
func (a *AllowedSigners) lookup(key ssh.PublicKey) []allowedSigner {
	var found []allowedSigner
	want := key.Marshal()
	for _, e := range a.entries {
		if bytes.Equal(e.key.Marshal(), want) {
			found = append(found, e)
		}
	}
	return found
}

// permits says why the line does not let its key sign in namespace at
// time at, or returns nil when it does.
func (e allowedSigner) permits(namespace string, at time.Time) error {
	if e.namespaces != "" && !matchPatternList(namespace, e.namespaces) {
		return fmt.Errorf("allowed signers line %d lets the key sign only in namespaces %q, not in %q", e.line, e.namespaces, namespace)
	}
	if !e.validAfter.IsZero() && at.Before(e.validAfter) {
		return fmt.Errorf("allowed signers line %d makes the key valid only after %s, and the commit was made at %s",
			e.line, e.validAfter.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}
	if !e.validBefore.IsZero() && at.After(e.validBefore) {
		return fmt.Errorf("allowed signers line %d makes the key valid only before %s, and the commit was made at %s",
			e.line, e.validBefore.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}
	return nil
}

// matchPatternList matches s against a comma-separated list of patterns
// as OpenSSH does (match_pattern_list): a pattern starting with ! that
// matches excludes s whatever else matches; otherwise s must match one
// plain pattern.
func matchPatternList(s, list string) bool {
	matched := false
	for _, p := range strings.Split(list, ",") {
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if matchPattern(s, neg) {
				return false
			}
			continue
		}
		if matchPattern(s, p) {
			matched = true
		}
	}
	return matched
}

// matchPattern matches s against a pattern where * stands for any run of
// characters and ? for one.
func matchPattern(s, p string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := 0; i <= len(s); i++ {
				if matchPattern(s[i:], p[1:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
		}
		s, p = s[1:], p[1:]
	}
	return s == ""
}
