package helm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// maxIndexParseBytes is the most of an HTTP repository's index that is
// ever parsed at once: a whole index up to this size, else one version
// entry of the chart asked for.
//
// What a 64 MiB index (DefaultMaxIndexBytes) costs, worked through.
// Parsed whole with sigs.k8s.io/yaml, as it was, an index costs about 11
// times its text: the text itself (64 MiB, more while io.ReadAll grows
// its buffer), the YAML tree of every chart's every field (a string, an
// interface and a map slot per value), the JSON that tree is re-encoded
// into, and the decoded entries. A 60 MB index raised the daemon's peak
// RSS from 77 MiB to 763-784 MiB with GOMEMLIMIT=512MiB, a 64 MiB one of
// 102,020 version entries to 1006 MiB (bench/results.md): past the
// chart's memory limit of 512Mi. Read as below, the same index costs its
// reader's buffer (64 KiB), the first maxIndexParseBytes read ahead to
// decide (4 MiB), one version entry at a time (650 bytes in that index,
// 4 MiB at most, so some 50 MiB at most once parsed) and, for the chart
// asked for, its versions, URLs and digests (about 200 bytes each: 2 MiB
// for 10,000 versions): the sync from that index peaks at 69 MiB. A
// whole index up to 4 MiB is still parsed whole, as before: some 50 MiB
// at most.
const maxIndexParseBytes = 4 << 20

// indexVersion is the part of one version entry of an index a fetch reads.
type indexVersion struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// repoIndex is the part of an HTTP repository's index.yaml a fetch reads.
type repoIndex struct {
	Entries map[string][]indexVersion `json:"entries"`
}

// readIndex reads an HTTP repository's index (what names it in errors)
// from r to its end and returns the version entries of chart name, found
// false when the index has no such chart. An index of up to wholeBytes is
// parsed whole; a larger one is read as a stream, JSON (its first byte is
// "{") token by token, YAML line by line in the block layout `helm repo
// index` writes, and only the version entries of chart name are parsed,
// one at a time. Either way the answer is the one a parse of the whole
// index gives: for a chart listed twice, the last listing. A read error
// from r wraps what r returned (errTooLarge as it is); an index that does
// not parse is a *manifest.Error.
func readIndex(r io.Reader, what, name string, wholeBytes int64) ([]indexVersion, bool, error) {
	rec := &readRecorder{r: r}
	head, err := io.ReadAll(io.LimitReader(rec, wholeBytes+1))
	if err != nil {
		return nil, false, rec.failed(what, err)
	}
	if int64(len(head)) <= wholeBytes {
		var idx repoIndex
		if err := yaml.Unmarshal(head, &idx); err != nil {
			return nil, false, &manifest.Error{Reason: fmt.Sprintf("%s does not parse: %v", what, err)}
		}
		versions, ok := idx.Entries[name]
		return versions, ok, nil
	}
	stream := io.MultiReader(bytes.NewReader(head), rec)
	scan := scanYAMLIndex
	if first := bytes.TrimLeft(bytes.TrimPrefix(head, []byte(byteOrderMark)), " \t\r\n"); len(first) > 0 && first[0] == '{' {
		scan = scanJSONIndex
	}
	head = nil
	versions, found, err := scan(stream, name)
	if err != nil {
		if rec.err != nil {
			return nil, false, rec.failed(what, rec.err)
		}
		return nil, false, &manifest.Error{Reason: fmt.Sprintf("%s does not parse: %v", what, err)}
	}
	return versions, found, nil
}

// byteOrderMark may open a UTF-8 index.
const byteOrderMark = "\ufeff"

// readRecorder keeps the first error its reader returned, to tell an
// index that could not be read from one that does not parse.
type readRecorder struct {
	r   io.Reader
	err error
}

func (rr *readRecorder) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if err != nil && err != io.EOF && rr.err == nil {
		rr.err = err
	}
	return n, err
}

// failed is the error of an index that could not be read: a limit passed
// as it is, anything else as a failure to read.
func (rr *readRecorder) failed(what string, err error) error {
	if errors.Is(err, errTooLarge) {
		return err
	}
	return fmt.Errorf("read %s: %w", what, err)
}

// parseVersion parses one version entry of an index with the parser of a
// whole index (so that, say, a version written as a number reads as it
// would there); line, when not zero, is where the entry starts.
func parseVersion(raw []byte, name string, line int) (indexVersion, error) {
	where := fmt.Sprintf("an entry of chart %s", name)
	if line > 0 {
		where = fmt.Sprintf("the entry of chart %s at line %d", name, line)
	}
	if len(raw) > maxIndexParseBytes {
		return indexVersion{}, fmt.Errorf("%s is larger than %d bytes, the most of an index parsed at once", where, maxIndexParseBytes)
	}
	var v indexVersion
	if line == 0 {
		if err := yaml.Unmarshal(raw, &v); err != nil {
			return indexVersion{}, fmt.Errorf("%s: %w", where, err)
		}
		return v, nil
	}
	// A YAML entry is one item of a block list, parsed as a list of one.
	var vs []indexVersion
	if err := yaml.Unmarshal(raw, &vs); err != nil {
		return indexVersion{}, fmt.Errorf("%s: %w", where, err)
	}
	if len(vs) != 1 {
		return indexVersion{}, fmt.Errorf("%s holds %d entries, not one", where, len(vs))
	}
	return vs[0], nil
}

// scanJSONIndex reads a JSON index token by token and decodes only the
// version entries of chart name, one at a time.
func scanJSONIndex(r io.Reader, name string) ([]indexVersion, bool, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	var versions []indexVersion
	found := false
	err := jsonObject(dec, "the index", func(key string) error {
		if key != "entries" {
			return skipJSON(dec)
		}
		versions, found = nil, false
		return jsonObject(dec, "entries", func(chart string) error {
			if chart != name {
				return skipJSON(dec)
			}
			versions, found = nil, true
			return jsonArray(dec, "entries."+chart, func() error {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return err
				}
				v, err := parseVersion(raw, name, 0)
				versions = append(versions, v)
				return err
			})
		})
	})
	if err != nil {
		return nil, false, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, errors.New("data after the index's object")
	}
	return versions, found, nil
}

// jsonObject reads an object (null reads as an empty one), calling each
// with every key, to read its value.
func jsonObject(dec *json.Decoder, what string, each func(key string) error) error {
	if open, err := jsonOpen(dec, '{', what+" is not an object"); !open {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if err := each(tok.(string)); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// jsonArray reads an array (null reads as an empty one), calling each to
// read every element.
func jsonArray(dec *json.Decoder, what string, each func() error) error {
	if open, err := jsonOpen(dec, '[', what+" is not an array"); !open {
		return err
	}
	for dec.More() {
		if err := each(); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// jsonOpen reads the delimiter that opens a value: open false for null
// or an error, the error refused for any other value.
func jsonOpen(dec *json.Decoder, delim json.Delim, refused string) (open bool, err error) {
	tok, err := dec.Token()
	switch {
	case err != nil || tok == nil:
		return false, err
	case tok != delim:
		return false, errors.New(refused)
	}
	return true, nil
}

// skipJSON reads past one value, token by token, holding none of it.
func skipJSON(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
