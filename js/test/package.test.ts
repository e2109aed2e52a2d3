/** The package as users install it: its build (`dist/`, committed) is what `tsc` makes of
 * `src/`, and it installs on a machine with only Node and npm, from a checkout
 * (`npm install <checkout>/js`, with and without `--install-links`) and from the tarball
 * of `npm pack` — offline: the package has no runtime dependency. */

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";

import { afterAll, describe, expect, test } from "vitest";

import { JS, scratch } from "./peers.js";

const folder = scratch();
afterAll(() => folder.remove());

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

  test("from the tarball of npm pack", () => {
    const packed = join(folder.dir, "packed");
    mkdirSync(packed);
    const name = npm(JS, "pack", "--pack-destination", packed).trim().split("\n").at(-1)!;
    const dir = project("tarball");
    npm(dir, "install", "--save-dev", join(packed, name));
    usable(dir);
  });
});
