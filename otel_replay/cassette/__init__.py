"""The cassette: its loaded form, one codec per file-format version, load and dump, the
streaming writer, provenance and a read-only view of the recordings."""
