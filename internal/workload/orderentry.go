package workload

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// TPC-C-like order entry, scaled down: oeWarehouses warehouses of ten
// districts, each district with oeCustomers customers; every new order
// takes its district's next order number (a hot row per district) and
// every payment adds to its warehouse's and district's year-to-date
// totals (hotter still).
const (
	oeWarehouses = 4
	oeDistricts  = 10
	oeCustomers  = 300
	oeItems      = 10000
	oeOrders     = 30 // seeded per district; the last oeNewOrders undelivered
	oeNewOrders  = 9
)

func orderEntrySetup(cfg Config) []string {
	db := cfg.Mode.Schema()
	t := func(q string) string { return strings.ReplaceAll(q, "{db}", db) }
	return []string{
		"CREATE DATABASE IF NOT EXISTS " + db,
		t(`CREATE TABLE IF NOT EXISTS {db}.warehouse (w_id INT PRIMARY KEY, name VARCHAR(10) NOT NULL,
			tax DECIMAL(4,4) NOT NULL, ytd DECIMAL(12,2) NOT NULL) ENGINE=InnoDB`),
		t(`CREATE TABLE IF NOT EXISTS {db}.district (w_id INT NOT NULL, d_id TINYINT NOT NULL, name VARCHAR(10) NOT NULL,
			tax DECIMAL(4,4) NOT NULL, ytd DECIMAL(12,2) NOT NULL, next_o_id INT NOT NULL, PRIMARY KEY (w_id, d_id),
			FOREIGN KEY (w_id) REFERENCES {db}.warehouse (w_id)) ENGINE=InnoDB`),
		t(`CREATE TABLE IF NOT EXISTS {db}.customer (w_id INT NOT NULL, d_id TINYINT NOT NULL, c_id INT NOT NULL,
			last VARCHAR(16) NOT NULL, credit CHAR(2) NOT NULL, balance DECIMAL(12,2) NOT NULL, ytd_payment DECIMAL(12,2) NOT NULL,
			payment_cnt INT NOT NULL, delivery_cnt INT NOT NULL, data VARCHAR(250) NOT NULL, PRIMARY KEY (w_id, d_id, c_id),
			KEY last (w_id, d_id, last), FOREIGN KEY (w_id, d_id) REFERENCES {db}.district (w_id, d_id)) ENGINE=InnoDB`),
		t(`CREATE TABLE IF NOT EXISTS {db}.history (h_id BIGINT AUTO_INCREMENT PRIMARY KEY, c_w_id INT NOT NULL,
			c_d_id TINYINT NOT NULL, c_id INT NOT NULL, w_id INT NOT NULL, d_id TINYINT NOT NULL, at DATETIME(6) NOT NULL,
			amount DECIMAL(6,2) NOT NULL, data VARCHAR(24) NOT NULL,
			FOREIGN KEY (c_w_id, c_d_id, c_id) REFERENCES {db}.customer (w_id, d_id, c_id),
			FOREIGN KEY (w_id, d_id) REFERENCES {db}.district (w_id, d_id)) ENGINE=InnoDB`),
		t(`CREATE TABLE IF NOT EXISTS {db}.item (i_id INT PRIMARY KEY, name VARCHAR(24) NOT NULL, price DECIMAL(5,2) NOT NULL,
			data VARCHAR(50) NOT NULL) ENGINE=InnoDB`),
		t(`CREATE TABLE IF NOT EXISTS {db}.stock (w_id INT NOT NULL, i_id INT NOT NULL, quantity SMALLINT NOT NULL,
			ytd INT NOT NULL, order_cnt INT NOT NULL, remote_cnt INT NOT NULL, dist_info CHAR(24) NOT NULL,
			PRIMARY KEY (w_id, i_id), FOREIGN KEY (w_id) REFERENCES {db}.warehouse (w_id),
			FOREIGN KEY (i_id) REFERENCES {db}.item (i_id)) ENGINE=InnoDB`),
		t(`CREATE TABLE IF NOT EXISTS {db}.orders (w_id INT NOT NULL, d_id TINYINT NOT NULL, o_id INT NOT NULL, c_id INT NOT NULL,
			entry_d DATETIME(6) NOT NULL, carrier_id TINYINT NULL, ol_cnt TINYINT NOT NULL, all_local TINYINT NOT NULL,
			PRIMARY KEY (w_id, d_id, o_id), KEY customer (w_id, d_id, c_id),
			FOREIGN KEY (w_id, d_id, c_id) REFERENCES {db}.customer (w_id, d_id, c_id)) ENGINE=InnoDB`),
		t(`CREATE TABLE IF NOT EXISTS {db}.new_order (w_id INT NOT NULL, d_id TINYINT NOT NULL, o_id INT NOT NULL,
			PRIMARY KEY (w_id, d_id, o_id),
			FOREIGN KEY (w_id, d_id, o_id) REFERENCES {db}.orders (w_id, d_id, o_id) ON DELETE CASCADE) ENGINE=InnoDB`),
		t(`CREATE TABLE IF NOT EXISTS {db}.order_line (w_id INT NOT NULL, d_id TINYINT NOT NULL, o_id INT NOT NULL,
			number TINYINT NOT NULL, i_id INT NOT NULL, supply_w_id INT NOT NULL, delivery_d DATETIME(6) NULL,
			quantity TINYINT NOT NULL, amount DECIMAL(6,2) NOT NULL, dist_info CHAR(24) NOT NULL,
			PRIMARY KEY (w_id, d_id, o_id, number),
			FOREIGN KEY (w_id, d_id, o_id) REFERENCES {db}.orders (w_id, d_id, o_id) ON DELETE CASCADE,
			FOREIGN KEY (supply_w_id, i_id) REFERENCES {db}.stock (w_id, i_id)) ENGINE=InnoDB`),

		fmt.Sprintf(t("INSERT INTO {db}.warehouse SELECT seq, CONCAT('W', seq), seq / 100, 300000 FROM {db}.seq_1_to_%d"), oeWarehouses),
		fmt.Sprintf(t("INSERT INTO {db}.district SELECT w.seq, d.seq, CONCAT('D', d.seq), d.seq / 100, 30000, %d "+
			"FROM {db}.seq_1_to_%d w JOIN {db}.seq_1_to_%d d"), oeOrders+1, oeWarehouses, oeDistricts),
		fmt.Sprintf(t("INSERT INTO {db}.customer SELECT w.seq, d.seq, c.seq, CONCAT('LAST', c.seq %% 100), "+
			"IF(c.seq %% 10 = 0, 'BC', 'GC'), -10, 10, 1, 0, REPEAT(CHAR(65 + c.seq %% 26), 100) "+
			"FROM {db}.seq_1_to_%d w JOIN {db}.seq_1_to_%d d JOIN {db}.seq_1_to_%d c"), oeWarehouses, oeDistricts, oeCustomers),
		fmt.Sprintf(t("INSERT INTO {db}.item SELECT seq, CONCAT('item', seq), 1 + seq %% 99 + (seq %% 100) / 100, "+
			"REPEAT('i', 26 + seq %% 24) FROM {db}.seq_1_to_%d"), oeItems),
		fmt.Sprintf(t("INSERT INTO {db}.stock SELECT w.seq, i.seq, 10 + i.seq %% 91, 0, 0, 0, LPAD(i.seq, 24, 'S') "+
			"FROM {db}.seq_1_to_%d w JOIN {db}.seq_1_to_%d i"), oeWarehouses, oeItems),
		fmt.Sprintf(t("INSERT INTO {db}.orders SELECT w.seq, d.seq, o.seq, 1 + o.seq * 7 %% %d, NOW(6), "+
			"IF(o.seq <= %d, 1 + o.seq %% 10, NULL), 5 + o.seq %% 11, 1 "+
			"FROM {db}.seq_1_to_%d w JOIN {db}.seq_1_to_%d d JOIN {db}.seq_1_to_%d o"),
			oeCustomers, oeOrders-oeNewOrders, oeWarehouses, oeDistricts, oeOrders),
		t("INSERT INTO {db}.order_line SELECT o.w_id, o.d_id, o.o_id, l.seq, 1 + (o.o_id * 131 + l.seq * 17) % " +
			fmt.Sprint(oeItems) + ", o.w_id, IF(o.carrier_id IS NULL, NULL, o.entry_d), 5, 9.99, LPAD(l.seq, 24, 'L') " +
			"FROM {db}.orders o JOIN {db}.seq_1_to_15 l ON l.seq <= o.ol_cnt"),
		t("INSERT INTO {db}.new_order SELECT w_id, d_id, o_id FROM {db}.orders WHERE carrier_id IS NULL"),
	}
}

