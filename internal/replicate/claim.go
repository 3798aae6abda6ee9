package replicate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// OverlapError refuses a stream that would write a table another stream
// of the same target writes (see position.ClaimSelection).
type OverlapError struct {
	Stream, Other string
	// Tables are the tables both select, "schema.table", sorted.
	Tables []string
	// OtherSelection is the other stream's filter options, as flags.
	OtherSelection string
}

func (e *OverlapError) Error() string {
	more := ""
	if len(e.Tables) > 1 {
		shown := e.Tables[1:min(len(e.Tables), 6)]
		more = fmt.Sprintf(" (and %d more: %s", len(e.Tables)-1, strings.Join(shown, ", "))
		if len(shown) < len(e.Tables)-1 {
			more += ", ..."
		}
		more += ")"
	}
	return fmt.Sprintf("stream %q would write table %s%s, which stream %q writes (%s): two streams must not write one table "+
		"(each would overwrite the other's rows); narrow --databases, --tables or --exclude of stream %q, or, if stream %q will "+
		"never run again, delete its row on the target: DELETE FROM binlane.streams WHERE name = %s",
		e.Stream, e.Tables[0], more, e.Other, e.OtherSelection, e.Stream, e.Other, sqlquote.String(e.Other))
}

// selection is a stream's filter options as recorded in its row.
type selection struct {
	Databases []string `json:"databases,omitempty"`
	Tables    []string `json:"tables,omitempty"`
	Exclude   []string `json:"exclude,omitempty"`
}

func (s selection) rules() filter.Rules {
	return filter.Rules{Databases: s.Databases, Tables: s.Tables, Exclude: s.Exclude}
}

func (s selection) String() string {
	var parts []string
	for _, o := range []struct {
		flag string
		vals []string
	}{{"--databases", s.Databases}, {"--tables", s.Tables}, {"--exclude", s.Exclude}} {
		if len(o.vals) > 0 {
			parts = append(parts, o.flag+" "+strings.Join(o.vals, ","))
		}
	}
	if len(parts) == 0 {
		return "every database"
	}
	return strings.Join(parts, " ")
}

// claimTables records the stream's selection in its row, refusing it when
// another stream of the target selects one of the tables this one would
// write: those its selection matches on the source or on the target now.
// A table neither has yet (created later by DDL on both sources) is not
// seen.
func (r *run) claimTables(ctx context.Context) error {
	cfg := &r.cfg
	mine := selection{Databases: cfg.Rules.Databases, Tables: cfg.Rules.Tables, Exclude: cfg.Rules.Exclude}
	enc, err := json.Marshal(mine)
	if err != nil {
		return err
	}
	src, err := cfg.Source.OpenDB("")
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer src.Close()
	tables, err := schema.SelectedTables(ctx, src, cfg.Rules)
	if err != nil {
		return fmt.Errorf("list the source's tables: %w", err)
	}
	onTarget, err := schema.SelectedTables(ctx, r.meta, cfg.Rules)
	if err != nil {
		return fmt.Errorf("list the target's tables: %w", err)
	}
	tables = append(tables, onTarget...)
	slices.SortFunc(tables, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	tables = slices.Compact(tables)
	return position.ClaimSelection(ctx, r.meta, cfg.Stream, r.currentOwner(), string(enc), func(other, recorded string) error {
		var theirs selection
		if err := json.Unmarshal([]byte(recorded), &theirs); err != nil {
			return fmt.Errorf("stream %q: its recorded selection %q: %w", other, recorded, err)
		}
		rules := theirs.rules()
		var both []string
		for _, t := range tables {
			if rules.Match(t[0], t[1]) {
				both = append(both, t[0]+"."+t[1])
			}
		}
		if len(both) > 0 {
			return &OverlapError{Stream: cfg.Stream, Other: other, Tables: both, OtherSelection: theirs.String()}
		}
		return nil
	})
}
