from otel_replay.cli import main

raise SystemExit(main())
