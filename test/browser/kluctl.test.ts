/**
 * The web UI's KluctlDeployments and Live pages in a real browser (Debian's Chromium through playwright-core)
 * against a real fleet: a server (SQLite) in this process, agents on the two workload clusters, and the
 * KluctlDeployment controller reconciling a namespace of test-dev, where two KluctlDeployments deploy targets of a
 * small project from a local git repository (a ConfigMap and a Deployment each): `shop`, and `gated` with manual
 * approval. Everything cluster-side is read and changed through the auth proxy as the logged-in user. An admin sees
 * shop Ready with its first deploy; pushes a change and presses Reconcile, and sees the new deploy arrive with the
 * changed ConfigMap's diff; suspends shop, pushes another change and presses Diff (a request runs while suspended,
 * nothing is deployed), resumes it and sees the change deployed; diffs and approves gated; a reader sees the
 * results but no action buttons; Live shows the namespace's pods, a pod's YAML and the events. Each step waits on
 * what the page shows, which the watch of the KluctlDeployments brings. Screenshots: see test/support/browser.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import {
  applyOn,
  installKluctlCrds,
  launchBrowser,
  openPage,
  screenshot,
  startWorkloadController,
  waitKluctlReady,
  type WorkloadController,
} from '../support/browser.ts';
import { kluctlDeployment } from '../support/controller.ts';
import { testConfig } from '../support/engine.ts';
import { pushedAgentOptions, testServerOptions } from '../support/fleet.ts';
import { watchWrites } from '../support/write-watch.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { kubectlJsonOn, kubectlOn, WORKLOAD_CLUSTERS, workloadKubeConfig } from '../support/workload-clusters.ts';

const [DEV] = WORKLOAD_CLUSTERS;
const SUFFIX = randomBytes(3).toString('hex');
const NS = `kluctl-ui-${SUFFIX}`;
const ADMIN_PASSWORD = 'admin-password-for-the-ui';
const READER = { name: 'rita', password: 'rita-reads-everything' };
const project = (round: number) => ({
  '.kluctl.yaml': [
    'targets:',
    ...['shop', 'gated'].flatMap((name) => [`  - name: ${name}`, `    discriminator: kluctl-ui-${SUFFIX}-${name}`]),
    '',
  ].join('\n'),
  'deployment.yaml': 'deployments:\n  - path: app\n',
  'app/settings.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "{{ target.name }}-settings"\n  namespace: ${NS}\ndata:\n  round: "${round}"\n`,
  'app/web.yaml': [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata:',
    '  name: "{{ target.name }}-web"',
    `  namespace: ${NS}`,
    'spec:',
    '  replicas: 1',
    '  selector:',
    '    matchLabels: { app: "{{ target.name }}-web" }',
    '  template:',
    '    metadata:',
    '      labels: { app: "{{ target.name }}-web" }',
    '    spec:',
    '      containers:',
    '        - name: web',
    '          image: registry.local/web:1',
    '',
  ].join('\n'),
});

describe('the KluctlDeployment and Live pages', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let controller: WorkloadController;
  let browser: Browser;
  let page: Page;
  const agents: RunningAgent[] = [];
  const { log } = capturedLogger('info');

  async function logIn(user: { name: string; password: string }): Promise<Page> {
    const opened = await openPage(browser, server.url);
    await opened.goto('/');
    await opened.getByLabel('User name').fill(user.name);
    await opened.getByLabel('Password').fill(user.password);
    await opened.getByRole('button', { name: 'Log in' }).click();
    await opened.getByRole('heading', { name: 'Fleet' }).waitFor();
    return opened;
  }

  const shownResult = () => page.getByRole('region', { name: 'Command result' });
  const settingsDiff = () => shownResult().locator(`[data-changed="${NS}/ConfigMap/shop-settings"]`);
  const configMapRound = async () =>
    (await kubectlJsonOn<{ data: Record<string, string> }>(DEV, ['get', 'configmap', 'shop-settings', '-n', NS])).data.round;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-ui-kluctl-'));
    repo = await createRepo(project(1));
    await installKluctlCrds(DEV);
    await kubectlOn(DEV, ['create', 'namespace', NS]);
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { adminPassword: ADMIN_PASSWORD },
      ),
    );
    const client = new FleetClient({ server: server.url, token: server.adminToken! });
    engine = new Engine(testConfig());
    for (const cluster of WORKLOAD_CLUSTERS) {
      const { deployToken } = await client.createCluster({ name: cluster, tags: { env: cluster.replace('test-', '') } });
      const options = { server: server.url, token: deployToken, engine, kubeConfig: workloadKubeConfig(cluster) };
      agents.push(
        startAgent(pushedAgentOptions({ ...options, dataDir: path.join(dir, `agent-${cluster}`), log: log.child({ agent: cluster }) })),
      );
    }
    await client.createUser(READER);
    await client.setRoleBinding('rita-reads', { role: 'reader', subjects: [{ kind: 'user', name: READER.name }], scope: 'all' });
    controller = await startWorkloadController(DEV, NS, log);
    await applyOn(DEV, kluctlDeployment(NS, 'shop', repo.url, { target: 'shop' }));
    await applyOn(DEV, kluctlDeployment(NS, 'gated', repo.url, { target: 'gated', manual: true }));
    await waitKluctlReady(DEV, NS, 'shop');
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await controller?.stop();
    await Promise.all(agents.map((agent) => agent.stop()));
    await server?.close();
    await engine?.close();
    await repo?.remove();
    await kubectlOn(DEV, ['delete', 'namespace', NS, '--wait=false']).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  test("an admin sees the clusters' KluctlDeployments: shop Ready with its first deploy, gated awaiting approval", async () => {
    page = await logIn({ name: 'admin', password: ADMIN_PASSWORD });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'KluctlDeployments' }).click();
    const shop = page.locator(`tr[data-kluctl="${NS}/shop"]`);
    await shop.locator('.badge-healthy').waitFor();
    await shop.getByText('2 new').waitFor();
    await shop.getByText('no drift').waitFor();
    await page.locator(`tr[data-kluctl="${NS}/gated"]`).getByText('Awaiting approval').waitFor();
    await page.getByRole('region', { name: `KluctlDeployments of ${DEV}` }).waitFor();
    await page.getByLabel('Search names, namespaces, targets, sources').fill(NS);
    // The search goes through the URL and a render: count the rows once the filter has been applied.
    const rows = page.locator('tr[data-kluctl]');
    await waitFor('only the two rows of the search', async () => (await rows.count()) === 2, 30_000);
    expect(await rows.count()).toBe(2);
    await screenshot(page, 'kluctl-deployments');
  });

  test("shop's page shows its last deploy; Reconcile deploys a pushed change and its result arrives with the diff", async () => {
    await page.locator(`tr[data-kluctl="${NS}/shop"]`).getByRole('link').click();
    await page.locator('.page-header .badge-healthy').waitFor();
    await page.locator('.command-result[data-command="deploy"]').waitFor();
    await shownResult().getByRole('region', { name: 'New objects' }).getByText(`${NS}/ConfigMap/shop-settings`).waitFor();

    const second = await repo.commit(project(2), 'round 2');
    await page.getByRole('button', { name: 'Reconcile', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Reconcile (requested|running)/ })
      .first()
      .waitFor();
    await page.locator('.command-result[data-command="deploy"]').getByText('1 changed').waitFor();
    await settingsDiff().locator('.removed', { hasText: 'round: "1"' }).waitFor();
    await settingsDiff().locator('.added', { hasText: 'round: "2"' }).waitFor();
    await page.getByTestId('commit').getByText(second.slice(0, 7)).waitFor();
    await page.locator('tr[data-result-kind="deploy"]').getByText('1 changed').waitFor();
    await page.locator('tr[data-request="reconcile"]').getByText('done').waitFor();
    await page.locator('.progress-lines').waitFor({ state: 'detached' });
    await page.locator('.page-header .badge-healthy').waitFor();
    expect(await configMapRound()).toBe('2');
    await screenshot(page, 'kluctl-deployment');
  });

  test('suspended, shop diffs a pushed change without deploying it; resumed, it deploys it', async () => {
    await page.getByRole('button', { name: 'Suspend' }).click();
    await page.locator('.page-header .badge-unknown', { hasText: 'Suspended' }).waitFor();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    await page.locator('.progress-lines').waitFor({ state: 'detached' });

    const third = await repo.commit(project(3), 'round 3');
    await page.getByRole('button', { name: 'Diff', exact: true }).click();
    await page.locator('.command-result[data-command="diff"]').waitFor();
    await settingsDiff().locator('.removed', { hasText: 'round: "2"' }).waitFor();
    await settingsDiff().locator('.added', { hasText: 'round: "3"' }).waitFor();
    await page.locator('tr[data-request="diff"]').getByText('done').waitFor();
    await page.locator('.progress-lines').waitFor({ state: 'detached' });
    expect(await configMapRound()).toBe('2');
    await screenshot(page, 'kluctl-diff');

    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Suspend' }).waitFor();
    await page.getByTestId('commit').getByText(third.slice(0, 7)).waitFor();
    const deployed = page.locator('tr[data-result-kind="deploy"]');
    await deployed.getByText(third.slice(0, 7)).waitFor();
    await deployed.getByRole('button', { name: 'Show' }).click();
    await page.locator('.command-result[data-command="deploy"]').getByText('1 changed').waitFor();
    await settingsDiff().locator('.added', { hasText: 'round: "3"' }).waitFor();
    await page.locator('.page-header .badge-healthy').waitFor();
    await waitKluctlReady(DEV, NS, 'shop');
    expect(await configMapRound()).toBe('3');
  });

  test('gated awaits approval: a diff shows what it would deploy, approving deploys it', async () => {
    await page.goto(`/kluctl/${DEV}/${NS}/gated`);
    const approval = page.locator('.approval');
    await approval.getByText('Waiting for approval').waitFor();
    // The diff renders the current commit, which the approval then names.
    await page.getByRole('button', { name: 'Diff', exact: true }).click();
    await page.locator('.command-result[data-command="diff"]').getByText('2 new').waitFor();
    await page.locator('.progress-lines').waitFor({ state: 'detached' });
    await screenshot(page, 'kluctl-approval');
    await approval.getByRole('button', { name: 'Approve' }).click();
    await approval.getByRole('button', { name: 'Confirm approval' }).click();
    await page.locator('.page-header .badge-healthy').waitFor();
    await page.locator('tr[data-result-kind="deploy"]').getByText('2 new').waitFor();
    await waitFor('gated-settings deployed', async () =>
      (await kubectlJsonOn(DEV, ['get', 'configmaps', '-n', NS])).items.some((item) => item.metadata.name === 'gated-settings'),
    );
  });

  test('a reader sees the results and their diffs, but no action buttons', async () => {
    const reader = await logIn(READER);
    await reader.goto(`/kluctl/${DEV}/${NS}/shop`);
    await reader.getByText('Read-only: reconciling, deploying and suspending need').waitFor();
    await reader.locator('.command-result[data-command="deploy"]').waitFor();
    await reader.locator('tr[data-result-kind="diff"]').getByRole('button', { name: 'Show' }).click();
    await reader.locator('.command-result[data-command="diff"]').getByText('1 changed').waitFor();
    await reader.locator(`[data-changed="${NS}/ConfigMap/shop-settings"] .added`, { hasText: 'round: "3"' }).waitFor();
    expect(await reader.getByRole('button', { name: /^(Reconcile|Diff|Deploy|Prune|Suspend)$/ }).count()).toBe(0);
    await reader.context().close();
  });

  test('a diff of an unmerged branch shows what merging it would change, and writes nothing but the request', async () => {
    await page.goto(`/kluctl/${DEV}/${NS}/shop`);
    await page.getByRole('button', { name: 'Suspend' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    await page.locator('.progress-lines').waitFor({ state: 'detached' });
    // A branch at round 4; main goes on at round 3's content.
    await repo.commit(project(4), 'round 4 on a branch');
    await repo.branch('feature/round-4');
    await repo.commit(project(3), 'main stays at round 3');
    const observedCommit = async () =>
      (await kubectlJsonOn<{ status: { observedCommit?: string } }>(DEV, ['get', 'kluctldeployments.gitops.gantry.dev', 'shop', '-n', NS]))
        .status.observedCommit;
    const observed = await observedCommit();
    const cluster = engine.clusters.get(workloadKubeConfig(DEV), workloadKubeConfig(DEV).getCurrentContext());
    const watch = await watchWrites(cluster, { namespace: NS, labelKey: 'gantry.dev/none', discriminator: 'none' });
    let writes: string[];
    try {
      const form = page.getByRole('form', { name: 'Diff another ref' });
      await form.getByLabel('Ref to diff').fill('feature/round-4');
      await form.getByRole('button', { name: 'Diff ref' }).click();
      await page.locator('.command-result[data-command="diff"]').waitFor();
      await settingsDiff().locator('.removed', { hasText: 'round: "3"' }).waitFor();
      await settingsDiff().locator('.added', { hasText: 'round: "4"' }).waitFor();
      await page.locator('tr[data-request="diff"]').getByText('done').waitFor();
      await page.locator('.progress-lines').waitFor({ state: 'detached' });
      await screenshot(page, 'kluctl-diff-ref');
    } finally {
      writes = await watch.stop();
    }
    // Only the KluctlDeployment itself changed (the request annotation and its answer in status).
    expect(writes.filter((write) => !write.includes(`KluctlDeployment ${NS}/shop`))).toEqual([]);
    expect(await configMapRound()).toBe('3');
    // The status still names the commit the resource points at, not the branch's.
    expect(await observedCommit()).toBe(observed);
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Suspend' }).waitFor();
  });

  test("Live: the namespaces, the namespace's pods, a pod's YAML and events", async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Live' }).click();
    await page.locator(`tr[data-cluster="${DEV}"]`).getByRole('link').click();
    await page.getByLabel('Search namespaces').fill(NS);
    await page.locator(`tr[data-namespace="${NS}"]`).getByRole('link').click();
    const pod = page.locator('tr[data-object^="shop-web-"]');
    await pod.locator('.badge-healthy').waitFor();
    await screenshot(page, 'live-namespace');

    await pod.getByRole('link').click();
    const yaml = page.getByRole('region', { name: /^Object Pod / });
    await yaml.getByText(`namespace: ${NS}`).first().waitFor();
    expect(await yaml.textContent()).toContain('image: registry.local/web:1');
    await page.getByRole('table', { name: 'Events' }).locator('tr[data-event="Scheduled"]').waitFor();
    await screenshot(page, 'live-pod');

    await page.getByRole('link', { name: NS }).click();
    await page.getByRole('tab', { name: 'Events' }).click();
    await page.locator('tr[data-event="ScalingReplicaSet"]').first().waitFor();
    await screenshot(page, 'live-events');
  });
});
