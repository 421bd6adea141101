"""OpenTelemetry, pure: OTLP bodies read and answered (`wire`), GenAI spans read into one
message model (`mapping`). No database; the services store and derive."""
