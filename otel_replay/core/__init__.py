"""The record at the centre and what every layer shares: the exchange, the error tree,
environment variable names, JSON text."""
