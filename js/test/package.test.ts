/** The package as users install it: its build (`dist/`, committed) is what `tsc` makes of
 * `src/`, and it installs on a machine with only Node and npm, from a checkout
 * (`npm install <checkout>/js`, with and without `--install-links`) and from the tarball
 * of `npm pack` — offline: the package has no runtime dependency. A user's own Vitest run
 * records and replays through it linked from a checkout that has no `node_modules`. */

import { execFileSync, spawnSync } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { delimiter, join } from "node:path";

import { describe, expect, test } from "vitest";

import { JS, stubForFile } from "./peers.js";

const folder = stubForFile();

const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();
}

test("dist is the build of src (run `npm run build` in js/ after changing src)", () => {
  // built beside dist, so that the source maps' paths to src are the same
  const out = mkdtempSync(join(JS, ".dist-check-"));
  try {
    execFileSync(process.execPath, [join(JS, "node_modules/typescript/bin/tsc"), "-p", JS, "--outDir", out]);
    const dist = join(JS, "dist");
    expect(files(dist)).toEqual(files(out));
    for (const name of files(out)) {
      const stale = `js/dist/${name} differs from the build of src: run \`npm run build\` in js/`;
      expect(readFileSync(join(dist, name), "utf8"), stale).toBe(readFileSync(join(out, name), "utf8"));
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

describe("npm install", () => {
  // an empty cache: nothing the machine downloaded before can stand in for the registry
  // and no TypeScript: no node_modules/.bin on PATH (npx puts js/'s there)
  const path = (process.env.PATH ?? "").split(delimiter).filter((dir) => !dir.includes("node_modules"));
  const npmEnv = {
    ...process.env,
    PATH: path.join(delimiter),
    npm_config_cache: join(folder.dir, "npm-cache"),
    npm_config_offline: "true",
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_update_notifier: "false",
  };

  function npm(cwd: string, ...args: string[]): string {
    return execFileSync(NPM, args, { cwd, env: npmEnv, encoding: "utf8", stdio: "pipe" });
  }

  function project(name: string): string {
    const dir = join(folder.dir, name);
    mkdirSync(dir);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }));
    return dir;
  }

  /** What a user's code reaches: the API, and every entry point with its types. */
  function usable(dir: string): void {
    const probe = `
      import * as api from "otel-replay";
      import { existsSync } from "node:fs";
      import { fileURLToPath } from "node:url";
      const entries = ["otel-replay/vitest", "otel-replay/vitest/setup", "otel-replay/vitest/summary"];
      const found = entries.map((e) => existsSync(fileURLToPath(import.meta.resolve(e))));
      console.log(JSON.stringify({ api: Object.keys(api).sort(), found }));
    `;
    writeFileSync(join(dir, "probe.mjs"), probe);
    const out = JSON.parse(execFileSync(process.execPath, ["probe.mjs"], { cwd: dir, encoding: "utf8" }));
    expect(out.api).toEqual(expect.arrayContaining(["Serve", "findEngine"]));
    expect(out.found).toEqual([true, true, true]);
    const installed = join(dir, "node_modules/otel-replay");
    for (const types of ["index.d.ts", "vitest.d.ts", "setup.d.ts", "summary-setup.d.ts"]) {
      expect(files(join(installed, "dist"))).toContain(types);
    }
  }

  test("from a checkout's folder (a link)", () => {
    const dir = project("linked");
    npm(dir, "install", "--save-dev", JS);
    usable(dir);
  });

  test("from a checkout's folder, --install-links (a copy)", () => {
    const dir = project("copied");
    npm(dir, "install", "--save-dev", "--install-links", JS);
    usable(dir);
  });

  test("a user's Vitest run replays with it, linked from a checkout without node_modules", () => {
    // the checkout as cloned: the package's files, none of its dev dependencies
    const checkout = join(folder.dir, "checkout");
    cpSync(JS, checkout, {
      recursive: true,
      filter: (source) => !/[/\\](node_modules|bench|test)$/.test(source),
    });
    const dir = project("user-run");
    npm(dir, "install", "--save-dev", checkout);
    // the user's own Vitest (this offline test cannot download one)
    symlinkSync(join(JS, "node_modules/vitest"), join(dir, "node_modules/vitest"));
    writeFileSync(join(dir, "vitest.config.mjs"), 'export default { test: { include: ["*.test.mjs"], testTimeout: 60_000 } };\n');
    writeFileSync(
      join(dir, "call.test.mjs"),
      `import { expect, test } from "vitest";
import { useReplay } from "otel-replay/vitest";
test("one model call", async () => {
  await useReplay("call", { mode: process.env.CALL_MODE });
  const answer = await fetch(\`\${process.env.OPENAI_BASE_URL}/chat/completions\`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: process.env.CALL_TEXT }] }),
  });
  expect(answer.status).toBe(200);
});
`,
    );
    const run = (mode: string, text: string) =>
      spawnSync(process.execPath, [join(dir, "node_modules/vitest/vitest.mjs"), "run"], {
        cwd: dir,
        env: { ...npmEnv, CALL_MODE: mode, CALL_TEXT: text, OPENAI_BASE_URL: folder.stub().openai_url },
        encoding: "utf8",
        timeout: 120_000,
      });
    const recorded = run("record", "hello");
    expect(recorded.status, recorded.stdout + recorded.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, "cassettes/call.json"), "utf8")).interactions).toHaveLength(1);
    const replayed = run("strict", "hello");
    expect(replayed.status, replayed.stdout + replayed.stderr).toBe(0);
    const missed = run("strict", "goodbye");
    expect(missed.status).toBe(1);
    expect(missed.stdout + missed.stderr).toContain("replay miss: messages changed");
  });

  test("from the tarball of npm pack", () => {
    const packed = join(folder.dir, "packed");
    mkdirSync(packed);
    const name = npm(JS, "pack", "--pack-destination", packed).trim().split("\n").at(-1)!;
    const dir = project("tarball");
    npm(dir, "install", "--save-dev", join(packed, name));
    usable(dir);
  });
});
