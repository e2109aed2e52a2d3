"""Secrets become placeholders before anything is written."""
