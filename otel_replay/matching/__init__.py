"""Normalising volatile values and matching live requests against recordings."""
