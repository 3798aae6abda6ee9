package binlog

// slabSize is how many values one batch allocation holds.
const slabSize = 64

// slab hands out values of a batch-allocated array: one allocation per
// slabSize values instead of one per value. A value is never handed out
// twice, so it is as safe to keep as one from new(T); a kept value only
// keeps its batch (a few kilobytes) alive.
type slab[T any] struct{ free []T }

func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabSize)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// slabs batch the structs of the events every transaction carries, so that
// decoding costs well under one allocation per row image (see
// BenchmarkDecodeSysbench). Rarer events are allocated one by one.
type slabs struct {
	events   slab[Event]
	rows     slab[RowsEvent]
	gtids    slab[MariaGTIDEvent]
	xids     slab[XIDEvent]
	queries  slab[QueryEvent]
	annotate slab[AnnotateRowsEvent]
	mysql    slab[MySQLGTIDEvent]
	rowsQ    slab[RowsQueryEvent]
}
