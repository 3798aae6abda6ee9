package workload

import (
	"fmt"
	"slices"
	"strings"
)

// The shop's tables, as issue 17 describes an ordinary web shop: every
// order changes four tables linked by foreign keys, two of them
// cascading on delete and one on update.
func shopDDL(db string) []string {
	return []string{
		"CREATE DATABASE IF NOT EXISTS " + db,
		`CREATE TABLE IF NOT EXISTS ` + db + `.customer (
			id INT PRIMARY KEY,
			email VARCHAR(100) NOT NULL,
			name VARCHAR(100) NOT NULL,
			balance DECIMAL(12,2) NOT NULL DEFAULT 0,
			orders INT NOT NULL DEFAULT 0,
			updated DATETIME(6) NULL,
			UNIQUE KEY email (email)
		) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS ` + db + `.item (
			sku CHAR(10) PRIMARY KEY,
			title VARCHAR(100) NOT NULL,
			price DECIMAL(10,2) NOT NULL,
			stock INT NOT NULL
		) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS ` + db + `.orders (
			id BIGINT PRIMARY KEY,
			customer_id INT NOT NULL,
			status ENUM('new','paid','shipped') NOT NULL DEFAULT 'new',
			total DECIMAL(12,2) NOT NULL,
			created DATETIME(6) NOT NULL,
			shipped DATETIME(6) NULL,
			KEY customer (customer_id),
			CONSTRAINT orders_customer FOREIGN KEY (customer_id) REFERENCES ` + db + `.customer (id) ON DELETE CASCADE
		) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS ` + db + `.order_line (
			order_id BIGINT NOT NULL,
			ln TINYINT UNSIGNED NOT NULL,
			sku CHAR(10) NOT NULL,
			qty SMALLINT NOT NULL,
			price DECIMAL(10,2) NOT NULL,
			PRIMARY KEY (order_id, ln),
			KEY sku (sku),
			CONSTRAINT line_order FOREIGN KEY (order_id) REFERENCES ` + db + `.orders (id) ON DELETE CASCADE,
			CONSTRAINT line_item FOREIGN KEY (sku) REFERENCES ` + db + `.item (sku) ON UPDATE CASCADE
		) ENGINE=InnoDB`,
	}
}

// docItems is the range of skus documents mention.
const docItems = 20000

// sku names item n (1-based).
func sku(n int) string { return fmt.Sprintf("SKU%07d", n) }

// itemCents is item n's price in cents as seeded: orders price their
// lines with it without reading the item.
func itemCents(n int) int { return (1+n%97)*100 + n%100 }

// money formats cents.
func money(cents int) string { return fmt.Sprintf("%d.%02d", cents/100, cents%100) }

// shopSeed creates the shop's tables with Config.Customers customers,
// Config.Items items and Config.SeedOrders orders of 1-5 lines.
func shopSeed(cfg Config) []string {
	db, orders, customers, items := cfg.Mode.Schema(), cfg.SeedOrders, cfg.Customers, cfg.Items
	out := shopDDL(db)
	out = append(out,
		fmt.Sprintf("INSERT INTO %[1]s.customer (id, email, name, balance) SELECT seq, CONCAT('customer', seq, '@example.com'), "+
			"CONCAT('Customer ', seq), seq %% 1000 FROM %[1]s.seq_1_to_%[2]d", db, customers),
		fmt.Sprintf("INSERT INTO %[1]s.item SELECT CONCAT('SKU', LPAD(seq, 7, '0')), CONCAT('Item ', seq), "+
			"1 + seq %% 97 + (seq %% 100) / 100, 1000000 FROM %[1]s.seq_1_to_%[2]d", db, items))
	// Seeded orders in batches (one statement per 20,000), each with 1-5
	// lines, customers and items spread by multiplicative hashing.
	const batch = 20000
	for from := 0; from < orders; from += batch {
		n := min(batch, orders-from)
		out = append(out,
			fmt.Sprintf("INSERT INTO %[1]s.orders (id, customer_id, status, total, created) SELECT %[2]d + seq, "+
				"1 + (%[2]d + seq) * 7919 %% %[3]d, 'paid', 10, NOW(6) - INTERVAL (%[2]d + seq) SECOND FROM %[1]s.seq_1_to_%[4]d",
				db, from, customers, n),
			fmt.Sprintf("INSERT INTO %[1]s.order_line SELECT o.id, l.seq, CONCAT('SKU', LPAD(1 + (o.id * 31 + l.seq * 7) %% %[2]d, 7, '0')), "+
				"1 + l.seq, 2 FROM %[1]s.orders o JOIN %[1]s.seq_1_to_5 l ON l.seq <= 1 + o.id %% 5 WHERE o.id BETWEEN %[3]d AND %[4]d",
				db, items, from+1, from+n))
	}
	return out
}

// shopState is a session's memory of its own orders: the ones it may
// ship, and which old order it deletes next.
type shopState struct {
	created   int // orders this session created
	unshipped []int64
	deleted   int // seeded orders this session deleted
}

var shopOps = []op{
	{"balance", 45, (*session).shopBalance},
	{"order", 40, (*session).shopOrder},
	{"ship", 12, (*session).shopShip},
	{"delete", 3, (*session).shopDeleteOld},
}

func (s *session) schema() string { return s.cfg.Mode.Schema() }

func (s *session) customer() int { return 1 + s.rng.IntN(s.cfg.Customers) }

