/**
 * `gantry webui --kubeconfig` (the real binary, a child process) on a workload cluster, without a fleet server: the
 * KluctlDeployment controller (in this process) reconciles a KluctlDeployment of a small project from a local git
 * repository in a namespace of test-dev, and the browser, with no login, sees it Ready with its result, presses
 * Reconcile after a push and sees the deploy with its diff arrive (the patch and the watch going through the
 * webui's forwarding with the kubeconfig's credentials), and browses the namespace's pods. Requests that name
 * another host or come from another site's page are refused.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { capturedLogger } from '../../src/controller/test-support.ts';
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
import { type GantryProcess, startGantry } from '../support/cli.ts';
import { configMapProject, kluctlDeployment } from '../support/controller.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { kubectlJsonOn, kubectlOn, WORKLOAD_CLUSTERS, workloadKubeconfig } from '../support/workload-clusters.ts';

const [DEV] = WORKLOAD_CLUSTERS;
const NS = `webui-${randomBytes(3).toString('hex')}`;
const project = (round: number) => configMapProject(NS, `${NS}-app`, { settings: `round ${round}` });

describe('gantry webui', () => {
  let repo: TestRepo;
  let controller: WorkloadController;
  let webui: GantryProcess;
  let url: string;
  let browser: Browser;
  let page: Page;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    repo = await createRepo(project(1));
    await installKluctlCrds(DEV);
    await kubectlOn(DEV, ['create', 'namespace', NS]);
    controller = await startWorkloadController(DEV, NS, log);
    await applyOn(DEV, kluctlDeployment(NS, 'app', repo.url));
    webui = startGantry(['webui', '--kubeconfig', workloadKubeconfig(DEV), '--listen', '127.0.0.1:0']);
    url = (await webui.waitForOutput('stderr', /at (http:\/\/127\.0\.0\.1:\d+)\//))[1]!;
    await waitKluctlReady(DEV, NS, 'app');
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await webui?.stop();
    await controller?.stop();
    await repo?.remove();
    await kubectlOn(DEV, ['delete', 'namespace', NS, '--wait=false']).catch(() => undefined);
  });

  test("shows the context's KluctlDeployments without a login, and only those pages", async () => {
    expect(webui.output.stderr).toContain('no login: do not expose it');
    page = await openPage(browser, url);
    await page.goto('/');
    await page.getByRole('heading', { name: 'KluctlDeployments' }).waitFor();
    const row = page.locator(`tr[data-kluctl="${NS}/app"]`);
    await row.locator('.badge-healthy').waitFor();
    await row.getByText('1 new').waitFor();
    await page.locator('.topbar').getByText('gantry-test-dev').waitFor();
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['KluctlDeployments', 'Live']);
    await page.getByLabel('Search names, namespaces, targets, sources').fill(NS);
    await screenshot(page, 'webui');
  });

  test('Reconcile after a push deploys it, the result arriving with its diff', async () => {
    await page.locator(`tr[data-kluctl="${NS}/app"]`).getByRole('link').click();
    await page.locator('.command-result[data-command="deploy"]').getByText('1 new').waitFor();
    await repo.commit(project(2), 'round 2');
    await page.getByRole('button', { name: 'Reconcile', exact: true }).click();
    const changed = page.locator(`.command-result[data-command="deploy"] [data-changed="${NS}/ConfigMap/settings"]`);
    await changed.locator('.added', { hasText: 'value: round 2' }).waitFor();
    await page.locator('tr[data-request="reconcile"]').getByText('done').waitFor();
    const configMap = await kubectlJsonOn<{ data: Record<string, string> }>(DEV, ['get', 'configmap', 'settings', '-n', NS]);
    expect(configMap.data.value).toBe('round 2');
  });

  test("Live: the namespace's config maps, one as YAML", async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Live' }).click();
    await page.getByRole('heading', { name: 'Namespaces of local' }).waitFor();
    await page.getByLabel('Search namespaces').fill(NS);
    await page.locator(`tr[data-namespace="${NS}"]`).getByRole('link').click();
    await page.getByRole('navigation', { name: 'Kinds' }).getByRole('link', { name: 'ConfigMap', exact: true }).click();
    await page.locator('tr[data-object="settings"]').getByRole('link').click();
    await page
      .getByRole('region', { name: `Object ConfigMap ${NS}/settings` })
      .getByText('value: round 2')
      .waitFor();
  });

  test('refuses requests for another host name, from pages of other sites, and for other clusters', async () => {
    // node:http, as fetch sets Host itself.
    const get = (path: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number }>((resolve, reject) =>
        request(`${url}${path}`, { headers }, (response) => {
          response.resume();
          resolve({ status: response.statusCode ?? 0 });
        })
          .on('error', reject)
          .end(),
      );
    expect((await get('/v1/me', { host: 'attacker.example:80' })).status).toBe(403);
    expect((await get('/v1/me', { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await get('/v1/clusters/local/proxy/api/v1/namespaces', { origin: 'http://attacker.example' })).status).toBe(403);
    expect((await get('/v1/clusters/prod/proxy/api/v1/namespaces')).status).toBe(404);
    expect((await get(`/v1/clusters/local/proxy/api/v1/namespaces/${NS}`)).status).toBe(200);
  });
});
