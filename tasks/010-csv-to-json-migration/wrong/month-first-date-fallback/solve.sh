set -eu
python3 migrate_customers.py
