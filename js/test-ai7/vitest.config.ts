import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["*.test.ts"],
    // each test starts an engine (a Python process); loaded CI machines are slow to start one
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
  // otel-replay and the shared test helpers come from js/: one copy of Vitest for all
  resolve: { dedupe: ["vitest"] },
});
