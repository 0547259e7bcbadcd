package source

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Git's delta format: the base's size and the target's size as
// little-endian base-128 numbers, then instructions. An instruction byte
// with the high bit set copies from the base: its low four bits say which
// of four offset bytes follow, the next three which of three size bytes
// (a size of 0 means 0x10000). One with the high bit clear inserts that
// many literal bytes, which follow; 0 is reserved.
const (
	deltaCopy        = 0x80
	deltaDefaultCopy = 0x10000
)

// errDelta reports a delta that does not follow the format.
var errDelta = errors.New("malformed delta")

// deltaReader applies one delta as it streams out of the pack, so neither
// the delta nor the target is ever held whole.
type deltaReader struct {
	br *bufio.Reader
}

func newDeltaReader(r io.Reader) *deltaReader {
	return &deltaReader{br: bufio.NewReader(r)}
}

// header reads the base's and the target's sizes.
func (d *deltaReader) header() (src, dst int64, err error) {
	if src, err = d.size(); err != nil {
		return 0, 0, err
	}
	if dst, err = d.size(); err != nil {
		return 0, 0, err
	}
	return src, dst, nil
}

func (d *deltaReader) size() (int64, error) {
	var n int64
	for shift := uint(0); shift < 63; shift += 7 {
		b, err := d.br.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("%w: size: %w", errDelta, err)
		}
		n |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%w: size does not fit 63 bits", errDelta)
}

// apply writes the target, size bytes, to w from base and the literal
// bytes of the delta.
func (d *deltaReader) apply(w io.Writer, base *spool, size int64) error {
	var written int64
	for {
		cmd, err := d.br.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errDelta, err)
		}
		var n int64
		switch {
		case cmd&deltaCopy != 0:
			off, err := d.field(cmd, 0, 4)
			if err != nil {
				return err
			}
			if n, err = d.field(cmd, 4, 3); err != nil {
				return err
			}
			if n == 0 {
				n = deltaDefaultCopy
			}
			if off+n > base.size {
				return fmt.Errorf("%w: copy of %d bytes at %d from a base of %d", errDelta, n, off, base.size)
			}
			if err := checkRoom(written, n, size); err != nil {
				return err
			}
			if _, err := io.Copy(w, io.NewSectionReader(base, off, n)); err != nil {
				return err
			}
		case cmd != 0:
			n = int64(cmd)
			if err := checkRoom(written, n, size); err != nil {
				return err
			}
			if _, err := io.CopyN(w, d.br, n); err != nil {
				return fmt.Errorf("%w: insert: %w", errDelta, err)
			}
		default:
			return fmt.Errorf("%w: reserved instruction 0", errDelta)
		}
		written += n
	}
	if written != size {
		return fmt.Errorf("%w: target of %d bytes, declared %d", errDelta, written, size)
	}
	return nil
}

// checkRoom refuses an instruction that would write past the target's
// declared size.
func checkRoom(written, n, size int64) error {
	if written+n > size {
		return fmt.Errorf("%w: target longer than its declared %d bytes", errDelta, size)
	}
	return nil
}

// field reads the little-endian number whose bytes the bits first to
// first+count-1 of cmd say are present.
func (d *deltaReader) field(cmd byte, first, count uint) (int64, error) {
	var v int64
	for i := range count {
		if cmd&(1<<(first+i)) == 0 {
			continue
		}
		b, err := d.br.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("%w: copy instruction: %w", errDelta, err)
		}
		v |= int64(b) << (8 * i)
	}
	return v, nil
}
