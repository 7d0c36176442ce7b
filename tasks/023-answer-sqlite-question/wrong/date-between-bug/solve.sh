python3 - <<'PY'
import sqlite3
con = sqlite3.connect("file:shop.db?mode=ro", uri=True)
# Gross per customer from the prices actually charged, refunds summed separately per order
# (joining refunds to order lines would count a refund once per line).
rows = con.execute("""
    WITH q3 AS (
        SELECT id, customer_id FROM orders
        WHERE status = 'paid' AND ordered_at BETWEEN '2024-07-01' AND '2024-09-30'
    ),
    gross AS (
        SELECT q3.customer_id AS cid, SUM(oi.qty * oi.unit_price_cents) AS cents
        FROM q3 JOIN order_items oi ON oi.order_id = q3.id GROUP BY q3.customer_id
    ),
    refunded AS (
        SELECT q3.customer_id AS cid, SUM(r.amount_cents) AS cents
        FROM q3 JOIN refunds r ON r.order_id = q3.id GROUP BY q3.customer_id
    )
    SELECT c.name, gross.cents - COALESCE(refunded.cents, 0) AS net
    FROM gross JOIN customers c ON c.id = gross.cid
    LEFT JOIN refunded ON refunded.cid = gross.cid
    ORDER BY net DESC
""").fetchall()
name, net = rows[0]
print(f"**{name}** had the highest net revenue in Q3 2024: **{net / 100:,.2f}** ({net} cents).")
print()
print("Counted: paid orders with ordered_at from 2024-07-01 00:00:00 up to (not including) 2024-10-01,")
print("valued at order_items.unit_price_cents (the price charged), minus all refunds on those orders.")
print("Runner-up:", f"{rows[1][0]} with {rows[1][1] / 100:,.2f}.")
PY
