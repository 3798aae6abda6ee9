package position

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestClaimSelection: a claim is checked against the other streams'
// recorded selections (not its own, not a cut-over stream's, not one never
// recorded), is recorded only on behalf of the stream's owner, and two
// streams claiming at the same moment take turns: of each pair claiming
// the same selection at once, exactly one is refused, seeing the other's.
func TestClaimSelection(t *testing.T) {
	_, db := testDB(t)
	ctx := context.Background()
	errSame := errors.New("same selection")
	sameAs := func(mine string) func(other, theirs string) error {
		return func(other, theirs string) error {
			if theirs == mine {
				return fmt.Errorf("%w as stream %s", errSame, other)
			}
			return nil
		}
	}
	stream := func(name string) string {
		t.Helper()
		owner := NewOwnerToken()
		if _, err := Create(ctx, db, State{Name: name}); err != nil {
			t.Fatal(err)
		}
		if err := TakeOver(ctx, db, name, owner); err != nil {
			t.Fatal(err)
		}
		return owner
	}

	a, b := stream("a"), stream("b")
	stream("never") // never claimed: no selection to check against
	if err := ClaimSelection(ctx, db, "a", a, "x", sameAs("x")); err != nil {
		t.Fatal(err)
	}
	if err := ClaimSelection(ctx, db, "a", a, "x", sameAs("x")); err != nil {
		t.Fatalf("a stream's own claim again: %v", err)
	}
	if err := ClaimSelection(ctx, db, "b", b, "x", sameAs("x")); !errors.Is(err, errSame) {
		t.Fatalf("b claiming a's selection: %v", err)
	}
	if err := ClaimSelection(ctx, db, "b", "not-the-owner", "y", sameAs("y")); err == nil {
		t.Fatal("a claim by a process that does not own the stream was recorded")
	}
	if _, err := db.ExecContext(ctx, "UPDATE "+Table+" SET state = ? WHERE name = 'a'", StateCutOver); err != nil {
		t.Fatal(err)
	}
	if err := ClaimSelection(ctx, db, "b", b, "x", sameAs("x")); err != nil {
		t.Fatalf("b claiming the selection of a stream that was cut over: %v", err)
	}

	for i := range 20 {
		names := [2]string{fmt.Sprintf("p%d", i), fmt.Sprintf("q%d", i)}
		sel := fmt.Sprintf("race%d", i)
		owners := [2]string{stream(names[0]), stream(names[1])}
		var wg sync.WaitGroup
		var errs [2]error
		start := make(chan struct{})
		for j := range 2 {
			wg.Go(func() {
				<-start
				errs[j] = ClaimSelection(ctx, db, names[j], owners[j], sel, sameAs(sel))
			})
		}
		close(start)
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: two streams claimed %s at once: %v, %v", i, sel, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, errSame) {
				t.Fatalf("round %d: %v", i, err)
			}
		}
	}
}
