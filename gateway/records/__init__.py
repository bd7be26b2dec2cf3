"""Everything kept in gateway.db: the schema and its ordered migrations (db.py), the answer log,
API keys, background jobs and deployment verdicts, one module per table family."""
