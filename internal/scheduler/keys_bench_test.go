package scheduler

import "testing"

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
		for {
			batch := s.Next()
			if batch == nil {
				break
			}
			s.Committed(batch)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq), "ns/unit")
}
