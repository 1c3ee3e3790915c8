/**
 * A real browser for the UI's tests: Debian's Chromium (installed by the setup, scripts/setup/web.ts) driven by
 * playwright-core, headless; Playwright's own browser downloads are never used. Pages get a desktop-sized window
 * and a default wait long enough for an agent to apply a change, and their screenshots go to .test-output/screenshots
 * (docs/screenshots with GANTRY_UPDATE_SCREENSHOTS=1).
 * For the KluctlDeployment pages: the CRDs on a workload cluster and the controller reconciling there.
 */
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM } from '../../scripts/setup/web.ts';
import { startKluctlController } from '../../src/controller/kluctl-deployment/controller.ts';
import { waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import type { Logger } from '../../src/logger.ts';
import { testConfig } from './engine.ts';
import { REPO_ROOT } from './fixtures.ts';
import { crdsServed } from './crds.ts';
import { kubectlJsonOn, kubectlOn, type WorkloadCluster, workloadKubeConfig, workloadKubeconfig } from './workload-clusters.ts';

/**
 * Where screenshots go: docs/screenshots (docs/ui.md shows them) only when GANTRY_UPDATE_SCREENSHOTS=1 asks for it,
 * .test-output/screenshots (ignored by git) otherwise, so a test run leaves the tree as it found it: every run
 * renders the pages a few pixels differently.
 */
const SCREENSHOTS =
  process.env['GANTRY_UPDATE_SCREENSHOTS'] === '1'
    ? path.join(REPO_ROOT, 'docs', 'screenshots')
    : path.join(REPO_ROOT, '.test-output', 'screenshots');
/** How long a locator waits for its element: an agent's apply and report take a few seconds. */
const WAIT_MS = 30_000;

export function launchBrowser(): Promise<Browser> {
  // No sandbox: the tests run as root, which Chromium's sandbox refuses.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
}

/** A page in a context of its own (its own cookies: one user each), at `baseURL`. */
export async function openPage(browser: Browser, baseURL: string): Promise<Page> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1360, height: 860 }, locale: 'en-GB', timezoneId: 'UTC' });
  context.setDefaultTimeout(WAIT_MS);
  return await context.newPage();
}

/** The whole page as <name>.png in SCREENSHOTS (docs/screenshots for docs/ui.md when asked). */
export async function screenshot(page: Page, name: string): Promise<void> {
  // Off the content, so no link shows the hover of the last click.
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Applies the KluctlDeployment and Alert CRDs of install/ to a workload cluster (server-side, so reruns are no-ops). */
export async function installKluctlCrds(cluster: WorkloadCluster): Promise<void> {
  await kubectlOn(cluster, ['apply', '--server-side', '--force-conflicts', '-k', path.join(REPO_ROOT, 'install/crds')]);
  await crdsServed(['kluctldeployments.gitops.gantry.dev', 'alerts.gitops.gantry.dev'], workloadKubeconfig(cluster));
}

export interface WorkloadController {
  /** Deletes the namespace's KluctlDeployments while it runs (their finalizers delete what they deployed), then stops. */
  stop(): Promise<void>;
}

/**
 * The KluctlDeployment controller in this process (as `gantry controller run` starts it), against a workload
 * cluster, reconciling only `namespace`'s KluctlDeployments; command results go to gantry-results, where the UI
 * reads them. Its engine is its own, as the controller process's is.
 */
export async function startWorkloadController(cluster: WorkloadCluster, namespace: string, log: Logger): Promise<WorkloadController> {
  const engine = new Engine(testConfig());
  const controller = await startKluctlController({
    kubeConfig: workloadKubeConfig(cluster),
    engine,
    namespace,
    workers: 2,
    resultsNamespace: 'gantry-results',
    keepResults: 5,
    cacheMaxAgeMs: 3_600_000,
    logger: log.child({ controller: cluster }),
  });
  return {
    stop: async () => {
      await kubectlOn(cluster, ['delete', 'kluctldeployments.gitops.gantry.dev', '--all', '-n', namespace, '--timeout=60s']).catch(
        () => undefined,
      );
      await controller.stop();
      await engine.close();
    },
  };
}

/** Applies `object` (a KluctlDeployment, say) to a workload cluster with server-side apply. */
export async function applyOn(cluster: WorkloadCluster, object: Record<string, unknown>): Promise<void> {
  await kubectlOn(
    cluster,
    ['apply', '--server-side', '--force-conflicts', '--field-manager=gantry-test', '-f', '-'],
    JSON.stringify(object),
  );
}

/** Waits until the KluctlDeployment is Ready at its current generation, as kubectl reads it. */
export async function waitKluctlReady(cluster: WorkloadCluster, namespace: string, name: string): Promise<Record<string, any>> {
  return waitFor(
    `KluctlDeployment ${namespace}/${name} Ready on ${cluster}`,
    async () => {
      const deployment = await kubectlJsonOn<Record<string, any>>(cluster, [
        'get',
        'kluctldeployments.gitops.gantry.dev',
        name,
        '-n',
        namespace,
      ]);
      const ready = (deployment.status?.conditions ?? []).find((condition: { type: string }) => condition.type === 'Ready');
      return ready?.status === 'True' && deployment.status.observedGeneration === deployment.metadata.generation ? deployment : undefined;
    },
    60_000,
  );
}
