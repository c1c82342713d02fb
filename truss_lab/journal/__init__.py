"""The signed journal: canonical hashing, Ed25519 signatures, reading, verifying,
the journal table."""
