"""The DuckDB store: schema and migrations, transactions, bulk appends, governed records."""
