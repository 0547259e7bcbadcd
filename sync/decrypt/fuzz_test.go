package decrypt

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// fuzzNames are the names, and so the SOPS formats, of the fuzzed file.
var fuzzNames = [...]string{"f.yaml", "f.json", "f.env", "f.ini", "f.bin"}

// FuzzReadFile reads a file of any content through the decrypting file
// system, with a key, as a render does: it never panics, a file that
// carries no SOPS metadata reads as it is, byte for byte, and a file
// that does either decrypts or fails with an error of this package or of
// the manifest limits.
func FuzzReadFile(f *testing.F) {
	id := newAge(f)
	data := ageSecret(id)
	opts := encOptions{age: []*age25519{id}}
	seeds := [][]byte{
		nil,
		[]byte("sops:\n  mac: x\n"),
		[]byte(`{"data": "x", "sops": {"mac": "m", "version": "3.13.3"}}`),
		[]byte("sops_mac=x\nA=b\n"),
		[]byte("[sops]\nmac = x\n"),
		[]byte("a: &a [*a, *a]\nsops: {mac: *a}\n"),
	}
	for i, name := range fuzzNames {
		plain := []byte("a: b\nc: [1, 2]\n")
		switch i {
		case 1:
			plain = []byte(`{"a": "b", "c": [1, 2]}`)
		case 2:
			plain = []byte("A=b\nC=d\n")
		case 3:
			plain = []byte("[s]\na = b\n")
		case 4:
			plain = []byte("\x00binary")
		}
		seeds = append(seeds, sealFile(f, name, plain, opts))
	}
	for _, s := range seeds {
		for i := range fuzzNames {
			f.Add(s, uint8(i))
		}
	}
	d := New(Config{Secret: "plimsoll/keys", Load: func(context.Context) (map[string][]byte, error) { return data, nil }})
	f.Fuzz(func(t *testing.T, content []byte, which uint8) {
		name := fuzzNames[int(which)%len(fuzzNames)]
		fsys := d.FS(context.Background(), fstest.MapFS{name: {Data: content}})
		got, err := fs.ReadFile(fsys, name)
		if !Encrypted(name, content) {
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("a file without SOPS metadata read as %q, %v", got, err)
			}
			return
		}
		var de *Error
		var me *manifest.Error
		if err != nil && !errors.As(err, &de) && !errors.As(err, &me) {
			t.Fatalf("error of an unexpected kind %T: %v", err, err)
		}
	})
}
