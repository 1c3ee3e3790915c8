/**
 * The web UI in a real browser (Debian's Chromium through playwright-core) against a real fleet: a server (SQLite)
 * in this process serving the built UI, agents on the two workload clusters, a raw-YAML service `web` on each from
 * a local git repository (dev following main, now at its second revision; prod pinned at the first commit), and
 * a pipeline dev → prod behind an APPROVAL gate waiting for dev's second commit. An admin logs in through the
 * form, sees both clusters healthy, looks into dev's service, approves the gate and watches prod get promoted,
 * then rolls prod back and watches the rollback applied; a reader sees neither the approve nor the rollback
 * button; a user changes their own password from the user menu; objects of a service that only reports drift
 * (selfHeal off) are deleted and edited with kubectl, and the page says so; a cluster registered while the page's
 * event stream is still opening shows once it opens. Every step waits on what the page shows, which live updates
 * (server-sent events) bring. Screenshots of the main pages are taken for docs/ui.md (where they go:
 * test/support/browser.ts).
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
import { launchBrowser, openPage, screenshot } from '../support/browser.ts';
import { testConfig } from '../support/engine.ts';
import { pushedAgentOptions, testServerOptions } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { kubectlJsonOn, kubectlOn, WORKLOAD_CLUSTERS, type WorkloadCluster, workloadKubeConfig } from '../support/workload-clusters.ts';

const [DEV, PROD] = WORKLOAD_CLUSTERS;
const NS = `web-${randomBytes(3).toString('hex')}`;
const DRIFT_NS = `${NS}-drift`;
const ADMIN_PASSWORD = 'admin-password-for-the-ui';
const READER = { name: 'rita', password: 'rita-reads-everything' };
/** Changes her own password; a user of her own, so the admin's session (ended by a new password) stays. */
const PAULA = { name: 'paula', password: 'paula-first-password' };
const PIPELINE = 'web-release';
const app = (round: number) => ({
  'apps/web/configmap.yaml.liquid': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  round: "${round}"\n  greeting: "{{ configuration.greeting }}"\n`,
  'apps/web/serviceaccount.yaml': 'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n',
  // docsPath's Markdown, with what a hostile repository would put in it: HTML that runs script, a javascript: link.
  'apps/web/docs/README.md': `# Web service\n\nRestart it with \`kubectl rollout restart deployment/web\`.\n\n<img src="x" onerror="window.pwned = true">\n\n[Run it](javascript:window.pwned=true)\n`,
  'apps/web/docs/runbook.md': '# Runbook\n\n1. Look at the Components tab.\n2. Roll back from the Revisions tab.\n',
});

