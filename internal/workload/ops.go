package workload

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/sqlquote"
)

// transaction returns the statements of the session's next transaction;
// slot is its number among all sessions' transactions (from 0).
func (s *session) transaction(slot int64) []string {
	spec := modes[s.cfg.Mode]
	if spec.bulk != nil && s.cfg.BulkEvery > 0 && slot%int64(s.cfg.BulkEvery) == int64(s.cfg.BulkEvery/2) {
		return spec.bulk(s, int(slot/int64(s.cfg.BulkEvery)))
	}
	if s.cfg.Mode != Mixed {
		return pick(s, spec.ops).gen(s)
	}
	return s.mixed()
}

// mixed returns a transaction of the Mixed mode: usually one to four
// operations, now and then a DDL statement alone.
func (s *session) mixed() []string {
	if s.cfg.DDL && s.rng.IntN(150) == 0 {
		return []string{s.ddl()}
	}
	if s.cfg.Savepoints && s.rng.IntN(40) == 0 {
		return s.savepoints()
	}
	n := 1 + s.rng.IntN(4)
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, s.op()...)
	}
	if s.cfg.Ledger && s.rng.IntN(5) == 0 {
		out = append(out, fmt.Sprintf("INSERT INTO wl.ledger VALUES (%d, %d, NOW(6))", s.id, s.n))
	}
	return out
}

// savepoints mixes transactional and non-transactional changes around a
// rolled-back savepoint: the source keeps wl.nontx's row and undoes the
// rest after the savepoint.
func (s *session) savepoints() []string {
	out := s.op()
	out = append(out, "SAVEPOINT sp1", fmt.Sprintf("INSERT INTO wl.nontx (session, n) VALUES (%d, %d)", s.id, s.n))
	out = append(out, s.op()...)
	out = append(out, "ROLLBACK TO SAVEPOINT sp1")
	return append(out, s.op()...)
}

// op is one kind of operation of a mode, drawn with its weight.
type op struct {
	name   string
	weight int
	gen    func(s *session) []string
}

var mixedOps = []op{
	{"balance", 10, (*session).updateBalance},
	{"insert-account", 4, (*session).insertAccount},
	{"swap-emails", 4, (*session).swapEmails},
	{"change-case", 4, (*session).changeCase},
	{"null-email", 3, (*session).nullEmail},
	{"change-account-id", 2, (*session).changeAccountID},
	{"delete-account", 2, (*session).deleteAccount},
	{"insert-order", 6, (*session).insertOrder},
	{"delete-order", 3, (*session).deleteOrder},
	{"update-items", 4, (*session).updateItems},
	{"upsert-kv", 8, (*session).upsertKV},
	{"delete-kv", 3, (*session).deleteKV},
	{"hot-row", 6, (*session).hotRow},
	{"log-rows", 5, (*session).logRows},
	{"legacy-values", 1, (*session).legacyValues},
	{"side-table", 2, (*session).sideTable},
}

func (s *session) op() []string { return pick(s, mixedOps).gen(s) }

func (s *session) account() int { return 1 + s.rng.IntN(260) }
func (s *session) order() int   { return 1 + s.rng.IntN(450) }

// text returns a short string, sometimes with accents, emoji or case
// variants that case-insensitive collations consider equal.
func (s *session) text(prefix string, n int) string {
	base := fmt.Sprintf("%s%d", prefix, s.rng.IntN(n))
	switch s.rng.IntN(8) {
	case 0:
		return strings.ToUpper(base)
	case 1:
		return base + "é"
	case 2:
		return base + "😀"
	case 3:
		return base + "  " // trailing spaces: equal under PAD SPACE
	}
	return base
}

func (s *session) updateBalance() []string {
	return []string{fmt.Sprintf("UPDATE wl.accounts SET balance = balance + %d.%02d, updated = NOW(6) WHERE id = %d",
		s.rng.IntN(200)-100, s.rng.IntN(100), s.account())}
}

func (s *session) insertAccount() []string {
	id := s.account()
	email := "NULL"
	if s.rng.IntN(4) > 0 {
		email = sqlquote.String(s.text("mail", 300) + "@example.com")
	}
	statuses := []string{"new", "active", "closed"}
	return []string{fmt.Sprintf("INSERT INTO wl.accounts (id, email, handle, balance, status, flags, note) VALUES (%d, %s, %s, %d, '%s', '%s', %s)",
		id, email, sqlquote.String(s.text("h", 400)), s.rng.IntN(1000), statuses[s.rng.IntN(3)],
		[]string{"", "a", "b,c", "a,d"}[s.rng.IntN(4)], sqlquote.String(strings.Repeat("n", s.rng.IntN(50))))}
}

