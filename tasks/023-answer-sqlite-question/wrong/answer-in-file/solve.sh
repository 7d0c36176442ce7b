python3 - <<'PY'
import sqlite3
con = sqlite3.connect("file:shop.db?mode=ro", uri=True)
name, net = con.execute("""
    WITH q3 AS (SELECT id, customer_id FROM orders
                WHERE status = 'paid' AND ordered_at >= '2024-07-01' AND ordered_at < '2024-10-01'),
    gross AS (SELECT q3.customer_id cid, SUM(oi.qty * oi.unit_price_cents) cents
              FROM q3 JOIN order_items oi ON oi.order_id = q3.id GROUP BY q3.customer_id),
    refunded AS (SELECT q3.customer_id cid, SUM(r.amount_cents) cents
                 FROM q3 JOIN refunds r ON r.order_id = q3.id GROUP BY q3.customer_id)
    SELECT c.name, gross.cents - COALESCE(refunded.cents, 0) net
    FROM gross JOIN customers c ON c.id = gross.cid LEFT JOIN refunded ON refunded.cid = gross.cid
    ORDER BY net DESC LIMIT 1""").fetchone()
with open("q3_answer.md", "w") as fh:
    fh.write(f"{name} had the highest Q3 2024 net revenue: {net / 100:,.2f}\n")
PY
