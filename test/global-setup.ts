/**
 * vitest globalSetup: makes sure the tools are built and the local cluster (scripts/cluster) and PostgreSQL
 * (scripts/postgres) are up before any test file runs, and hands the tests KUBECONFIG, GANTRY_TEST_POSTGRES_URL and
 * a PATH starting with .cluster/bin (kubectl, helm, kustomize, python3). Both are left running for the next run
 * (`npm run cluster -- down --all` and `npm run postgres -- down` stop them).
 */
import { delimiter } from 'node:path';
import { clusterUp } from '../scripts/cluster/cluster.ts';
import { clusterLayout } from '../scripts/cluster/layout.ts';
import { postgresUp } from '../scripts/postgres/postgres.ts';
import { setUpMachine } from '../scripts/setup/setup.ts';

export default async function setup(): Promise<void> {
  const report = (line: string) => console.error(`global-setup: ${line}`);
  // Cheap when `npm test` already ran scripts/setup.sh; needed for a bare `npx vitest run`.
  await setUpMachine(report);
  const [state, postgres] = await Promise.all([clusterUp({ report }), postgresUp(report)]);
  // Test workers are started after this returns and inherit the environment of this process.
  process.env.KUBECONFIG = state.kubeconfig;
  process.env.GANTRY_TEST_POSTGRES_URL = postgres.url;
  process.env.PATH = `${clusterLayout().bin}${delimiter}${process.env.PATH ?? ''}`;
}
