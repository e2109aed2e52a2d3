"""The cassette document: load, dump, migrate, and the streaming writer."""