var orderEntryOps = []op{
	{"new-order", 45, (*session).oeNewOrder},
	{"payment", 43, (*session).oePayment},
	{"delivery", 4, (*session).oeDelivery},
}

func (s *session) warehouse() int { return 1 + s.rng.IntN(oeWarehouses) }
func (s *session) district() int  { return 1 + s.rng.IntN(oeDistricts) }

// oeItemCents is item n's price in cents as seeded.
func oeItemCents(n int) int { return (1+n%99)*100 + n%100 }

// oeNewOrder takes the district's next order number, inserts the order,
// its new-order row and 5-15 lines (1% from another warehouse's stock),
// and takes the lines' quantities from stock (in key order: no deadlocks
// between sessions on stock rows).
func (s *session) oeNewOrder() []string {
	db, w, d := s.schema(), s.warehouse(), s.district()
	c := 1 + s.rng.IntN(oeCustomers)
	type line struct{ supply, item, qty int }
	lines := make([]line, 5+s.rng.IntN(11))
	local := 1
	for i := range lines {
		l := line{supply: w, qty: 1 + s.rng.IntN(10)}
		if s.rng.IntN(100) == 0 && oeWarehouses > 1 {
			l.supply, local = 1+(w+s.rng.IntN(oeWarehouses-1))%oeWarehouses, 0
		}
		for l.item == 0 || slices.ContainsFunc(lines[:i], func(o line) bool { return o.supply == l.supply && o.item == l.item }) {
			l.item = 1 + s.rng.IntN(oeItems)
		}
		lines[i] = l
	}
	out := []string{
		fmt.Sprintf("UPDATE %s.district SET next_o_id = next_o_id + 1 WHERE w_id = %d AND d_id = %d", db, w, d),
		fmt.Sprintf("SELECT next_o_id - 1 INTO @o FROM %s.district WHERE w_id = %d AND d_id = %d", db, w, d),
		fmt.Sprintf("INSERT INTO %s.orders VALUES (%d, %d, @o, %d, NOW(6), NULL, %d, %d)", db, w, d, c, len(lines), local),
		fmt.Sprintf("INSERT INTO %s.new_order VALUES (%d, %d, @o)", db, w, d),
	}
	var values []string
	for i, l := range lines {
		values = append(values, fmt.Sprintf("(%d, %d, @o, %d, %d, %d, NULL, %d, %s, '%s')", w, d, i+1, l.item, l.supply, l.qty,
			money(l.qty*oeItemCents(l.item)), fmt.Sprintf("dist%020d", d)))
	}
	sorted := slices.Clone(lines)
	slices.SortFunc(sorted, func(a, b line) int { return cmp.Or(cmp.Compare(a.supply, b.supply), cmp.Compare(a.item, b.item)) })
	for _, l := range sorted {
		remote := 0
		if l.supply != w {
			remote = 1
		}
		out = append(out, fmt.Sprintf("UPDATE %s.stock SET quantity = IF(quantity >= %d, quantity - %d, quantity - %[3]d + 91), "+
			"ytd = ytd + %[3]d, order_cnt = order_cnt + 1, remote_cnt = remote_cnt + %d WHERE w_id = %d AND i_id = %d",
			db, l.qty+10, l.qty, remote, l.supply, l.item))
	}
	return append(out, fmt.Sprintf("INSERT INTO %s.order_line VALUES %s", db, strings.Join(values, ", ")))
}

