import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // each test starts the engine (a Python process)
    testTimeout: 30_000,
    // at the end of the run, the summary of every useReplay (as the pytest plugin prints it)
    globalSetup: ["otel-replay/vitest/summary"],
  },
  // otel-replay is linked from this repository's js/: one copy of Vitest for both
  resolve: { dedupe: ["vitest"] },
});
