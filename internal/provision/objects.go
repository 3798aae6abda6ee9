package provision

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
)

// The objects other than tables (views, sequences, stored routines,
// events) are created as the source has them at the copy's start: SHOW
// CREATE's statement, as CREATE OR REPLACE (a copy started again after a
// crash before it was recorded finds them there), in the session they were
// created in (sql_mode, the client's character set, the connection's
// collation, an event's time zone), with their DEFINER and SQL SECURITY.
// Their later DDL comes through the stream, after the start, exactly once.
// Sequences come first (a table's DEFAULT NEXTVAL(s) needs s), with their
// state; views last, in an order the target accepts.

// ObjectOptions say how objects are created.
type ObjectOptions struct {
	// CurrentDefiner creates every object with DEFINER=CURRENT_USER
	// (binlane's target account) instead of the source's definer.
	CurrentDefiner bool
	// EventsAsSource creates events with the source's status; by default an
	// event is created DISABLE ON SLAVE, as MariaDB's replica does: its
	// writes come through the stream, and running it on the target too
	// would write them twice. The cut-over enables it.
	EventsAsSource bool
}

// Skipped is an object the target would not take, and why.
type Skipped struct {
	Object *schema.ObjectDef
	Reason string
}

// ErrMissingDefiner is the error when objects name a DEFINER account the
// target does not have.
var ErrMissingDefiner = errors.New("the target lacks DEFINER accounts")

// CreateDatabases creates the databases the target lacks, as the source
// defines them (creates are schema.ShowCreateDatabase's statements).
func CreateDatabases(ctx context.Context, dst *sql.DB, creates []string) error {
	for _, q := range creates {
		if _, err := dst.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create a database on the target (%s): %w", q, err)
		}
	}
	return nil
}

// CreateSequences creates the sequences among objs with their state; run
// it before the tables.
func CreateSequences(ctx context.Context, dst *sql.DB, objs []*schema.ObjectDef, opt ObjectOptions) error {
	c := creator{dst: dst, opt: opt}
	for _, o := range objs {
		if o.Kind != schema.KindSequence {
			continue
		}
		if o.Sequence == nil {
			return fmt.Errorf("create %s on the target: its state was not read", o)
		}
		if err := c.create(ctx, o, schema.SequenceInsert(o)); err != nil {
			return err
		}
	}
	return nil
}

// CreateObjects creates the routines, views and events among objs (not the
// sequences: CreateSequences). Views that the target will not take after
// every other one is created (one over a table it lacks) are returned,
// with the server's reason; any other failure is an error naming the
// object. Check their DEFINERs first (CheckDefiners).
func CreateObjects(ctx context.Context, dst *sql.DB, objs []*schema.ObjectDef, opt ObjectOptions) ([]Skipped, error) {
	c := creator{dst: dst, opt: opt}
	// Routines first: a view may call a function (a routine's body is
	// checked when it runs, not when it is created).
	for _, o := range objs {
		if slices.Contains(routineKinds, o.Kind) {
			if err := c.create(ctx, o); err != nil {
				return nil, err
			}
		}
	}
	var views []*schema.ObjectDef
	for _, o := range objs {
		if o.Kind == schema.KindView {
			views = append(views, o)
		}
	}
	skipped, err := c.createViews(ctx, views)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.Kind == schema.KindEvent {
			if err := c.create(ctx, o); err != nil {
				return nil, err
			}
		}
	}
	return skipped, nil
}

// routineKinds are the stored routines, packages before their bodies (as
// schema.ReadObjects lists them).
var routineKinds = []schema.ObjectKind{schema.KindProcedure, schema.KindFunction, schema.KindPackage, schema.KindPackageBody}

// creator runs objects' definitions on the target.
type creator struct {
	dst *sql.DB
	opt ObjectOptions
}

// createViews creates views whose dependencies may not exist yet: each
// pass creates those it can, until a pass creates none. A view over what
// the target lacks or binlane may not read there (a database the stream
// does not copy) is left out.
func (c *creator) createViews(ctx context.Context, views []*schema.ObjectDef) ([]Skipped, error) {
	pending := views
	for {
		var next []*schema.ObjectDef
		var reasons []error
		for _, v := range pending {
			err := c.create(ctx, v)
			switch {
			case err == nil:
			case sqlerr.Is(err, sqlerr.NoSuchTable, viewInvalid, sqlerr.NoSuchRoutine, sqlerr.TableAccessDenied):
				next, reasons = append(next, v), append(reasons, err)
			default:
				return nil, err
			}
		}
		if len(next) == 0 {
			return nil, nil
		}
		if len(next) == len(pending) {
			out := make([]Skipped, len(next))
			for i, v := range next {
				out[i] = Skipped{Object: v, Reason: serverMessage(reasons[i])}
			}
			return out, nil
		}
		pending = next
	}
}

// viewInvalid is ER_VIEW_INVALID: a view names a table, column or function
// that does not exist (yet).
const viewInvalid = 1356

// create runs o's definition (and then, for a sequence, its state) in a
// session of its own, thrown away after: its settings are o's.
func (c *creator) create(ctx context.Context, o *schema.ObjectDef, after ...string) error {
	setup, err := ObjectSession(o)
	if err != nil {
		return err
	}
	create := OrReplace(o.Create)
	if c.opt.CurrentDefiner {
		create = CurrentDefiner(create)
	}
	if o.Kind == schema.KindEvent && !c.opt.EventsAsSource {
		create = DisabledOnReplica(create)
	}
	if err := inThrowawaySession(ctx, c.dst, append(append(setup, create), after...)...); err != nil {
		return fmt.Errorf("create %s on the target: %w%s", o, err, createHint(err))
	}
	return nil
}