// swapEmails exchanges the unique e-mails of two accounts through NULL.
func (s *session) swapEmails() []string {
	a, b := s.account(), s.account()
	return []string{
		fmt.Sprintf("SELECT email INTO @ea FROM wl.accounts WHERE id = %d", a),
		fmt.Sprintf("SELECT email INTO @eb FROM wl.accounts WHERE id = %d", b),
		fmt.Sprintf("UPDATE wl.accounts SET email = NULL WHERE id = %d", a),
		fmt.Sprintf("UPDATE wl.accounts SET email = @ea WHERE id = %d", b),
		fmt.Sprintf("UPDATE wl.accounts SET email = @eb WHERE id = %d", a),
	}
}

func (s *session) changeCase() []string {
	fn := []string{"UPPER", "LOWER"}[s.rng.IntN(2)]
	return []string{fmt.Sprintf("UPDATE wl.accounts SET email = %s(email), handle = %s(handle) WHERE id = %d", fn, fn, s.account())}
}

func (s *session) nullEmail() []string {
	return []string{fmt.Sprintf("UPDATE wl.accounts SET email = NULL WHERE id = %d", s.account())}
}

// changeAccountID moves an account to another id; its orders follow by ON
// UPDATE CASCADE (on the source and, by itself, on the target).
func (s *session) changeAccountID() []string {
	a := s.account()
	return []string{fmt.Sprintf("UPDATE wl.accounts SET id = %d WHERE id = %d", 1+(a+130)%260, a)}
}

// deleteAccount cascades to orders and their items.
func (s *session) deleteAccount() []string {
	return []string{fmt.Sprintf("DELETE FROM wl.accounts WHERE id = %d", s.account())}
}

func (s *session) insertOrder() []string {
	id := s.order()
	payload := make([]byte, s.rng.IntN(40))
	for i := range payload {
		payload[i] = byte(s.rng.IntN(256))
	}
	out := []string{fmt.Sprintf("INSERT INTO wl.orders (id, account_id, amount, payload) VALUES (%d, %d, %d.%03d, x'%s')",
		id, s.account(), s.rng.IntN(5000), s.rng.IntN(1000), hex.EncodeToString(payload))}
	var rows []string
	for line := 1; line <= 1+s.rng.IntN(3); line++ {
		rows = append(rows, fmt.Sprintf("(%d, %d, 'SKU%d', %d)", id, line, s.rng.IntN(50), s.rng.IntN(20)-5))
	}
	return append(out, "INSERT INTO wl.items VALUES "+strings.Join(rows, ", "))
}

func (s *session) deleteOrder() []string {
	return []string{fmt.Sprintf("DELETE FROM wl.orders WHERE id = %d", s.order())}
}

func (s *session) updateItems() []string {
	return []string{fmt.Sprintf("UPDATE wl.items SET qty = qty + 1 WHERE order_id = %d", s.order())}
}

