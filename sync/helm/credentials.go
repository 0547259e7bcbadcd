package helm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// LoadCredentials reads a credentials file (see Credentials). A host may
// be written as a URL (https://charts.example.com/...): its host part is
// used.
func LoadCredentials(file string) (*Credentials, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return ParseCredentials(data, file)
}

// ParseCredentials reads credentials in the format of Docker's
// config.json, as LoadCredentials does; name, the file or Secret key they
// come from, starts its errors.
func ParseCredentials(data []byte, name string) (*Credentials, error) {
	file := name
	var doc struct {
		Auths map[string]struct {
			Auth     string `json:"auth"`
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	c := &Credentials{hosts: map[string]credential{}}
	for host, a := range doc.Auths {
		cred := credential{user: a.Username, password: a.Password}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("read %s: auths[%q].auth: not base64", file, host)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("read %s: auths[%q].auth: not user:password", file, host)
			}
			cred = credential{user: user, password: pass}
		}
		if cred.user == "" {
			return nil, fmt.Errorf("read %s: auths[%q]: no username", file, host)
		}
		if u, err := url.Parse(host); err == nil && u.Host != "" {
			host = u.Host
		}
		c.hosts[host] = cred
	}
	return c, nil
}
