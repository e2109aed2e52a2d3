/** Where a cassette lives: a name in the cassette folder, or a path used as given. */
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { OtelReplayError } from "./engine.js";
/** A bare name is `<fixturesDir>/<name>.json` (`fixturesDir`: `cassettes` beside the test
 * file, a relative one taken from there); a name ending `.json`, or absolute, is a path. */
export function cassettePath(name, testFile, fixturesDir) {
    if (name.endsWith(".json") || isAbsolute(name))
        return resolve(name);
    const folder = resolve(dirname(testFile), fixturesDir ?? "cassettes");
    const path = resolve(folder, `${name}.json`);
    const inside = relative(folder, path);
    if (inside.startsWith(`..${sep}`) || inside === ".." || isAbsolute(inside)) {
        throw new OtelReplayError(`otel-replay: cassette name ${JSON.stringify(name)} escapes the cassette folder ` +
            `${folder}; use a name inside it, or a path ending in .json`);
    }
    return path;
}
//# sourceMappingURL=cassette.js.map