package latency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// encodingVersion is the first byte of the binary form. It also pins the
// bucket geometry: rows already stored in PostgreSQL were bucketed with this
// Factor, Min and Max, so changing any of them needs a new version and a
// decoder for the old one.
const encodingVersion = 1

// MarshalBinary encodes h for the latency_histograms bytea column. See
// AppendBinary for the layout.
func (h *Histogram) MarshalBinary() ([]byte, error) {
	return h.AppendBinary(make([]byte, 0, h.encodedLen()))
}

// AppendBinary appends the binary form of h to b, so a flusher can reuse one
// buffer for many rows. The layout is the version byte, then uvarints:
// ok, fail, and, for a non-empty histogram, sum, min and max in nanoseconds,
// followed by one (bucket delta, count) pair per non-empty bucket in
// increasing bucket order, where the first delta is the bucket index itself
// and each later one the distance from the previous bucket: about two bytes
// per non-empty bucket, so a minute of 1000 widely spread attempts takes
// about 500 bytes and a quiet minute a few dozen. The encoding of a given
// histogram is unique, so equal histograms have equal bytes.
func (h *Histogram) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, encodingVersion)
	b = binary.AppendUvarint(b, h.ok)
	b = binary.AppendUvarint(b, h.fail)
	if h.ok+h.fail == 0 {
		return b, nil
	}
	b = binary.AppendUvarint(b, uint64(h.sum))
	b = binary.AppendUvarint(b, uint64(h.min))
	b = binary.AppendUvarint(b, uint64(h.max))
	prev := 0
	for j, c := range h.counts {
		if c == 0 {
			continue
		}
		i := h.off + j
		b = binary.AppendUvarint(b, uint64(i-prev))
		b = binary.AppendUvarint(b, c)
		prev = i
	}
	return b, nil
}