// oePayment adds a payment to the warehouse's, the district's and the
// customer's totals (15% of customers from another warehouse) and
// records it in history.
func (s *session) oePayment() []string {
	db, w, d := s.schema(), s.warehouse(), s.district()
	cw, cd := w, d
	if s.rng.IntN(100) < 15 && oeWarehouses > 1 {
		cw, cd = 1+(w+s.rng.IntN(oeWarehouses-1))%oeWarehouses, s.district()
	}
	c := 1 + s.rng.IntN(oeCustomers)
	h := money(100 + s.rng.IntN(500000))
	return []string{
		fmt.Sprintf("UPDATE %s.warehouse SET ytd = ytd + %s WHERE w_id = %d", db, h, w),
		fmt.Sprintf("UPDATE %s.district SET ytd = ytd + %s WHERE w_id = %d AND d_id = %d", db, h, w, d),
		fmt.Sprintf("UPDATE %s.customer SET balance = balance - %s, ytd_payment = ytd_payment + %[2]s, payment_cnt = payment_cnt + 1 "+
			"WHERE w_id = %d AND d_id = %d AND c_id = %d", db, h, cw, cd, c),
		fmt.Sprintf("INSERT INTO %s.history (c_w_id, c_d_id, c_id, w_id, d_id, at, amount, data) VALUES (%d, %d, %d, %d, %d, NOW(6), %s, 'W%d D%d')",
			db, cw, cd, c, w, d, h, w, d),
	}
}

// oeDelivery delivers a district's oldest undelivered order: its
// new-order row goes, the order gets a carrier, its lines a delivery
// date, its customer the amount.
func (s *session) oeDelivery() []string {
	db, w, d := s.schema(), s.warehouse(), s.district()
	where := fmt.Sprintf("w_id = %d AND d_id = %d AND o_id = @no", w, d)
	return []string{
		"SET @no = NULL, @c = NULL, @amt = 0",
		fmt.Sprintf("SELECT MIN(o_id) INTO @no FROM %s.new_order WHERE w_id = %d AND d_id = %d FOR UPDATE", db, w, d),
		fmt.Sprintf("DELETE FROM %s.new_order WHERE %s", db, where),
		fmt.Sprintf("SELECT c_id INTO @c FROM %s.orders WHERE %s", db, where),
		fmt.Sprintf("UPDATE %s.orders SET carrier_id = %d WHERE %s", db, 1+s.rng.IntN(10), where),
		fmt.Sprintf("UPDATE %s.order_line SET delivery_d = NOW(6) WHERE %s", db, where),
		fmt.Sprintf("SELECT COALESCE(SUM(amount), 0) INTO @amt FROM %s.order_line WHERE %s", db, where),
		fmt.Sprintf("UPDATE %s.customer SET balance = balance + @amt, delivery_cnt = delivery_cnt + 1 "+
			"WHERE w_id = %d AND d_id = %d AND c_id = @c", db, w, d),
	}
}
