package rowsql

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/txn"
)

// failingSink answers like sink, except that round trip fail (0-based)
// fails with a server error.
type failingSink struct {
	sink
	fail int
}

var errServer = errors.New("server error")

func (s *failingSink) Send(sql []byte, stmts []Stmt) ([]int64, error) {
	if len(s.trips) == s.fail {
		s.trips = append(s.trips, nil)
		return nil, errServer
	}
	return s.sink.Send(sql, stmts)
}

// TestHold: under Hold nothing is sent; the round trips held go first, in
// order, once Hold is off, the same ones a writer without Hold sends; a
// failing one stops the rest (no COMMIT); a batch too large to hold fails
// with ErrHoldFull; Discard forgets what was held.
func TestHold(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	inserts := func(n int) []txn.Change {
		var out []txn.Change
		for i := range n {
			out = append(out, ins(row(i64(int64(i)), str(strings.Repeat("x", 200)))))
		}
		return out
	}
	tail := &position.Tail{Stream: "s", Owner: "o", Save: position.Save{GTID: "0-1-5", Applied: 1}}
	render := func(w *Writer, rows int) error {
		w.MaxRoundTrip, w.MaxStatement = 2000, 1000
		if err := w.Begin(); err != nil {
			return err
		}
		if err := w.Rows(t1, kv, inserts(rows)); err != nil {
			return err
		}
		return w.Finish()
	}
	for _, tc := range []struct {
		name    string
		rows    int
		fail    int // round trip that fails (-1: none)
		holdErr error
	}{
		{"one round trip", 2, -1, nil},
		{"several round trips", 25, -1, nil},
		{"the first held round trip fails", 25, 0, nil},
		{"a later held round trip fails", 25, 1, nil},
		{"too large to hold", 40, -1, ErrHoldFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := &sink{}
			pw := NewWriter(plain)
			if err := render(pw, tc.rows); err != nil {
				t.Fatal(err)
			}
			if err := pw.Commit(tail); err != nil {
				t.Fatal(err)
			}

			s := &failingSink{fail: tc.fail}
			w := NewWriter(s)
			w.Hold = true
			err := render(w, tc.rows)
			if !errors.Is(err, tc.holdErr) {
				t.Fatalf("rendering under Hold: %v, want %v", err, tc.holdErr)
			}
			if len(s.trips) != 0 {
				t.Fatalf("%d round trips sent under Hold", len(s.trips))
			}
			if tc.holdErr != nil {
				return
			}
			if tc.fail >= len(plain.trips)-1 {
				t.Fatalf("round trip %d fails, of %d held: the case is not reached", tc.fail, len(plain.trips)-1)
			}
			if want := len(plain.trips) - 1; w.Held() != want {
				t.Errorf("%d round trips held, want %d", w.Held(), want)
			}
			w.Hold = false
			err = w.Commit(tail)
			if tc.fail >= 0 {
				if !errors.Is(err, errServer) {
					t.Fatalf("Commit: %v, want the server's error", err)
				}
				if len(s.trips) != tc.fail+1 || slices.Contains(s.all(), "COMMIT") {
					t.Errorf("sent after the failure:\n%s", strings.Join(s.all(), "\n"))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(s.trips), fmt.Sprint(plain.trips); got != want {
				t.Errorf("round trips held then sent:\n%s\nwant as sent while rendering:\n%s", got, want)
			}
		})
	}
	t.Run("discard forgets what was held", func(t *testing.T) {
		s := &sink{}
		w := NewWriter(s)
		w.Hold = true
		if err := render(w, 25); err != nil || w.Held() == 0 {
			t.Fatalf("held %d, %v", w.Held(), err)
		}
		w.Discard()
		w.Hold = false
		if err := render(w, 2); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(tail); err != nil {
			t.Fatal(err)
		}
		if len(s.trips) != 1 || strings.Count(strings.Join(s.all(), "\n"), "INSERT") != 1 {
			t.Errorf("sent:\n%s", strings.Join(s.all(), "\n"))
		}
	})
}
