"""Exchanges as OpenTelemetry spans (GenAI semantic conventions plus exact bodies)."""
