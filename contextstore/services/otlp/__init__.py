"""OpenTelemetry ingest: spans and log records kept raw (`ingest`), and the sessions, threads,
events and LLM calls derived from them (`derive`)."""