// createHint says what to do about the errors a DBA can fix.
func createHint(err error) string {
	switch {
	case sqlerr.Is(err, sqlerr.SpecificAccessDenied):
		return " (creating an object with another account as its DEFINER needs SET USER on the target: grant it, " +
			"or use --definer=current to create the objects as binlane's account)"
	case sqlerr.Is(err, sqlerr.BinlogUnsafeRoutine, sqlerr.BinlogCreateRoutineNeedSuper):
		return " (a target that binlogs takes stored functions only with log_bin_trust_function_creators=ON: " +
			"SET GLOBAL log_bin_trust_function_creators = ON there, and in its configuration file)"
	}
	return ""
}

// CheckDefiners stops a copy before it creates anything when objs name a
// DEFINER account the target lacks: MariaDB takes such an object (with a
// note, and not always that: not for a routine created by an account
// without every privilege), and it fails when used. An account is tried
// on a view of binlane's own schema, created with it as DEFINER and
// dropped again: the server's note says whether it exists, with no
// privilege on the mysql schema. The error is ErrMissingDefiner, naming
// each account and its objects.
func CheckDefiners(ctx context.Context, dst *sql.DB, objs []*schema.ObjectDef, opt ObjectOptions) error {
	if opt.CurrentDefiner {
		return nil
	}
	users := map[string][]string{}
	var order []string
	for _, o := range objs {
		if o.Definer == "" {
			continue
		}
		if users[o.Definer] == nil {
			order = append(order, o.Definer)
		}
		users[o.Definer] = append(users[o.Definer], o.String())
	}
	var missing []string
	for _, d := range order {
		exists, err := definerExists(ctx, dst, d)
		if err != nil {
			return fmt.Errorf("check the DEFINER %s of %s on the target: %w%s", d, strings.Join(users[d], ", "), err, createHint(err))
		}
		if !exists {
			missing = append(missing, fmt.Sprintf("%s (DEFINER of %s)", d, strings.Join(users[d], ", ")))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; create the accounts on the target first (with the privileges the objects need), "+
		"or start again with --definer=current to create the objects as binlane's account", ErrMissingDefiner,
		strings.Join(missing, "; "))
}

// definerExists tries the account user@host (information_schema's
// spelling: the host follows the last @) as a view's DEFINER.
func definerExists(ctx context.Context, dst *sql.DB, definer string) (bool, error) {
	if !strings.Contains(definer, "@") {
		return false, fmt.Errorf("not an account: %q", definer)
	}
	conn, err := dst.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	probe := "`binlane`.`definer_probe`"
	if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE DEFINER="+sqlquote.Account(sqlquote.SplitAccount(definer))+
		" SQL SECURITY INVOKER VIEW "+probe+" AS SELECT 1 AS probe"); err != nil {
		return false, err
	}
	exists := true
	rows, err := conn.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		return false, err
	}
	for rows.Next() {
		var level, msg string
		var code uint16
		if err := rows.Scan(&level, &code, &msg); err != nil {
			rows.Close()
			return false, err
		}
		exists = exists && code != sqlerr.NoSuchDefiner
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	_, err = conn.ExecContext(ctx, "DROP VIEW IF EXISTS "+probe)
	return exists, err
}

// ObjectSession is the statements that give a fresh target session the
// context o was created in. The values come from the source: each is
// checked to be a plain name (a mode list, a character set, a collation, a
// time zone) before it goes into SQL.
func ObjectSession(o *schema.ObjectDef) ([]string, error) {
	sets := []string{"sql_mode = " + orDefault(o.SQLMode, schema.DefinitionMode)}
	if o.Charset != "" {
		sets = append(sets, "character_set_client = "+o.Charset, "collation_connection = "+o.Collation)
	}
	if o.TimeZone != "" {
		sets = append(sets, "time_zone = "+o.TimeZone)
	}
	for i, s := range sets {
		name, v, _ := strings.Cut(s, " = ")
		lit, err := sqlquote.Setting(v)
		if err != nil {
			return nil, fmt.Errorf("create %s on the target: its %s %w", o, name, err)
		}
		sets[i] = name + " = " + lit
	}
	return []string{"USE " + sqlquote.Name(o.Schema), "SET SESSION " + strings.Join(sets, ", ")}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// createHead is CREATE and the attributes before the object's kind.
var createHead = regexp.MustCompile(`(?is)^\s*CREATE\s+(OR\s+REPLACE\s+)?`)

// OrReplace makes SHOW CREATE's statement a CREATE OR REPLACE.
func OrReplace(create string) string {
	m := createHead.FindStringSubmatchIndex(create)
	if m == nil || m[2] >= 0 {
		return create
	}
	return "CREATE OR REPLACE " + create[m[1]:]
}

// CurrentDefiner replaces the statement's DEFINER with CURRENT_USER.
func CurrentDefiner(create string) string {
	start, end, _, _, ok := schema.DefinerAt(create)
	if !ok {
		return create
	}
	return create[:start] + "DEFINER=CURRENT_USER" + create[end:]
}

// DisabledOnReplica makes SHOW CREATE EVENT's statement of an enabled
// event create it DISABLE ON SLAVE, as MariaDB's replica does; a disabled
// one stays as it is.
func DisabledOnReplica(create string) string {
	start, end, ok := schema.EventStatusAt(create)
	if !ok || !strings.EqualFold(create[start:end], "ENABLE") {
		return create
	}
	return create[:start] + "DISABLE ON SLAVE" + create[end:]
}

// serverMessage is the server's own words in err (the whole error when it
// has none).
func serverMessage(err error) string { return sqlerr.Message(err) }
