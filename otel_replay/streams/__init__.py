"""Stream codecs per wire format (SSE today)."""
