"""Harnesses that run the frameworks' own test suites against contextstore (each inside its
framework's virtualenv, see scripts/framework-venv and scripts/framework-tests)."""
