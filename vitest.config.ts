import { configDefaults, defineConfig } from 'vitest/config';
import { clusterLayout } from './scripts/cluster/layout.ts';
import { ENGINE_CLUSTER } from './test/support/engine-cluster.ts';

/** Test files outside src/ that work in a namespace, a database or a temp folder of their own, never on another file's. */
const SELF_CONTAINED_TESTS = [
  'test/architecture.test.ts',
  'test/conformance/**/*.test.ts',
  'test/fuzz/**/*.test.ts',
  'test/golden/**/*.test.ts',
];
/** Unit files that restart the shared PostgreSQL server, which would cut every other file's connections. */
const RESTARTS_SHARED_SERVERS = ['src/server/postgres-restart.test.ts', 'src/server/replicas.test.ts'];
/**
 * End-to-end files on the local cluster: the fleet's (they also use the workload clusters) and, to even out the two
 * groups' times, some that start clusters of their own or use none. Every other end-to-end file runs on the engine
 * cluster.
 */
const LOCAL_CLUSTER_TESTS = [
  'test/browser/**/*.test.ts',
  'test/cluster/**/*.test.ts',
  'test/e2e/access-cli.test.ts',
  'test/e2e/auth-proxy.test.ts',
  'test/e2e/chart.test.ts',
  'test/e2e/cli-bundle.test.ts',
  'test/e2e/cluster-api.test.ts',
  'test/e2e/controller-install.test.ts',
  'test/e2e/faults.test.ts',
  'test/e2e/fleet-*.test.ts',
  'test/e2e/npm-package.test.ts',
  'test/e2e/operator*.test.ts',
  'test/e2e/pipelines.test.ts',
  'test/e2e/readme-cli.test.ts',
  'test/e2e/server-install.test.ts',
  'test/e2e/up.test.ts',
];

export const SELF_CONTAINED_PROJECT = 'self-contained';
/** The two groups of end-to-end files; scripts/test.ts (`npm test`) runs them side by side. */
export const END_TO_END_PROJECTS = ['end-to-end (local)', `end-to-end (${ENGINE_CLUSTER})`] as const;
export const RESTARTS_SHARED_SERVERS_PROJECT = 'restarts shared servers';

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
          name: SELF_CONTAINED_PROJECT,
          include: ['src/**/*.test.ts', ...SELF_CONTAINED_TESTS],
          exclude: [...configDefaults.exclude, ...RESTARTS_SHARED_SERVERS],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      // End-to-end files share their cluster (and some fixtures share discriminators), so each group runs one file
      // at a time. The two groups work on clusters of their own, so scripts/test.ts runs them side by side (vitest
      // itself would run them as one queue): they mostly wait on API servers and controllers, and one file at a
      // time left about 40% of the CPU idle.
      {
        extends: true,
        test: {
          name: END_TO_END_PROJECTS[0],
          include: LOCAL_CLUSTER_TESTS,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: END_TO_END_PROJECTS[1],
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...SELF_CONTAINED_TESTS, ...LOCAL_CLUSTER_TESTS],
          env: { KUBECONFIG: clusterLayout(ENGINE_CLUSTER).kubeconfig },
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        // Alone, after every other file.
        test: {
          name: RESTARTS_SHARED_SERVERS_PROJECT,
          include: RESTARTS_SHARED_SERVERS,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
