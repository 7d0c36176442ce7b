# Build shop.db, a SQLite export of the web shop's sales data.
python3 - shop.db <<'PY'
import sqlite3, sys

SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, country TEXT NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, sku TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
                       unit_price_cents INTEGER NOT NULL);  -- current list price
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     ordered_at TEXT NOT NULL,               -- UTC, 'YYYY-MM-DD HH:MM:SS'
                     status TEXT NOT NULL CHECK (status IN ('paid', 'cancelled')));
CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(id), product_id INTEGER NOT NULL REFERENCES products(id),
                          qty INTEGER NOT NULL, unit_price_cents INTEGER NOT NULL,  -- price charged on this order
                          PRIMARY KEY (order_id, product_id));
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders(id),
                      amount_cents INTEGER NOT NULL, refunded_at TEXT NOT NULL, reason TEXT);
"""
CUSTOMERS = [
    (1, "Harriet Vance", "harriet@vance-design.example", "GB"),
    (2, "Kofi Mensah", "kofi.mensah@example.com", "GH"),
    (3, "Ines Duarte", "ines@duarte.example.pt", "PT"),
    (4, "Tomasz Wrona", "t.wrona@example.pl", "PL"),
    (5, "Mei Lin", "mei.lin@example.sg", "SG"),
]
PRODUCTS = [  # current prices (raised on 2024-10-01)
    (1, "DESK-OAK", "Oak standing desk", 74900),
    (2, "CHAIR-ERG", "Ergonomic chair", 41900),
    (3, "LAMP-LED", "LED desk lamp", 5900),
    (4, "MAT-FELT", "Felt desk mat", 3900),
    (5, "ARM-MON", "Monitor arm", 14900),
]
# id, customer, ordered_at, status, [(product, qty, unit_price_cents charged)]
ORDERS = [
    (101, 1, "2024-06-30 23:59:59", "paid", [(1, 1, 64900)]),
    (102, 2, "2024-07-01 00:00:00", "paid", [(1, 2, 64900), (5, 1, 12900)]),
    (103, 1, "2024-07-03 10:12:00", "paid", [(2, 1, 38900), (3, 2, 4900)]),
    (104, 3, "2024-07-09 15:40:00", "paid", [(5, 2, 12900), (4, 2, 3500)]),
    (105, 4, "2024-07-15 09:05:00", "paid", [(3, 12, 4900)]),
    (106, 5, "2024-07-21 19:30:00", "paid", [(2, 1, 38900)]),
    (107, 3, "2024-08-02 11:00:00", "cancelled", [(1, 2, 64900), (2, 1, 38900)]),
    (108, 1, "2024-08-14 13:22:00", "paid", [(1, 1, 64900), (4, 1, 3500)]),
    (109, 2, "2024-08-20 08:45:00", "paid", [(2, 1, 38900)]),
    (110, 4, "2024-08-28 17:10:00", "paid", [(3, 16, 4900)]),
    (111, 3, "2024-09-05 12:00:00", "paid", [(2, 1, 38900), (3, 1, 4900)]),
    (112, 5, "2024-09-11 10:10:00", "cancelled", [(1, 1, 64900)]),
    (113, 1, "2024-09-30 18:20:00", "paid", [(5, 2, 12900), (3, 1, 4900)]),
    (114, 2, "2024-10-01 00:00:00", "paid", [(1, 1, 74900)]),
    (115, 5, "2024-09-30 23:59:59", "paid", [(4, 6, 3500)]),
    (116, 3, "2024-10-02 09:00:00", "paid", [(1, 1, 74900)]),
]
REFUNDS = [
    (1, 102, 64900, "2024-07-20 10:00:00", "desk arrived damaged"),
    (2, 108, 3500, "2024-08-30 09:00:00", "wrong colour"),
    (3, 104, 12900, "2024-10-05 14:00:00", "returned after quarter end"),
    (4, 101, 10000, "2024-07-02 09:00:00", "goodwill"),
]


def build(path):
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO customers VALUES (?, ?, ?, ?)", CUSTOMERS)
    con.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", PRODUCTS)
    for oid, cid, at, status, items in ORDERS:
        con.execute("INSERT INTO orders VALUES (?, ?, ?, ?)", (oid, cid, at, status))
        con.executemany("INSERT INTO order_items VALUES (?, ?, ?, ?)", [(oid, p, q, c) for p, q, c in items])
    con.executemany("INSERT INTO refunds VALUES (?, ?, ?, ?, ?)", REFUNDS)
    con.commit()
    con.close()


if __name__ == "__main__":
    build(sys.argv[1])
PY
