"""The ways in: CLI, Python API, pytest plugin, egress guard."""
