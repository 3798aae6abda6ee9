package schema

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// load reads one table's definition; nil when the table does not exist.
func load(ctx context.Context, db *sql.DB, schemaName, table string) (*Table, error) {
	t := &Table{byName: map[string]int{}}
	var engine sql.NullString
	var tx sql.NullString
	err := db.QueryRowContext(ctx, `SELECT t.TABLE_SCHEMA, t.TABLE_NAME, t.ENGINE, e.TRANSACTIONS
		FROM information_schema.TABLES t LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE
		WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ?`, schemaName, table).Scan(&t.Schema, &t.Name, &engine, &tx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Views have no engine: writes go through to their base table, which
	// decides. (ENGINES lists an engine's TRANSACTIONS; SEQUENCE tables
	// report their underlying engine.)
	t.Engine = engine.String
	t.Transactional = !engine.Valid || strings.EqualFold(tx.String, "YES")
	if err := loadColumns(ctx, db, t); err != nil {
		return nil, err
	}
	if len(t.Columns) == 0 {
		return nil, nil
	}
	if err := loadIndexes(ctx, db, t); err != nil {
		return nil, err
	}
	if t.ForeignKeys, err = loadForeignKeys(ctx, db, "k.TABLE_SCHEMA = ? AND k.TABLE_NAME = ?", t.Schema, t.Name); err != nil {
		return nil, err
	}
	if t.ReferencedBy, err = loadForeignKeys(ctx, db, "k.REFERENCED_TABLE_SCHEMA = ? AND k.REFERENCED_TABLE_NAME = ?", t.Schema, t.Name); err != nil {
		return nil, err
	}
	var n int
	err = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TRIGGERS
		WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?`, t.Schema, t.Name).Scan(&n)
	if err != nil {
		return nil, err
	}
	t.HasTriggers = n > 0
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%v|%v|%v|%v|%v|%v", t.Engine, t.Columns, t.PrimaryKey, t.UniqueKeys,
		t.ForeignKeys, t.ReferencedBy, t.HasTriggers))
	t.Signature = hex.EncodeToString(sum[:])
	return t, nil
}

func loadColumns(ctx context.Context, db *sql.DB, t *Table) error {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE,
			COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), EXTRA,
			COALESCE(DATETIME_PRECISION, 0), COALESCE(CHARACTER_OCTET_LENGTH, 0)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?
		ORDER BY ORDINAL_POSITION`, t.Schema, t.Name)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var c Column
		var nullable, extra string
		if err := rows.Scan(&c.Name, &c.DataType, &c.ColumnType, &nullable, &c.Charset, &c.Collation, &extra,
			&c.DatetimePrecision, &c.MaxBytes); err != nil {
			return err
		}
		c.DataType = strings.ToLower(c.DataType)
		c.Nullable = nullable == "YES"
		c.Unsigned = strings.Contains(strings.ToLower(c.ColumnType), "unsigned")
		ex := strings.ToUpper(extra)
		c.Generated = strings.Contains(ex, "VIRTUAL") || strings.Contains(ex, "STORED") || strings.Contains(ex, "PERSISTENT")
		c.OnUpdate = strings.Contains(ex, "ON UPDATE")
		t.byName[strings.ToLower(c.Name)] = len(t.Columns)
		t.Columns = append(t.Columns, c)
	}
	return rows.Err()
}

func loadIndexes(ctx context.Context, db *sql.DB, t *Table) error {
	rows, err := db.QueryContext(ctx, `SELECT INDEX_NAME, COLUMN_NAME, COALESCE(SUB_PART, 0)
		FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0
		ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, t.Schema, t.Name)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cur *Index
	var order []string
	byName := map[string]*Index{}
	for rows.Next() {
		var name, col string
		var sub int
		if err := rows.Scan(&name, &col, &sub); err != nil {
			return err
		}
		pos, ok := t.Column(col)
		if !ok {
			continue // a functional index part; not a column
		}
		if cur = byName[name]; cur == nil {
			cur = &Index{Name: name}
			byName[name] = cur
			order = append(order, name)
		}
		cur.Columns = append(cur.Columns, pos)
		cur.Prefix = append(cur.Prefix, sub)
		cur.Nullable = cur.Nullable || t.Columns[pos].Nullable
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, name := range order {
		ix := byName[name]
		if name == "PRIMARY" {
			t.PrimaryKey = ix
		} else {
			t.UniqueKeys = append(t.UniqueKeys, *ix)
		}
	}
	return nil
}

func loadForeignKeys(ctx context.Context, db *sql.DB, where string, args ...any) ([]ForeignKey, error) {
	rows, err := db.QueryContext(ctx, `SELECT k.CONSTRAINT_NAME, k.TABLE_SCHEMA, k.TABLE_NAME, k.COLUMN_NAME,
			k.REFERENCED_TABLE_SCHEMA, k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME,
			r.UPDATE_RULE, r.DELETE_RULE
		FROM information_schema.KEY_COLUMN_USAGE k
		LEFT JOIN information_schema.REFERENTIAL_CONSTRAINTS r
		  ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME
		 AND r.TABLE_NAME = k.TABLE_NAME
		WHERE `+where+` AND k.REFERENCED_TABLE_NAME IS NOT NULL
		ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ForeignKey
	for rows.Next() {
		var f ForeignKey
		var col, pcol string
		var onUpdate, onDelete sql.NullString
		if err := rows.Scan(&f.Name, &f.ChildSchema, &f.ChildTable, &col, &f.ParentSchema, &f.ParentTable, &pcol,
			&onUpdate, &onDelete); err != nil {
			return nil, err
		}
		// REFERENTIAL_CONSTRAINTS hides a constraint from an account with
		// no privilege beyond SELECT on the table, KEY_COLUMN_USAGE does
		// not: the key is known, its rules are not.
		f.OnUpdate, f.OnDelete, f.RulesHidden = onUpdate.String, onDelete.String, !onUpdate.Valid
		if n := len(out); n > 0 && out[n-1].Name == f.Name && out[n-1].ChildTable == f.ChildTable && out[n-1].ChildSchema == f.ChildSchema {
			out[n-1].ChildColumns = append(out[n-1].ChildColumns, col)
			out[n-1].ParentColumns = append(out[n-1].ParentColumns, pcol)
			continue
		}
		f.ChildColumns, f.ParentColumns = []string{col}, []string{pcol}
		out = append(out, f)
	}
	return out, rows.Err()
}
