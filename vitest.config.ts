import { defineConfig } from 'vitest/config';

/** The test files that work in a namespace, a database or a temp folder of their own, never on another file's. */
const SELF_CONTAINED = [
  'src/**/*.test.ts',
  'test/architecture.test.ts',
  'test/conformance/**/*.test.ts',
  'test/fuzz/**/*.test.ts',
  'test/golden/**/*.test.ts',
];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 600_000,
    projects: [
      {
        extends: true,
        // Mostly CPU-bound (Jinja2, YAML, fuzzing), so two workers halve their wall time on a 2-core machine; they
        // run before the end-to-end files, never beside them.
        test: { name: 'self-contained', include: SELF_CONTAINED, maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        // End-to-end files share one cluster (and some fixtures share discriminators), so they run one at a time.
        test: {
          name: 'end-to-end',
          include: ['test/**/*.test.ts'],
          exclude: SELF_CONTAINED,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
