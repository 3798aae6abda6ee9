package scheduler

import (
	"testing"
	"time"
)

// BenchmarkManyKeys is the scheduler's work for transactions of many rows
// (order entry: about 50 row keys each), merged 128 to a batch: Add,
// Next, Committed. Most keys are new; a few (a warehouse, a district) recur.
func BenchmarkManyKeys(b *testing.B) {
	s := New(Config{MaxBatch: 128, MaxUnits: 1024}, 1)
	var seq, key uint64
	b.ReportAllocs()
	for b.Loop() {
		for range 128 {
			seq++
			u := &Unit{Seq: seq, Set: &KeySet{}, Bytes: 1}
			for j := range 50 {
				key++
				k := key * 0x9e3779b97f4a7c15
				if j < 2 {
					k = uint64(j + 1) // hot rows
				}
				u.Set.Keys = append(u.Set.Keys, k)
			}
			s.Add(u)
		}
		commitAll(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq), "ns/unit")
}

// BenchmarkKeysColdCache is BenchmarkManyKeys as the applier meets it: a
// window of 512 units in flight (the key table far larger than a core's
// L2 cache), and between two units the rest of binlane's work, which
// evicts the table from the cache (here: a pass over 4 MiB).
func BenchmarkKeysColdCache(b *testing.B) {
	s := New(Config{MaxBatch: 128, MaxUnits: 1 << 20}, 1)
	evict := make([]byte, 4<<20)
	var seq, key uint64
	var sink byte
	add := func() {
		seq++
		u := &Unit{Seq: seq, Set: &KeySet{}, Bytes: 1}
		for j := range 50 {
			key++
			k := mix(key) // keys are hashes (xxhash of the row's key)
			if j < 2 {
				k = uint64(j + 1)
			}
			u.Set.Keys = append(u.Set.Keys, k)
		}
		s.Add(u)
	}
	for range 512 {
		add()
	}
	var scheduled time.Duration
	for b.Loop() {
		for i := 0; i < len(evict); i += 64 {
			evict[i]++
		}
		sink += evict[seq%uint64(len(evict))]
		start := time.Now()
		batch := s.Next()
		s.Committed(batch)
		for range batch {
			add()
		}
		scheduled += time.Since(start)
	}
	b.ReportMetric(float64(scheduled.Nanoseconds())/float64(seq-512), "sched-ns/unit")
	_ = sink
}

// mix is splitmix64's finalizer: a counter in, a hash-like key out.
func mix(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// BenchmarkKeysLargeUnit is the scheduler's work for a bulk transaction
// (the bulk benchmark: a 100,000-row UPDATE or DELETE every 3,000
// transactions): units of 100,000 row keys, each added, dispatched and
// committed. Its keys' slots outgrow every cache: reading them all ahead
// of the puts would read each twice from memory.
func BenchmarkKeysLargeUnit(b *testing.B) {
	s := New(Config{MaxBatch: 128, MaxUnits: 1024}, 1)
	var seq, key uint64
	for b.Loop() {
		seq++
		u := &Unit{Seq: seq, Set: &KeySet{}, Bytes: 1}
		for range 100_000 {
			key++
			u.Set.Keys = append(u.Set.Keys, mix(key))
		}
		s.Add(u)
		commitAll(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq)/100_000, "ns/key")
}

// commitAll dispatches and commits every ready batch.
func commitAll(s *Scheduler) {
	for {
		batch := s.Next()
		if batch == nil {
			return
		}
		s.Committed(batch)
	}
}
