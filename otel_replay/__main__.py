from otel_replay.frontends.cli import run

run()
