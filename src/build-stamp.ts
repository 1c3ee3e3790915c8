/**
 * Which build of Gantry runs: scripts/bundle/build.ts gives this constant the time of the build in every bundle (the
 * repository's and the npm package's); undefined when the sources run. Caches that must not outlive the code that
 * wrote them (target/render-cache.ts) key on it.
 */
export const BUILD_STAMP: string | undefined = undefined;
