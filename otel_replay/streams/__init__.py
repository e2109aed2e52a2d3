"""Stream codecs, one per wire format (see ``codec``); SSE is the first."""
