package binlog

import (
	"errors"
	"fmt"
	"math/bits"
)

// RowsKind is the statement kind of a rows event.
type RowsKind uint8

const (
	RowsInsert RowsKind = iota + 1
	RowsUpdate
	RowsDelete
)

func (k RowsKind) String() string {
	switch k {
	case RowsInsert:
		return "insert"
	case RowsUpdate:
		return "update"
	case RowsDelete:
		return "delete"
	}
	return "rows"
}

// Rows event flags.
const (
	RowsFlagStmtEnd             uint16 = 0x0001
	RowsFlagNoForeignKeyChecks  uint16 = 0x0002
	RowsFlagRelaxedUniqueChecks uint16 = 0x0004
	RowsFlagCompleteRows        uint16 = 0x0008
	RowsFlagNoCheckConstraints  uint16 = 0x0080 // MariaDB (NO_CHECK_CONSTRAINT_CHECKS_F)
)

// ErrPartialJSON reports a MySQL partial JSON update, which binlane does not
// apply.
var ErrPartialJSON = errors.New("partial JSON updates are not supported: set binlog_row_value_options='' on the source")

// RowsEvent holds the row images of one write, update or delete event. The
// rows stay encoded until AppendRows decodes them.
type RowsEvent struct {
	Kind    RowsKind
	TableID uint64
	Table   *TableMap
	Flags   uint16
	// Columns is the column count; Present and PresentAfter are the
	// columns-present bitmaps of the before (or only) and after image.
	Columns      int
	Present      []byte
	PresentAfter []byte
	partialJSON  bool
	data         []byte // the encoded row images
	flavor       Flavor
	// where locates AppendRows errors. It is a copy, not a pointer to the
	// event: events and rows events are allocated in batches (slabs), and
	// pointers both ways chained every batch to the next, so that the
	// decoder's current batch kept every event ever decoded, and its
	// buffer, alive.
	where DecodeError
}

// Data returns the encoded row images (for size accounting).
func (e *RowsEvent) Data() []byte { return e.data }

// ImagesPerRow is 2 for updates (before, after) and 1 otherwise.
func (e *RowsEvent) ImagesPerRow() int {
	if e.Kind == RowsUpdate {
		return 2
	}
	return 1
}

func rowsKind(t EventType) RowsKind {
	switch t {
	case EventWriteRowsV1, EventWriteRowsV2, EventWriteRowsCompressedV1, EventWriteRowsCompressedV2:
		return RowsInsert
	case EventUpdateRowsV1, EventUpdateRowsV2, EventUpdateRowsCompressedV1, EventUpdateRowsCompressedV2, EventPartialUpdateRows:
		return RowsUpdate
	}
	return RowsDelete
}

// slabRowsMax is the largest rows event allocated in a batch: a kept rows
// event keeps its batch alive, and with it the buffers of the other rows
// events in it; batching only small ones bounds that to 64 x 64 KiB.
const slabRowsMax = 64 << 10

func (d *Decoder) decodeRows(h Header, body []byte) (*RowsEvent, error) {
	// Either from the batch or alone, never both: a new(RowsEvent) made
	// first and then replaced still cost an allocation per rows event (it
	// escapes).
	var e *RowsEvent
	if len(body) <= slabRowsMax {
		e = d.alloc.rows.next()
	} else {
		e = new(RowsEvent)
	}
	*e = RowsEvent{Kind: rowsKind(h.Type), flavor: d.fde.Flavor, partialJSON: h.Type == EventPartialUpdateRows}
	idLen := 6
	if d.fde.postHeaderLen(h.Type) == 6 {
		idLen = 4
	}
	r := &reader{b: body}
	e.TableID = r.uintN(idLen, "table id")
	e.Flags = r.u16("flags")
	switch h.Type {
	case EventWriteRowsV2, EventUpdateRowsV2, EventDeleteRowsV2, EventPartialUpdateRows, EventWriteRowsCompressedV2,
		EventUpdateRowsCompressedV2, EventDeleteRowsCompressedV2:
		extra := int(r.u16("extra data length"))
		if extra < 2 {
			return nil, fmt.Errorf("extra data length %d below 2", extra)
		}
		r.skip(extra-2, "extra data")
	}
	ncols := r.lenenc("column count")
	if r.err != nil {
		return nil, r.err
	}
	if ncols == 0 || ncols > 4096 {
		return nil, fmt.Errorf("implausible column count %d", ncols)
	}
	e.Columns = int(ncols)
	e.Present = r.take(int(ncols+7)/8, "columns-present bitmap")
	if e.Kind == RowsUpdate {
		e.PresentAfter = r.take(int(ncols+7)/8, "columns-present bitmap (after image)")
	}
	if r.err != nil {
		return nil, r.err
	}
	e.data = r.rest()
	if e.TableID == 0xffffffff && idLen == 4 || e.TableID == 0xffffffffffff {
		// The dummy event that ends a statement without rows.
		if len(e.data) == 0 {
			return e, nil
		}
	}
	t, ok := d.tables[e.TableID]
	if !ok {
		return nil, fmt.Errorf("no table map for table id %d (a stream must not resume mid-transaction)", e.TableID)
	}
	if len(t.Columns) != e.Columns {
		return nil, fmt.Errorf("table %s: rows event has %d columns, table map %d", t.QualifiedName(), e.Columns, len(t.Columns))
	}
	e.Table = t
	switch h.Type {
	case EventWriteRowsCompressedV1, EventUpdateRowsCompressedV1, EventDeleteRowsCompressedV1,
		EventWriteRowsCompressedV2, EventUpdateRowsCompressedV2, EventDeleteRowsCompressedV2:
		data, err := decompress(e.data)
		if err != nil {
			return nil, fmt.Errorf("table %s: compressed rows: %w", t.QualifiedName(), err)
		}
		e.data = data
	}
	return e, nil
}

