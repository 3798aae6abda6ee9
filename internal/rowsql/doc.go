// Package rowsql renders source row changes as the SQL binlane sends to the
// target: multi-row INSERT and DELETE statements, UPDATEs that find rows
// by key, collapsed last images when transactions are merged (the rows of a
// table that existed and changed as one REPLACE: replace.go; many changed
// rows as LOAD DATA ... REPLACE files: load.go, or as a temporary table
// joined into it: join.go), the session
// switches rows events record, and the guard that turns a statement which
// did not affect the rows it should have into a failed commit.
//
// Rendering is a pure function of plans and changes: the Writer fills round
// trips (';'-separated statements with a description of each) and hands
// every full one to a Sink, which sends it (the applier's worker) or keeps
// it (tests). The package must never talk to a server.
//
// # Runs across a merged commit
//
// A target transaction holds the row changes of many source transactions,
// and an application interleaves its tables
// (order entry: a stock UPDATE, an order line INSERT, a stock UPDATE, ...),
// so changes of one kind and table are seldom adjacent and each would be a
// statement of its own, whose parsing and planning cost the target more
// than the row. The run planner gathers them: it moves a change earlier, to
// the end of the last pending run of its group (table plan, operation,
// foreign-key session setting), when it shares no conflict key with any
// change it moves past. The writer then writes each run as one statement of
// the forms it already has (multi-row INSERT, DELETE ... IN, the upsert of
// updates that keep their primary key and foreign-key columns).
//
// Why the reordered changes do what the source's order did. The conflict
// keys are those the scheduler orders transactions by (package writeset):
// every primary and unique key value of the before and after images, the
// parent key values a change references (shared) and the key values a
// parent change creates, removes or changes (exclusive). Not the lock keys
// (writeset.Span): the scheduler also orders a new reference after an
// uncommitted change of its parent row, because InnoDB's check waits for
// that row's lock; inside one transaction there is no wait, and a parent
// change that keeps its key values leaves the row the check finds (order
// entry: history rows referencing a district between two updates of its
// next order number, which then merge; shop: order lines between updates
// of their product's stock). Two changes whose
// keys are disjoint touch different rows, reach no common unique value, and
// neither is a parent row the other references, checks or cascades into
// (one level: a change that fires a foreign-key action is a fence, below):
// each statement finds, inserts, deletes and checks the same rows in either
// order, succeeds or fails the same, and affects the same row count. The
// planner never moves a change past one it conflicts with, so changes that
// share a key (the same row, a unique value handed from one row to another,
// a parent and its child) keep the source's order: parents are inserted
// before their children and children deleted before their parents. Inside
// one statement the rows are processed in VALUES order (inserts, upserts);
// a DELETE's rows, which the server visits in its own order, are pairwise
// disjoint (two deletes of one key value are separated by the change that
// brought it back, which conflicts with both, so they are never in one run;
// rows of one table linked by a foreign key are a fence, below). Every
// statement keeps its row-count check: a run's statement must affect each
// of its rows, as the single statements did. Changes of collapsible tables
// are not planned: they are written last, as without runs (they have no
// key in common with any other table's change).
//
// # Partial row images
//
// A change from a MINIMAL or NOBLOB image (txn.Change.Partial) is written
// as the plain statement of its columns: an UPDATE of the columns the
// source wrote, found by the row key; a DELETE by the row key (the only
// form it shares, with other deletes of its table); an INSERT of the
// columns the image has. It never joins an upsert run, a collapsed image
// or a multi-row INSERT, which assume the whole row; a partial change of a
// collapsible table first writes what the collapser holds of that table.
// The run planner moves it only as far as its writeset allows (package
// writeset: a key value the image lacks takes the table whole, a fence
// here). What stops (Named, before the transaction is scheduled): an
// update or delete whose image lacks a column of the key that names the
// row on the target, or a target table without such a key. See partial.go.
//
// The statement forms are those of source order (ordered.go, upsert.go),
// now over longer runs. A DELETE of a composite key ORs the rows' key
// conditions: EXPLAIN on MariaDB 10.11 shows a range lookup on the primary
// key for 1, 2 and 500 rows, where the row-constructor form (a,b) IN
// ((1,2)) of one row scans the whole table (MDEV-32878). A DELETE takes at
// most maxDeleteRows rows, below in_predicate_conversion_threshold, and no
// more than the target's statistics let the optimizer answer with lookups
// (deleteRows: a table they count as empty gets one key per DELETE).
//
// # Net effect of repeated updates
//
// An update that changes no key value (primary, unique or foreign-key
// column: an upsert run's member that moves no unique value) merges into an earlier such update of
// the same group when that earlier change is the last one pending that
// holds any of its keys, and no fence came between: the earlier one's
// statement then writes the later one's after image, and the later one
// writes nothing (order entry: a warehouse row that a dozen merged
// transactions update is written once). Why that is exact: having no key
// beyond the earlier change's, and none in common with any change in
// between, the later update may move to right after the earlier one (the
// rule above); two adjacent updates of one row that keep its keys do
// together what one update from the first before image to the second
// after image does. No unique value moves (neither changes one), no
// foreign-key check or action runs (neither changes a foreign-key column,
// and no fence in between fired one), and no trigger sees the middle
// image (tables with triggers are not upserted). The merged update still
// must find its row: its row-count check is the first one's. Partial row
// images never merge.
//
// Fences keep their place and let nothing move past them: a change of a
// table without a usable key, of one a self-referencing foreign key or a
// foreign-key cycle links (written row by row in source order), of a table
// with triggers or one that must run alone (plan.Table.Serialize), a change
// with a key that could not be normalized (its writeset takes a table
// whole), and a change that fires a foreign-key action (its cascades reach
// rows the binlog does not name). So are the edges of what is planned at
// once: every step of a body that is not rows (a savepoint, a statement),
// the end of the target transaction, and a bound on what waits
// (maxPendingChanges, maxPendingBytes); a run never spans them.
package rowsql
