from otel_replay.frontends.cli import main

raise SystemExit(main())