// encodedLen returns the exact length of the binary form, so MarshalBinary
// allocates once.
func (h *Histogram) encodedLen() int {
	n := 1 + uvarintLen(h.ok) + uvarintLen(h.fail)
	if h.ok+h.fail == 0 {
		return n
	}
	n += uvarintLen(uint64(h.sum)) + uvarintLen(uint64(h.min)) + uvarintLen(uint64(h.max))
	prev := 0
	for j, c := range h.counts {
		if c == 0 {
			continue
		}
		n += uvarintLen(uint64(h.off+j-prev)) + uvarintLen(c)
		prev = h.off + j
	}
	return n
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// UnmarshalBinary replaces h with the histogram encoded in b by
// MarshalBinary. Rows come from a database that other versions of hookline
// and people with psql also write, so every field is checked: truncated,
// over-long or inconsistent input (counts that do not add up, extremes
// outside their buckets, a sum no set of samples could have) is an error,
// never a panic, and leaves h unchanged.
//
// h's bucket storage is reused when it is large enough, so a reader that
// decodes many rows into one scratch histogram and merges each into a total
// does not allocate per row.
func (h *Histogram) UnmarshalBinary(b []byte) error {
	hdr, err := parseHistogram(b)
	if err != nil {
		return fmt.Errorf("decode latency histogram: %w", err)
	}
	if hdr.ok+hdr.fail == 0 {
		h.Reset()
		return nil
	}
	counts := h.counts
	if width := hdr.last - hdr.first + 1; cap(counts) >= width {
		counts = counts[:width]
		clear(counts)
	} else {
		counts = make([]uint64, width)
	}
	// The pairs were validated by parseHistogram; this pass only places them.
	r, i := hdr.pairs, -1
	for len(r.buf) > 0 {
		delta, c := r.uvarint(), r.uvarint()
		if i < 0 {
			i = int(delta)
		} else {
			i += int(delta)
		}
		counts[i-hdr.first] = c
	}
	*h = Histogram{
		ok: hdr.ok, fail: hdr.fail,
		sum: hdr.sum, min: hdr.min, max: hdr.max,
		off: hdr.first, counts: counts,
	}
	return nil
}

// header is a fully validated encoding whose bucket pairs are still to be
// placed.
type header struct {
	ok, fail      uint64
	sum, min, max time.Duration
	first, last   int    // first and last non-empty bucket
	pairs         reader // positioned at the first (delta, count) pair
}

// parseHistogram validates b completely before anything is allocated or
// written, so corrupt input can neither change the target nor make it
// allocate more than one window of at most NumBuckets counts.
func parseHistogram(b []byte) (header, error) {
	if len(b) == 0 {
		return header{}, errors.New("empty input")
	}
	if b[0] != encodingVersion {
		return header{}, fmt.Errorf("unsupported version %d", b[0])
	}
	r := reader{buf: b[1:]}
	var h header
	h.ok = r.uvarint()
	h.fail = r.uvarint()
	if r.err != nil {
		return header{}, r.err
	}
	if h.ok > math.MaxInt64-h.fail {
		return header{}, errors.New("count overflows int64")
	}
	n := h.ok + h.fail
	if n == 0 {
		if len(r.buf) != 0 {
			return header{}, errors.New("trailing bytes after empty histogram")
		}
		return h, nil
	}

	sum, lo, hi := r.uvarint(), r.uvarint(), r.uvarint()
	if r.err != nil {
		return header{}, r.err
	}
	if sum > math.MaxInt64 || lo > math.MaxInt64 || hi > math.MaxInt64 {
		return header{}, errors.New("duration overflows int64")
	}
	if lo > hi {
		return header{}, errors.New("min above max")
	}
	// Every sample lies in [min, max], so the sum must lie in
	// [min·n, max·n]; both bounds saturate like the sum itself.
	if sum < mulSaturating(lo, n) || sum > mulSaturating(hi, n) {
		return header{}, errors.New("sum inconsistent with count, min and max")
	}
	h.sum, h.min, h.max = time.Duration(sum), time.Duration(lo), time.Duration(hi)

	h.pairs = r
	first, last, total := -1, -1, uint64(0)
	for len(r.buf) > 0 {
		delta, c := r.uvarint(), r.uvarint()
		if r.err != nil {
			return header{}, r.err
		}
		if delta >= NumBuckets {
			return header{}, errors.New("bucket index out of range")
		}
		i := int(delta)
		if last >= 0 {
			if delta == 0 {
				return header{}, errors.New("bucket indexes not increasing")
			}
			i += last
		}
		if i >= NumBuckets {
			return header{}, errors.New("bucket index out of range")
		}
		if c == 0 {
			return header{}, errors.New("empty bucket encoded")
		}
		if c > n-total {
			return header{}, errors.New("bucket counts exceed count")
		}
		if first < 0 {
			first = i
		}
		last = i
		total += c
	}
	if total != n {
		return header{}, errors.New("bucket counts do not add up to count")
	}
	if first != BucketOf(h.min) || last != BucketOf(h.max) {
		return header{}, errors.New("min or max outside the non-empty buckets")
	}
	h.first, h.last = first, last
	return h, nil
}

// reader decodes canonical uvarints, remembering the first error so a run
// of reads can be checked once.
type reader struct {
	buf []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	// Most deltas and many counts fit in one byte; skipping the general
	// decoder for them halves the cost of reading a row.
	if len(r.buf) > 0 && r.buf[0] < 0x80 {
		x := uint64(r.buf[0])
		r.buf = r.buf[1:]
		return x
	}
	x, n := binary.Uvarint(r.buf)
	switch {
	case n == 0:
		r.err = errors.New("truncated")
		return 0
	case n < 0:
		r.err = errors.New("varint overflows 64 bits")
		return 0
	case n > 1 && r.buf[n-1] == 0:
		// An over-long encoding would decode to the same histogram but
		// break the one-histogram-one-encoding property.
		r.err = errors.New("non-minimal varint")
		return 0
	}
	r.buf = r.buf[n:]
	return x
}

// mulSaturating returns a·b capped at math.MaxInt64.
func mulSaturating(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return lo
}
