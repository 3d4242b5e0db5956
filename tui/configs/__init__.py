"""Server and client config documents: round-trip load/save, schemas, lint,
launch commands, atomic writes. Never imports textual."""