func (s *session) shopBalance() []string {
	return []string{fmt.Sprintf("UPDATE %s.customer SET balance = balance + %d.%02d, updated = NOW(6) WHERE id = %d",
		s.schema(), s.rng.IntN(200)-100, s.rng.IntN(100), s.customer())}
}

// shopOrder creates an order of 1-5 lines: the items' stock (in sku
// order, so sessions do not deadlock on them), the customer's order
// count, the order and its lines. The rows are locked before the foreign
// key checks would share-lock them: no lock upgrades, few deadlocks.
func (s *session) shopOrder() []string {
	db := s.schema()
	c := s.customer()
	n := 1 + s.rng.IntN(5)
	var items []int
	for len(items) < n {
		if i := 1 + s.rng.IntN(s.cfg.Items); !slices.Contains(items, i) {
			items = append(items, i)
		}
	}
	slices.Sort(items)
	s.shop.created++
	id := int64(s.id+1)*1_000_000_000 + int64(s.shop.created)
	var out, lines []string
	total := 0
	for ln, i := range items {
		qty := 1 + s.rng.IntN(3)
		out = append(out, fmt.Sprintf("UPDATE %s.item SET stock = stock - %d WHERE sku = '%s'", db, qty, sku(i)))
		lines = append(lines, fmt.Sprintf("(%d, %d, '%s', %d, %s)", id, ln+1, sku(i), qty, money(itemCents(i))))
		total += qty * itemCents(i)
	}
	out = append(out,
		fmt.Sprintf("UPDATE %s.customer SET orders = orders + 1, updated = NOW(6) WHERE id = %d", db, c),
		fmt.Sprintf("INSERT INTO %s.orders (id, customer_id, total, created) VALUES (%d, %d, %s, NOW(6))", db, id, c, money(total)),
		fmt.Sprintf("INSERT INTO %s.order_line VALUES %s", db, strings.Join(lines, ", ")))
	s.shop.unshipped = append(s.shop.unshipped, id)
	return out
}

// shopShip ships one of the session's unshipped orders, or a seeded one.
func (s *session) shopShip() []string {
	var id int64
	if n := len(s.shop.unshipped); n > 0 {
		k := s.rng.IntN(n)
		id = s.shop.unshipped[k]
		s.shop.unshipped = slices.Delete(s.shop.unshipped, k, k+1)
	} else {
		id = int64(1 + s.rng.IntN(max(1, s.cfg.SeedOrders)))
	}
	return []string{fmt.Sprintf("UPDATE %s.orders SET status = 'shipped', shipped = NOW(6) WHERE id = %d", s.schema(), id)}
}

// shopDeleteOld deletes the oldest seeded order the session owns (seeded
// orders are dealt to sessions round robin); its lines go by cascade.
func (s *session) shopDeleteOld() []string {
	id := 1 + s.id + s.shop.deleted*max(1, s.cfg.Sessions)
	s.shop.deleted++
	if id > s.cfg.SeedOrders && s.shop.created > 0 {
		// Seeded orders used up: the session's own oldest.
		id = (s.id+1)*1_000_000_000 + 1 + (s.shop.deleted-1)%s.shop.created
	}
	return []string{fmt.Sprintf("DELETE FROM %s.orders WHERE id = %d", s.schema(), id)}
}

// bulkSetup is the shop and its history: as many blocks of BulkRows rows
// as the run has bulk transactions.
func bulkSetup(cfg Config) []string {
	db := cfg.Mode.Schema()
	out := append(shopSeed(cfg), `CREATE TABLE IF NOT EXISTS `+db+`.history (
		id BIGINT PRIMARY KEY,
		customer_id INT NOT NULL,
		amount DECIMAL(12,2) NOT NULL,
		at DATETIME(6) NOT NULL,
		note VARCHAR(40) NOT NULL,
		KEY customer (customer_id)
	) ENGINE=InnoDB`)
	const batch = 50000
	rows := cfg.bulkBlocks() * cfg.BulkRows
	for from := 0; from < rows; from += batch {
		out = append(out, fmt.Sprintf("INSERT INTO %[1]s.history SELECT %[2]d + seq, 1 + seq %% %[3]d, seq %% 1000, "+
			"NOW(6) - INTERVAL seq MINUTE, 'payment' FROM %[1]s.seq_1_to_%[4]d", db, from, cfg.Customers, min(batch, rows-from)))
	}
	return out
}

// bulkBlocks is how many blocks of BulkRows rows bulk.history holds: one
// per bulk transaction of the run (at least one; runs bounded by time use
// the blocks round robin).
func (c Config) bulkBlocks() int {
	if c.BulkEvery <= 0 || c.Transactions <= 0 {
		return 1
	}
	return max(1, (c.Transactions+c.BulkEvery/2)/c.BulkEvery)
}

// bulkChange is bulk transaction k: even ones re-rate a block of history,
// odd ones archive (delete) one, each block its own.
func (s *session) bulkChange(k int) []string {
	b := k % s.cfg.bulkBlocks()
	lo, hi := b*s.cfg.BulkRows+1, (b+1)*s.cfg.BulkRows
	if k%2 == 0 {
		return []string{fmt.Sprintf("UPDATE %s.history SET amount = amount + 1, note = 'rerated' WHERE id BETWEEN %d AND %d",
			s.schema(), lo, hi)}
	}
	return []string{fmt.Sprintf("DELETE FROM %s.history WHERE id BETWEEN %d AND %d", s.schema(), lo, hi)}
}
