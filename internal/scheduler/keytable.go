package scheduler

// keyTable maps row keys to their holders. It is the graph's busiest
// structure: every key of every unit is put when the unit is added and
// released when it commits (order entry: 50 keys per transaction, 35 of
// them shared). A Go map took two probes for each (a lookup, then an
// assignment or a delete), hashed keys that are hashes already, and its
// lookups were a tenth of binlane's CPU on order entry. Here one probe
// finds the entry, which the caller updates in place.
//
// Open addressing with linear probing, at most half full. An entry whose
// holders are both nil is an empty slot: a key nobody holds needs no
// entry. Removal shifts the entries after it back instead of leaving a
// tombstone, so probes stay short however long the stream runs. The table
// shrinks again after a burst of keys (a window of large transactions).
type keyTable struct {
	slots []keySlot
	n     int  // entries
	shift uint // 64 - log2(len(slots))
	// touched keeps what touchAhead read, so the compiler keeps the reads.
	touched uint64
}

type keySlot struct {
	key uint64
	h   holders
}

func (s *keySlot) empty() bool { return s.h.excl == nil && s.h.last == nil }

// keyTableMin is the smallest table, in slots (48 KiB). A table of up to
// keyTableKeep slots (1.5 MiB: a full window of order entry's keys) keeps
// its size when it empties: a stream that drains its window and fills it
// again would resize it every time.
const keyTableMin, keyTableKeep = 2048, 1 << 16

// home is where a key's probe starts. Keys are hashes, but not all of
// binlane's are (tests, table seeds): Fibonacci hashing takes the high
// bits of the key times the golden ratio, which spreads any key.
func (t *keyTable) home(k uint64) int { return int((k * 0x9e3779b97f4a7c15) >> t.shift) }

func (t *keyTable) next(i int) int { return (i + 1) & (len(t.slots) - 1) }

// find returns the slot holding k, or else the empty slot that ends k's
// probe (found false), where k would go. The table must have slots.
func (t *keyTable) find(k uint64) (i int, found bool) {
	for i = t.home(k); ; i = t.next(i) {
		if s := &t.slots[i]; s.empty() {
			return i, false
		} else if s.key == k {
			return i, true
		}
	}
}

// touchAhead reads, when i starts a block of touchBlock keys, the home
// slots of that block of keys, before the caller puts or releases them one
// by one (keys[i] first). The table outgrows a core's cache (order entry:
// 1.5 MiB), and each key's slot is a cache miss; a find waits for its
// miss, but these reads do not depend on each other, so the core has
// several misses in flight at once and the finds that follow hit the
// cache (BenchmarkKeysColdCache). A block at a time: the slots of a bulk
// unit's 100,000 keys, all read ahead, left the cache before their puts
// came (BenchmarkKeysLargeUnit).
func (t *keyTable) touchAhead(keys []uint64, i int) {
	if i%touchBlock != 0 || t.n == 0 {
		return
	}
	var x uint64
	for _, k := range keys[i:min(i+touchBlock, len(keys))] {
		x ^= t.slots[t.home(k)].key
	}
	t.touched ^= x
}

// touchBlock is how many keys are touched ahead of their puts or
// releases: enough misses in flight, few enough slots to stay cached.
const touchBlock = 32

// get returns k's holders (none: zero).
func (t *keyTable) get(k uint64) holders {
	if t.n == 0 {
		return holders{}
	}
	i, _ := t.find(k)
	return t.slots[i].h // an empty slot's holders are zero
}

// put returns k's holders to update in place, with a new entry when nobody
// holds k: the caller must then make one of them non-nil. The pointer is
// good until the next put or release.
func (t *keyTable) put(k uint64) *holders {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(keyTableMin, 2*len(t.slots)))
	}
	i, found := t.find(k)
	if !found {
		t.slots[i].key = k
		t.n++
	}
	return &t.slots[i].h
}

// reserve makes room for n more entries at once: a unit of 100,000 keys
// (a bulk transaction) grew the table by doubling, moving every entry at
// each of seven resizes (bulk benchmark, 2026-11-29: a tenth of binlane's
// CPU, and twice the table's memory allocated). Keys already held take
// no new entry: room for them is only reserved.
func (t *keyTable) reserve(n int) {
	size := max(keyTableMin, len(t.slots))
	for 2*(t.n+n) > size {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(size)
	}
}

// release forgets u as a holder of k (it committed), and the entry when
// nobody holds k any more.
func (t *keyTable) release(k uint64, u *Unit) {
	if t.n == 0 {
		return
	}
	i, found := t.find(k)
	if !found {
		return
	}
	s := &t.slots[i]
	if s.h.excl == u {
		s.h.excl = nil
	}
	if s.h.last == u {
		s.h.last = nil
	}
	if s.empty() {
		t.remove(i)
	}
}

// remove empties slot i, moving back each entry after it in its run whose
// probe would no longer reach it: one whose home is not cyclically in
// (i, j], j its slot.
func (t *keyTable) remove(i int) {
	t.n--
	for j := t.next(i); !t.slots[j].empty(); j = t.next(j) {
		h := t.home(t.slots[j].key)
		if i < j && (h <= i || h > j) || j < i && h <= i && h > j {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = keySlot{}
	if len(t.slots) > keyTableKeep && 16*t.n < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

// resize moves the entries into a table of size slots (a power of two).
func (t *keyTable) resize(size int) {
	old := t.slots
	t.slots = make([]keySlot, size)
	t.shift = 64
	for n := size; n > 1; n >>= 1 {
		t.shift--
	}
	for i := range old {
		if s := &old[i]; !s.empty() {
			j, _ := t.find(s.key) // keys are distinct: the empty slot its probe ends at
			t.slots[j] = *s
		}
	}
}