// upsertKV writes a row of every column type, keyed by a case-variant key.
func (s *session) upsertKV() []string {
	k := s.text("key", 60)
	null := func(v string) string {
		if s.rng.IntN(5) == 0 {
			return "NULL"
		}
		return v
	}
	u := "NULL"
	if s.rng.IntN(2) == 0 {
		u = sqlquote.String(s.text("u", 80))
	}
	vals := []string{
		sqlquote.String(k),
		null(sqlquote.String(fmt.Sprintf(`{"n": %d, "list": [1, "two", null], "nested": {"deep": [%d]}}`, s.rng.IntN(100), s.rng.IntN(9)))),
		null(fmt.Sprintf("%d.%d", s.rng.IntN(1000)-500, s.rng.IntN(1000))),
		null([]string{"1e300", "-2.5e-300", "0.1", "-0", "3.141592653589793"}[s.rng.IntN(5)]),
		null(sqlquote.String(fmt.Sprintf("%s%d:%02d:%02d.%03d", []string{"", "-"}[s.rng.IntN(2)], s.rng.IntN(839), s.rng.IntN(60), s.rng.IntN(60), s.rng.IntN(1000)))),
		null(fmt.Sprint(1901 + s.rng.IntN(254))),
		null(fmt.Sprintf("b'%b'", s.rng.IntN(4096))),
		null(fmt.Sprintf("x'%02x%02x00'", s.rng.IntN(256), s.rng.IntN(256))),
		null(fmt.Sprintf("x'%x'", []byte(strings.Repeat("v", s.rng.IntN(290))))),
		null(fmt.Sprint(s.rng.IntN(256) - 128)),
		null(fmt.Sprint(s.rng.IntN(65536))),
		null([]string{"18446744073709551615", "0", "9223372036854775808"}[s.rng.IntN(3)]),
		null(sqlquote.String(fmt.Sprintf("%04d-%02d-%02d", 1000+s.rng.IntN(9000), 1+s.rng.IntN(12), 1+s.rng.IntN(28)))),
		null(sqlquote.String(fmt.Sprintf("20%02d-06-15 12:%02d:%02d", s.rng.IntN(37), s.rng.IntN(60), s.rng.IntN(60)))),
		null(sqlquote.String([]string{"caf\xe9", "abc", "", "x y"}[s.rng.IntN(4)])),
		u,
	}
	cols := "k, v, f, d, t, y, b, bin, vb, tiny, small, big, day, ts, ch, u"
	verb := "REPLACE"
	if s.rng.IntN(2) == 0 {
		verb = "INSERT IGNORE"
	}
	q := fmt.Sprintf("%s INTO wl.kv (%s) VALUES (%s)", verb, cols, strings.Join(vals, ", "))
	// latin1 literal bytes: send the e-acute as a latin1 string.
	q = strings.Replace(q, "'caf\xe9'", "_latin1 x'636166e9'", 1)
	return []string{q}
}

func (s *session) deleteKV() []string {
	return []string{fmt.Sprintf("DELETE FROM wl.kv WHERE k = %s", sqlquote.String(s.text("KEY", 60)))}
}

func (s *session) hotRow() []string {
	return []string{fmt.Sprintf("UPDATE wl.hot SET counter = counter + 1, touched = NOW(6) WHERE id = %d", 1+s.rng.IntN(3))}
}

// logRows works on the table without a key, duplicates included.
func (s *session) logRows() []string {
	a := s.rng.IntN(30)
	switch s.rng.IntN(3) {
	case 0:
		return []string{fmt.Sprintf("INSERT INTO wl.log VALUES (%d, %s, %d), (%d, %s, NULL)", a, sqlquote.String(s.text("l", 5)), a, a, sqlquote.String("dup"))}
	case 1:
		return []string{fmt.Sprintf("DELETE FROM wl.log WHERE a = %d LIMIT 1", a)}
	}
	return []string{fmt.Sprintf("UPDATE wl.log SET c = COALESCE(c, 0) + 1 WHERE a = %d LIMIT 2", a)}
}

// legacyValues stores what only a relaxed sql_mode admits: zero dates and
// the ENUM error value.
func (s *session) legacyValues() []string {
	return []string{
		fmt.Sprintf("SET STATEMENT sql_mode='' FOR INSERT IGNORE INTO wl.kv (k, day, ts) VALUES ('legacy%d', '0000-00-00', '0000-00-00 00:00:00')", s.rng.IntN(10)),
		fmt.Sprintf("SET STATEMENT sql_mode='' FOR UPDATE wl.accounts SET status = 'bogus' WHERE id = %d", s.account()),
	}
}

func (s *session) sideTable() []string {
	n := s.rng.IntN(3)
	return []string{fmt.Sprintf("INSERT INTO wl.side_%d (id, v) VALUES (%d, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)", n, s.rng.IntN(100), sqlquote.String(s.text("s", 9)))}
}

// ddl changes the schema: columns come and go on kv, side tables appear
// and disappear.
func (s *session) ddl() string {
	n := s.rng.IntN(3)
	switch s.rng.IntN(5) {
	case 0:
		return fmt.Sprintf("ALTER TABLE wl.kv ADD COLUMN extra_%d INT NULL DEFAULT %d", n, n)
	case 1:
		return fmt.Sprintf("ALTER TABLE wl.kv DROP COLUMN extra_%d", n)
	case 2:
		return fmt.Sprintf("DROP TABLE wl.side_%d", n)
	}
	return fmt.Sprintf("CREATE TABLE wl.side_%d (id INT PRIMARY KEY, v VARCHAR(10) COLLATE utf8mb4_general_ci UNIQUE) ENGINE=InnoDB", n)
}
