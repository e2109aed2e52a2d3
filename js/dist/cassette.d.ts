/** Where a cassette lives: a name in the cassette folder, or a path used as given. */
/** A bare name is `<fixturesDir>/<name>.json` (`fixturesDir`: `cassettes` beside the test
 * file, a relative one taken from there); a name ending `.json`, or absolute, is a path. */
export declare function cassettePath(name: string, testFile: string, fixturesDir?: string): string;
