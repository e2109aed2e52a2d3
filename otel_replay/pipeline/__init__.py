"""Trace files in, cassettes out: ``build``."""