describe('the web UI', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let browser: Browser;
  /** The admin's page; the reader gets one of their own. */
  let page: Page;
  const agents: RunningAgent[] = [];
  /** The repository's first commit, where prod starts. */
  let firstCommit: string;
  const { log } = capturedLogger('info');

  /** The round the cluster's `web` ConfigMap says, once it says `round`. */
  const runsRound = (cluster: WorkloadCluster, round: number) =>
    waitFor(
      `${cluster} running round ${round}`,
      async () => {
        const configMap = await kubectlJsonOn<{ data: Record<string, string> }>(cluster, ['get', 'configmap', 'web', '-n', NS]).catch(
          () => undefined,
        );
        return configMap?.data.round === String(round) || undefined;
      },
      30_000,
    );

  async function logIn(user: { name: string; password: string }): Promise<Page> {
    const opened = await openPage(browser, server.url);
    await opened.goto('/');
    await opened.getByLabel('User name').fill(user.name);
    await opened.getByLabel('Password').fill(user.password);
    await opened.getByRole('button', { name: 'Log in' }).click();
    await opened.getByRole('heading', { name: 'Fleet' }).waitFor();
    return opened;
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-ui-'));
    repo = await createRepo(app(1));
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { gitPollIntervalMs: 300, adminPassword: ADMIN_PASSWORD },
      ),
    );
    const client = new FleetClient({ server: server.url, token: server.adminToken! });
    // As the agent's own command configures it: with the watched cache of its objects, which reports drift.
    engine = new Engine(testConfig({ watchDiscriminated: true }));
    for (const cluster of WORKLOAD_CLUSTERS) {
      const { deployToken } = await client.createCluster({ name: cluster, tags: { env: cluster.replace('test-', '') } });
      const options = { server: server.url, token: deployToken, engine, kubeConfig: workloadKubeConfig(cluster) };
      // A poll every 10 s under the push channel: these tests are about pages, and the push channel has its own
      // (test/e2e/fleet-clusters.test.ts, without a poll); a page must not wait 10 minutes on a kick it missed.
      const agentOptions = { ...options, dataDir: path.join(dir, `agent-${cluster}`), log: log.child({ agent: cluster }) };
      agents.push(startAgent(pushedAgentOptions(agentOptions, { pollIntervalMs: 10_000 })));
    }
    await client.createRepository({ url: repo.url });
    const source = { namespace: NS, repository: repo.url, renderer: { kind: 'raw' as const } };
    const dev = await client.createService(DEV, {
      name: 'web',
      ...source,
      git: { ref: 'main', folder: 'apps/web' },
      docsPath: 'docs',
      configuration: { greeting: 'hello from dev' },
    });
    // prod at a fixed commit, as promotions leave it.
    firstCommit = dev.revision.commit!;
    await client.createService(PROD, {
      name: 'web',
      ...source,
      git: { ref: firstCommit, folder: 'apps/web' },
      configuration: { greeting: 'hello from prod' },
    });
    await client.setPipeline(PIPELINE, {
      stages: [
        { name: 'dev', services: [{ cluster: DEV, name: 'web' }] },
        { name: 'prod', services: [{ cluster: PROD, name: 'web', criteria: { cluster: DEV, name: 'web', secrets: ['greeting'] } }] },
      ],
      edges: [{ from: 'dev', to: 'prod', gates: [{ name: 'approval', type: 'APPROVAL' }] }],
    });
    await client.createUser(READER);
    await client.setRoleBinding('rita-reads', { role: 'reader', subjects: [{ kind: 'user', name: READER.name }], scope: 'all' });
    const second = await repo.commit(app(2), 'round 2');
    await waitFor(
      "dev's second commit waiting at the gate, prod healthy",
      async () => {
        const pipeline = await client.getPipeline(PIPELINE);
        const [devStage, prodStage] = pipeline.stages;
        const gate = pipeline.edges[0]!.gates[0];
        return (
          devStage!.context?.services[0]?.commit === second &&
          gate?.state === 'PENDING' &&
          gate.contextId === devStage!.context.id &&
          prodStage!.services[0]!.status === 'healthy'
        );
      },
      60_000,
    );
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all(agents.map((agent) => agent.stop()));
    await server?.close();
    await engine?.close();
    await repo?.remove();
    for (const cluster of WORKLOAD_CLUSTERS)
      await kubectlOn(cluster, ['delete', 'namespace', NS, DRIFT_NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  test('an admin logs in through the form and sees both clusters healthy, with their services', async () => {
    const login = await openPage(browser, server.url);
    await login.goto('/fleet');
    await login.getByRole('button', { name: 'Log in' }).waitFor();
    await screenshot(login, 'login');
    await login.context().close();

    page = await logIn({ name: 'admin', password: ADMIN_PASSWORD });
    for (const cluster of WORKLOAD_CLUSTERS) {
      await page.locator(`tr[data-cluster="${cluster}"] .badge-healthy`).waitFor();
      await page.locator(`tr[data-service="${cluster}/web"] .badge-healthy`).waitFor();
    }
    await page.locator('.live-live').waitFor();
    await screenshot(page, 'fleet');

    await page.getByLabel('Search clusters, services, tags').fill('env=prod');
    await page.locator(`tr[data-cluster="${DEV}"]`).waitFor({ state: 'detached' });
    expect(await page.locator('tr[data-cluster]').count()).toBe(1);
    await page.getByLabel('Search clusters, services, tags').fill('');
  });

  test('a cluster whose agent should move to another version shows both; the skew is gone once it is unpinned', async () => {
    const admin = new FleetClient({ server: server.url, token: server.adminToken! });
    const skew = page.locator(`tr[data-cluster="${PROD}"] .agent-skew`);
    try {
      await admin.setAgentVersion(PROD, '9.9.9');
      await skew.waitFor();
      expect(await skew.textContent()).toBe('→ 9.9.9');
      expect(await skew.getAttribute('title')).toBe('its agent should run 9.9.9, its pinned version');
      expect(await page.locator(`tr[data-cluster="${DEV}"] .agent-skew`).count()).toBe(0);
      await screenshot(page, 'agent-skew');
    } finally {
      await admin.setAgentVersion(PROD, null);
    }
    await skew.waitFor({ state: 'detached' });
  });

  test("a service shows its component tree, an object as the cluster has it, its revisions' diff and its configuration masked", async () => {
    await page.locator(`tr[data-service="${DEV}/web"]`).getByRole('link', { name: 'web' }).click();
    await page.getByRole('heading', { level: 1, name: /^web/ }).waitFor();
    const configMap = page.locator(`[data-object="${NS}/ConfigMap/web"]`);
    await configMap.locator('.badge-healthy').waitFor();
    await page.locator(`[data-object="${NS}/ServiceAccount/web"] .badge-healthy`).waitFor();
    await configMap.getByRole('button').click();
    const object = page.getByRole('region', { name: `Object ConfigMap ${NS}/web` });
    await object.getByText('round: "2"').waitFor();
    expect(await object.textContent()).toContain('greeting: hello from dev');
    await screenshot(page, 'service-components');

    await page.getByRole('tab', { name: /Revisions/ }).click();
    await page.locator('tr[data-revision="1"]').waitFor();
    await page.getByRole('region', { name: 'Revision diff' }).locator('.removed').first().waitFor();
    const sourceFile = page.getByRole('region', { name: 'Source files diff' }).locator('[data-file="configmap.yaml.liquid"]');
    await sourceFile.locator('.added', { hasText: 'round: "2"' }).waitFor();
    expect(await sourceFile.locator('.removed').textContent()).toContain('round: "1"');
    await screenshot(page, 'service-revisions');

    await page.getByRole('tab', { name: 'Configuration' }).click();
    await page.getByRole('cell', { name: 'greeting (hidden)' }).waitFor();
    expect(await page.locator('body').textContent()).not.toContain('hello from dev');
    await screenshot(page, 'service-configuration');

    // docsPath: its Markdown rendered, and nothing the repository wrote runs.
    await page.getByRole('tab', { name: 'Docs' }).click();
    const doc = page.getByRole('article', { name: 'Doc README.md' });
    await doc.getByRole('heading', { name: 'Web service' }).waitFor();
    expect(await doc.locator('code').textContent()).toBe('kubectl rollout restart deployment/web');
    expect(await doc.locator('img').count()).toBe(0);
    expect(await doc.getByRole('link', { name: 'Run it' }).getAttribute('href')).not.toMatch(/^javascript:/i);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    await page.getByRole('navigation', { name: 'Docs files' }).getByRole('button', { name: 'runbook.md' }).click();
    await page.getByRole('article', { name: 'Doc runbook.md' }).getByRole('listitem').first().waitFor();
    await screenshot(page, 'service-docs');

    // A service of several sources (Plural's sources and renderers) shows each source and each folder's renderer.
    const admin = new FleetClient({ server: server.url, token: server.adminToken! });
    await admin.createService(DEV, {
      name: 'multi',
      namespace: NS,
      repository: repo.url,
      git: { ref: 'main', folder: 'apps/web' },
      sources: [{ path: 'more', repository: repo.url, git: { ref: 'main', folder: 'apps/web/docs' } }],
      renderers: [{ path: 'docs', kind: 'raw' }],
    });
    try {
      await page.goto(`/fleet/${DEV}/multi`);
      await page.getByRole('tab', { name: 'Configuration' }).click();
      const source = page.getByRole('region', { name: 'Source' });
      await source.getByText('Source at more').waitFor();
      expect(await source.textContent()).toContain(`${repo.url} main apps/web/docs`);
      expect(await source.textContent()).toContain('docs raw');
    } finally {
      await admin.deleteService(DEV, 'multi', true);
    }
  });

  test('a reader sees the pending gate and the revisions, but no approve and no rollback button', async () => {
    const reader = await logIn(READER);
    await reader.goto(`/pipelines/${PIPELINE}`);
    await reader.locator('tr[data-gate="approval"] .gate-pending').waitFor();
    await reader.getByText('Read-only: deciding these gates').waitFor();
    expect(await reader.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    await screenshot(reader, 'pipeline-reader');

    await reader.goto(`/fleet/${PROD}/web/revisions`);
    await reader.getByText('Read-only: rolling back').waitFor();
    expect(await reader.getByRole('button', { name: /Roll back/ }).count()).toBe(0);
    await reader.context().close();
  });

  test("approving the gate promotes dev's commit to prod, drawn and listed in the history as it happens", async () => {
    await page.getByRole('link', { name: 'Pipelines' }).click();
    await page.getByRole('link', { name: PIPELINE }).click();
    const gate = page.locator('tr[data-gate="approval"]');
    await gate.locator('.gate-pending').waitFor();
    await page.getByRole('region', { name: 'Stage dev' }).locator('.badge-healthy').waitFor();
    await page
      .getByRole('region', { name: 'Waiting for' })
      .locator('[data-edge="dev/prod"] li', { hasText: /^APPROVAL gate approval: waits for an approver since / })
      .waitFor();
    await screenshot(page, 'pipeline-pending');
    // Before deciding, the approver reads what the promotion would change on prod, as prod's agent dry-ran it.
    const preview = page.getByRole('region', { name: 'Promotion preview' }).locator(`[data-preview="${PROD}/web"]`);
    await preview.getByText('1 to change').waitFor();
    await preview.locator('.diff .added', { hasText: 'round: "2"' }).waitFor();
    expect(await preview.locator('.diff .removed', { hasText: 'round: "1"' }).count()).toBe(1);
    // The configuration the promotion copies is masked, as the service page hides it: old value and new.
    await preview.locator('.diff .added', { hasText: 'greeting: *****' }).waitFor();
    expect(await preview.textContent()).not.toMatch(/hello from (dev|prod)/);
    await preview.scrollIntoViewIfNeeded();
    await screenshot(page, 'pipeline-preview');

    await gate.getByRole('button', { name: 'Approve' }).click();
    await gate.locator('.gate-open').waitFor();
    await page.locator('tr[data-promotion="dev-prod"]').waitFor();
    await page.getByText('✓ promoted').waitFor();
    await page.getByRole('region', { name: 'Waiting for' }).waitFor({ state: 'detached' });
    await page.getByRole('region', { name: 'Promotion preview' }).waitFor({ state: 'detached' });
    const prodStage = page.getByRole('region', { name: 'Stage prod' });
    await prodStage.getByText('#2').waitFor();
    await prodStage.locator('.badge-healthy').waitFor();
    await runsRound(PROD, 2);
    await screenshot(page, 'pipeline-promoted');
  });

  test('rolling prod back to its first revision applies it, with progress shown until it is healthy, pinned until released', async () => {
    await page.goto(`/fleet/${PROD}/web/revisions`);
    const first = page.locator('tr[data-revision="1"]');
    await first.getByRole('button', { name: 'Roll back to #1' }).click();
    await first.getByRole('button', { name: 'Confirm rollback to #1' }).click();
    await page.getByTestId('revision').getByText('#3').waitFor();
    await page.getByTestId('applied').getByText('#3').waitFor();
    await page.locator('.page-header .badge-healthy').waitFor();
    await page.locator('tr[data-revision="3"]').getByText('rollback to revision 1').waitFor();
    await runsRound(PROD, 1);
    const pin = page.getByRole('status', { name: 'Pin' });
    await pin.getByText('Pinned at #3 by admin').waitFor();
    await page.locator('tr[data-revision="3"]').getByText('current, pinned').waitFor();
    await screenshot(page, 'service-rolled-back');

    await pin.getByRole('button', { name: 'Release the pin' }).click();
    await pin.getByRole('button', { name: 'Confirm: release the pin' }).click();
    await pin.waitFor({ state: 'detached' });
    await page.locator('tr[data-revision="3"]').getByText('current', { exact: true }).waitFor();
  });

  test('objects deleted and edited with kubectl show as drift on the service page; with selfHeal off they stay so', async () => {
    const admin = new FleetClient({ server: server.url, token: server.adminToken! });
    await admin.createService(PROD, {
      name: 'drifty',
      namespace: DRIFT_NS,
      repository: repo.url,
      renderer: { kind: 'raw' },
      git: { ref: firstCommit, folder: 'apps/web' },
      configuration: { greeting: 'hello from drifty' },
      syncConfig: { selfHeal: false },
    });
    // Healthy first, as the server has it (a clear failure if the agent never applies it); then the page, which
    // shows what it read and what the event stream brings after.
    await waitFor('drifty healthy', async () => (await admin.getService(PROD, 'drifty')).status === 'healthy', 30_000);
    await page.goto(`/fleet/${PROD}/drifty`);
    await page.locator('.page-header .badge-healthy').waitFor();
    await kubectlOn(PROD, ['patch', 'configmap', 'web', '-n', DRIFT_NS, '-p', '{"data":{"round":"edited"}}']);
    await kubectlOn(PROD, ['delete', 'serviceaccount', 'web', '-n', DRIFT_NS]);
    await page
      .locator(`[data-object="${DRIFT_NS}/ConfigMap/web"] [data-drift="CHANGED"]`, { hasText: 'changed: data.round by kubectl-patch' })
      .waitFor();
    await page
      .locator(`[data-object="${DRIFT_NS}/ServiceAccount/web"] [data-drift="MISSING"]`, { hasText: 'deleted in the cluster' })
      .waitFor();
    await page.getByRole('status').getByText('2 objects differ from revision #1 in the cluster; selfHeal is off').waitFor();
    await page.locator('.page-header .badge', { hasText: 'Drifted' }).waitFor();
    await screenshot(page, 'service-drift');
  });

  test("a cluster registered after the page's first answers, before its event stream opens, shows once the stream opens", async () => {
    // The stream held back until the page has its data: the registration is then no event the page hears (and a
    // cluster with no agent brings no later one), so only the page fetching again as the stream opens shows it;
    // polling stops once the stream is live.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/v1/events', async (route) => {
      await held;
      await route.continue();
    });
    const admin = new FleetClient({ server: server.url, token: server.adminToken! });
    try {
      await page.goto('/fleet');
      await page.locator(`tr[data-cluster="${PROD}"]`).waitFor();
      await admin.createCluster({ name: 'late' });
      release();
      await page.locator('.live-live').waitFor();
      await page.locator('tr[data-cluster="late"]').waitFor();
    } finally {
      release();
      await page.unroute('**/v1/events');
      await admin.deleteCluster('late').catch(() => undefined);
    }
  });

  test('a cluster Cluster API makes shows where its provisioning stands, with the reason as the title', async () => {
    const admin = new FleetClient({ server: server.url, token: server.adminToken! });
    // A management cluster with no agent: the Cluster API objects wait for it.
    await admin.createCluster({ name: 'ui-mgmt' });
    try {
      await admin.createCluster({ name: 'ui-made', provisioning: { management: 'ui-mgmt', class: 'local', version: 'v1.35.4' } });
      await page.goto('/fleet');
      const tag = page.locator('tr[data-cluster="ui-made"] .provisioning');
      await tag.waitFor();
      expect(await tag.textContent()).toBe('provisioning: waiting');
      expect(await tag.getAttribute('title')).toBe("waiting for the management cluster's agent to apply it");
      expect(await page.locator('tr[data-cluster="ui-mgmt"] .provisioning').count()).toBe(0);
      expect(await page.locator('tr[data-service="ui-mgmt/capi-ui-made"] .source').textContent()).toBe('Cluster API objects of ui-made');
      await screenshot(page, 'cluster-provisioning');
    } finally {
      await admin.deleteCluster('ui-made').catch(() => undefined);
      await admin.deleteCluster('ui-mgmt').catch(() => undefined);
    }
  });

  test('a user changes their own password from the user menu; their other sessions end and only the new one logs in', async () => {
    const admin = new FleetClient({ server: server.url, token: server.adminToken! });
    await admin.createUser(PAULA);
    await admin.setRoleBinding('paula-reads', { role: 'reader', subjects: [{ kind: 'user', name: PAULA.name }], scope: 'all' });
    const other = await logIn(PAULA);
    const own = await logIn(PAULA);
    let sent = 0;
    own.on('request', (request) => {
      if (new URL(request.url()).pathname === '/v1/me/password') sent += 1;
    });
    await own.getByRole('link', { name: 'Update password' }).click();
    const form = own.getByRole('form', { name: 'Update password' });
    const fill = async (current: string, next: string, again: string) => {
      await form.getByLabel('Current password').fill(current);
      await form.getByLabel('New password', { exact: true }).fill(next);
      await form.getByLabel('New password again').fill(again);
      await form.getByRole('button', { name: 'Update password' }).click();
    };
    const newPassword = 'paula-second-password';

    await fill('not-her-password', newPassword, newPassword);
    await form.getByRole('alert').getByText('the current password is wrong').waitFor();
    expect(sent).toBe(1);

    await fill(PAULA.password, newPassword, 'paula-second-passwort');
    await form.getByRole('alert').getByText('the new passwords differ').waitFor();
    expect(sent).toBe(1);

    await fill(PAULA.password, newPassword, newPassword);
    await form.getByRole('status').getByText('Your other sessions have ended').waitFor();
    await own.locator('.live-live').waitFor();
    await screenshot(own, 'account-password');
    expect(sent).toBe(2);
    expect(await form.getByRole('alert').count()).toBe(0);
    expect(await form.getByLabel('Current password').inputValue()).toBe('');
    await other.reload();
    await other.getByRole('button', { name: 'Log in' }).waitFor();
    await other.context().close();

    await own.getByRole('button', { name: 'Log out' }).click();
    await own.getByLabel('User name').fill(PAULA.name);
    await own.getByLabel('Password').fill(PAULA.password);
    await own.getByRole('button', { name: 'Log in' }).click();
    await own.getByRole('alert').getByText('wrong username or password').waitFor();
    await own.context().close();
    await (await logIn({ ...PAULA, password: newPassword })).context().close();
  });
});