// AppendRows decodes every row image and appends the values to dst, one
// image of e.Columns values per row for inserts and deletes and two (before,
// then after) for updates. Columns missing from an image are KindAbsent.
// Values refer to the event's bytes (or, for compressed events, to the
// inflated copy). With a reused dst no allocation happens per row; the one
// exception is a BINARY(n) value that lost trailing 0x00 bytes, padded back
// in a copy of its own. Errors are *DecodeError values naming the event.
func (e *RowsEvent) AppendRows(dst []Value) ([]Value, error) {
	if e.Table == nil {
		return dst, nil
	}
	data := e.data
	for len(data) > 0 {
		var err error
		var n int
		dst, n, err = e.appendImage(dst, data, e.Present, false)
		if err != nil {
			return dst, err
		}
		data = data[n:]
		if e.Kind == RowsUpdate {
			var m int
			dst, m, err = e.appendImage(dst, data, e.PresentAfter, e.partialJSON)
			if err != nil {
				return dst, err
			}
			data = data[m:]
			n += m
		}
		if n == 0 {
			// An image without columns takes no bytes: the rest of the
			// event could never be consumed.
			return dst, e.imageErr(-1, errors.New("row of zero bytes (no column present)"))
		}
	}
	return dst, nil
}

// appendImage decodes one row image at the start of data and returns the
// number of bytes it used.
func (e *RowsEvent) appendImage(dst []Value, data, present []byte, partial bool) ([]Value, int, error) {
	off := 0
	if partial {
		opts, n := lenencInt(data)
		if n == 0 {
			return dst, 0, e.imageErr(-1, errShort)
		}
		off += n
		if opts&1 != 0 {
			// One bit per JSON column says whether its value is a diff.
			nJSON := 0
			for i := range e.Table.Columns {
				if e.Table.Columns[i].Type == TypeJSON {
					nJSON++
				}
			}
			bm := (nJSON + 7) / 8
			if off+bm > len(data) {
				return dst, 0, e.imageErr(-1, errShort)
			}
			for _, b := range data[off : off+bm] {
				if b != 0 {
					return dst, 0, e.imageErr(-1, ErrPartialJSON)
				}
			}
			off += bm
		}
	}
	npresent := 0
	for _, b := range present {
		npresent += bits.OnesCount8(b)
	}
	nullLen := (npresent + 7) / 8
	if off+nullLen > len(data) {
		return dst, 0, e.imageErr(-1, fmt.Errorf("null bitmap: %w", errShort))
	}
	nulls := data[off : off+nullLen]
	off += nullLen
	base := len(dst)
	dst = growValues(dst, e.Columns)
	vals := dst[base:]
	bit := 0
	cols := e.Table.Columns
	for i := range cols {
		if present[i>>3]&(1<<(i&7)) == 0 {
			vals[i] = Value{Kind: KindAbsent}
			continue
		}
		isNull := nulls[bit>>3]&(1<<(bit&7)) != 0
		bit++
		if isNull {
			vals[i] = Value{Kind: KindNull}
			continue
		}
		n, err := decodeValue(&vals[i], &cols[i], data[off:])
		if err != nil {
			return dst, 0, e.imageErr(i, err)
		}
		off += n
	}
	return dst, off, nil
}

func growValues(dst []Value, n int) []Value {
	if cap(dst)-len(dst) < n {
		grown := make([]Value, len(dst), 2*cap(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	return dst[:len(dst)+n]
}

// imageErr locates a row-image error: a *DecodeError naming the event's
// file, position and type, wrapping the table, column and cause.
func (e *RowsEvent) imageErr(col int, err error) error {
	de := e.where
	if col < 0 {
		de.Err = fmt.Errorf("table %s: row image: %w", e.Table.QualifiedName(), err)
		return &de
	}
	c := &e.Table.Columns[col]
	name := c.Name
	if name == "" {
		name = fmt.Sprintf("#%d", col+1)
	}
	de.Err = fmt.Errorf("table %s column %s (%s): %w", e.Table.QualifiedName(), name, c.Type, err)
	return &de
}
