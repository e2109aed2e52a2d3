"""One run's state: mode, cassette, matcher, counts, trace store."""
