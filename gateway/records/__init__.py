"""The gateway's own state on disk. gateway.db: the schema and its ordered migrations (db.py), the
answer log, API keys, background jobs and deployment verdicts, one module per table family; and the
active deployment profile (active_profile.py: a crash-safe pointer plus its history)."""
