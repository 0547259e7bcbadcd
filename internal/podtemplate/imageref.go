package podtemplate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// defaultPullPolicy is the pull policy the API server gives a container (or
// an image volume) that leaves it out: Always when the image names the
// :latest tag or no tag and no digest at all (which means :latest),
// IfNotPresent otherwise. A reference the API server cannot parse also gets
// IfNotPresent: it ignores the parse error there and leaves the reference to
// the kubelet.
//
//	nginx                          Always        (no tag: :latest)
//	nginx:latest                   Always
//	nginx:1.27                     IfNotPresent
//	nginx@sha256:<64 hex>          IfNotPresent  (a digest pins the image)
//	nginx:latest@sha256:<64 hex>   Always        (the tag still reads latest)
//	registry:5000/app              Always        (:5000 is a port, not a tag)
//	Nginx:1.27                     IfNotPresent  (invalid: upper-case repository)
func defaultPullPolicy(image string) corev1.PullPolicy {
	tag, digested, ok := parseImageReference(image)
	if !ok {
		return corev1.PullIfNotPresent
	}
	if tag == latestTag || (tag == "" && !digested) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// parseImageReference reads the tag of an image reference and whether it
// has a digest, with the rules of the Docker reference grammar the API
// server uses (github.com/distribution/reference, ParseNormalizedNamed):
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain "/" ] path-component { "/" path-component }
//
// A name with one element ("nginx") is on Docker Hub. Otherwise its first
// element is a domain when it is "localhost", contains "." or ":", or has
// an upper-case letter; else the whole name is a path on Docker Hub. The
// path must be lower case. ok is false for a reference the grammar rejects.
func parseImageReference(image string) (tag string, digested, ok bool) {
	// A bare 64-digit hex string is an image ID, not a name.
	if len(image) == 64 && isLowerHex(image) {
		return "", false, false
	}
	domain, rest := splitImageDomain(image)
	// The repository path ends at the first ":" (a tag, or the algorithm of
	// a digest): "library/nginx:1.27" -> "library/nginx". It must be lower case.
	path := rest
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		path = rest[:i]
	}
	if strings.ToLower(path) != path {
		return "", false, false
	}

	nameTag, digest, digested := strings.Cut(rest, "@")
	if digested && !validDigest(digest) {
		return "", false, false
	}
	// The path never holds a ":", so one after the last "/" starts the tag.
	name := nameTag
	if i := strings.LastIndexByte(nameTag, ':'); i > strings.LastIndexByte(nameTag, '/') {
		name, tag = nameTag[:i], nameTag[i+1:]
		if !validTag(tag) {
			return "", false, false
		}
	}
	// The grammar also reads a first element that is no valid domain as a
	// path component: "my_registry.io/app" is the path "my_registry.io/app".
	if !(validDomain(domain) && validPath(name)) && !validPath(domain+"/"+name) {
		return "", false, false
	}
	return tag, digested, true
}

// splitImageDomain splits a reference into its domain (docker.io when it
// names none) and the rest: "nginx:1.27" -> ("docker.io",
// "library/nginx:1.27"), "ghcr.io/org/app" -> ("ghcr.io", "org/app"),
// "org/app" -> ("docker.io", "org/app").
func splitImageDomain(image string) (domain, rest string) {
	first, remainder, found := strings.Cut(image, "/")
	switch {
	case !found:
		return "docker.io", "library/" + image
	case first == "localhost", strings.ContainsAny(first, ".:"), strings.ToLower(first) != first:
		domain, rest = first, remainder
	default:
		domain, rest = "docker.io", image
	}
	if first == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain, rest
}

// validDomain reports whether s is host[:port], the host being DNS labels
// joined by "." (letters, digits, inner "-") or a bracketed IPv6 address:
// "ghcr.io", "registry:5000", "[::1]:5000".
func validDomain(s string) bool {
	host := s
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, ']') {
		port := s[i+1:]
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = s[:i]
	}
	if strings.HasPrefix(host, "[") {
		return len(host) > 2 && strings.HasSuffix(host, "]") &&
			strings.Trim(host[1:len(host)-1], "0123456789abcdefABCDEF:") == ""
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !isAlnum(r) && r != '-' {
				return false
			}
		}
	}
	return true
}

// validPath reports whether s is path components joined by "/", at most
// 255 characters. A component is lower-case letters and digits, with single
// "." or "_", a double "__", or runs of "-" between them: "my-app",
// "my__app", "v1.2"; not "-app", "my..app" or "my___app".
func validPath(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for component := range strings.SplitSeq(s, "/") {
		if !validPathComponent(component) {
			return false
		}
	}
	return true
}

func validPathComponent(s string) bool {
	if s == "" || !isLowerAlnum(rune(s[0])) || !isLowerAlnum(rune(s[len(s)-1])) {
		return false
	}
	for i := 0; i < len(s); {
		if isLowerAlnum(rune(s[i])) {
			i++
			continue
		}
		// A separator run between two alphanumerics.
		j := i
		for j < len(s) && !isLowerAlnum(rune(s[j])) {
			j++
		}
		switch sep := s[i:j]; {
		case sep == ".", sep == "_", sep == "__", strings.Trim(sep, "-") == "":
		default:
			return false
		}
		i = j
	}
	return true
}

// validTag reports whether s is 1 to 128 word characters, ".", or "-",
// not starting with "." or "-".
func validTag(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !isAlnum(r) && r != '_' && r != '.' && r != '-' {
			return false
		}
	}
	return true
}

// validDigest reports whether s is algorithm:hex with an algorithm the API
// server knows and lower-case hex of its length: sha256 (64 digits), sha384
// (96) or sha512 (128).
func validDigest(s string) bool {
	algorithm, hex, _ := strings.Cut(s, ":")
	size := map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}[algorithm]
	return size > 0 && len(hex) == size && isLowerHex(hex)
}

func isLowerHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}

func isLowerAlnum(r rune) bool {
	return ('a' <= r && r <= 'z') || ('0' <= r && r <= '9')
}

func isAlnum(r rune) bool {
	return isLowerAlnum(r) || ('A' <= r && r <= 'Z')
}
