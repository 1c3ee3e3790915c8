import { configDefaults, defineConfig } from 'vitest/config';

/** Test files outside src/ that work in a namespace, a database or a temp folder of their own, never on another file's. */
const SELF_CONTAINED_TESTS = [
  'test/architecture.test.ts',
  'test/conformance/**/*.test.ts',
  'test/fuzz/**/*.test.ts',
  'test/golden/**/*.test.ts',
];
/** Unit files that restart the shared PostgreSQL server, which would cut every other file's connections. */
const RESTARTS_SHARED_SERVERS = ['src/server/postgres-restart.test.ts', 'src/server/replicas.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 600_000,
    projects: [
      {
        extends: true,
        // Mostly CPU-bound (Jinja2, YAML, fuzzing), so two workers shorten them on a 2-core machine (from 289 s to
        // 189 s); they run before the end-to-end files, never beside them.
        test: {
          name: 'self-contained',
          include: ['src/**/*.test.ts', ...SELF_CONTAINED_TESTS],
          exclude: [...configDefaults.exclude, ...RESTARTS_SHARED_SERVERS],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        // End-to-end files share one cluster (and some fixtures share discriminators), so they run one at a time.
        test: {
          name: 'end-to-end',
          include: ['test/**/*.test.ts', ...RESTARTS_SHARED_SERVERS],
          exclude: [...configDefaults.exclude, ...SELF_CONTAINED_TESTS],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
