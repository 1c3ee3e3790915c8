/**
 * `gantry gitops deploy|diff|prune|validate|reconcile|suspend|resume` end to end, against the real controller
 * (`gantry controller run`, watching only this file's namespace) reconciling KluctlDeployments of a real git
 * repository (file://) into the local cluster. The project: targets shop, cart and bag (each its own
 * discriminator; `prod` does not exist), args `level` (default 1) and `namespace` (default: the test namespace), an
 * item `web` (tag web: ConfigMap <target>-settings holding the level, plus <target>-level-two when level > 1) and an
 * item `db` (tag db). Covered: override flags sent as a patch of the spec and answered with the real stored result
 * (-o json); progress on stderr; diff text exactly as the local commands print it (--short-output without diffs);
 * exit 1 for results with errors and for a command error without a stored result (target prod); validate over a
 * label selector in name order; the first failure of a selection skipping the rest; reconcile --prune of a pushed
 * change, and a second reconcile getting its own answer; suspend/resume waiting for observedGeneration; the timeout
 * when no controller answers (a namespace the controller does not watch); selection errors.
 * Each deployment gets at most one request of each kind, except in the test about a second request.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import os from 'node:os';
import path from 'node:path';
import { gantry, kubectl, kubectlJson, startGantry, type JsonResult } from '../support/cli.ts';
import { registerControllerPod } from '../support/controller-pod.ts';
import {
  applyObject,
  getDeployment,
  installCrds,
  readyOf,
  startController,
  waitFor,
  type RunningController,
} from '../support/controller.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';

const SUFFIX = randomBytes(3).toString('hex');
const NS = `gantry-e2e-gitops-cli-${SUFFIX}`;
const RESULTS_NS = `${NS}-results`;
/** Where the controller's stand-in Pod is, whose log is the controller's (see controller-pod.ts). */
const CONTROLLER_NS = `${NS}-system`;
/** Not watched by this file's controller: nobody answers requests there. */
const UNWATCHED_NS = `${NS}-unwatched`;
/** A namespace that does not exist, for apply and readiness errors. */
const MISSING_NS = `${NS}-missing`;
const KD = 'kluctldeployments.gitops.gantry.dev';
const TARGETS = ['shop', 'cart', 'bag'];
/** The ConfigMaps the three targets deploy (shop only includes the tag web). */
const DEPLOYED = ['bag-db', 'bag-settings', 'cart-db', 'cart-settings', 'shop-settings'];

const configMap = (name: string, data: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ target.name }}-${name}\n  namespace: "{{ args.namespace }}"\ndata:\n  ${data}\n`;
const PROJECT: Record<string, string> = {
  '.kluctl.yaml': [
    'args:',
    '  - name: level',
    '    default: 1',
    '  - name: namespace',
    `    default: ${NS}`,
    'targets:',
    ...TARGETS.flatMap((target) => [`  - name: ${target}`, `    discriminator: gitops-cli-${SUFFIX}-${target}`]),
    '',
  ].join('\n'),
  'deployment.yaml': 'deployments:\n  - path: web\n    tags: [web]\n  - path: db\n    tags: [db]\n',
  'web/settings.yaml': `${configMap('settings', 'level: "{{ args.level }}"')}{% if args.level > 1 %}---\n${configMap('level-two', 'enabled: "true"')}{% endif %}\n`,
  'db/db.yaml': configMap('db', 'engine: postgres'),
};

let controller: RunningController;
let repo: TestRepo;

function kluctlDeployment(
  name: string,
  namespace: string,
  labels: Record<string, string>,
  spec: Record<string, unknown>,
): Record<string, unknown> {
  return {
    apiVersion: 'gitops.gantry.dev/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name, namespace, labels },
    spec: { interval: '10m', timeout: '2m', source: { git: { url: repo.url } }, context: 'default', delete: true, ...spec },
  };
}

const select = (name: string) => [
  '-n',
  NS,
  '--name',
  name,
  '--command-result-namespace',
  RESULTS_NS,
  '--controller-namespace',
  CONTROLLER_NS,
];
const requestResult = async (name: string, kind: string) => (await getDeployment(NS, name)).status?.[`${kind}RequestResult`];
const ref = (name: string) => ({ group: '', version: 'v1', kind: 'ConfigMap', namespace: NS, name });
/** The diff of <target>-settings for level 1 → 2, as the local diff prints it. */
const levelDiff = (target: string) =>
  [
    `--- ${NS}/ConfigMap/${target}-settings\tcluster`,
    `+++ ${NS}/ConfigMap/${target}-settings\trendered`,
    '@@ -1,6 +1,6 @@',
    ' apiVersion: v1',
    ' data:',
    '-  level: "1"',
    '+  level: "2"',
    ' kind: ConfigMap',
    ' metadata:',
    '   annotations:',
  ].join('\n');
const EMPTY: JsonResult = {
  newObjects: [],
  changedObjects: [],
  deletedObjects: [],
  orphanObjects: [],
  appliedHooks: [],
  warnings: [],
  errors: [],
};

async function configMapNames(): Promise<string[]> {
  return (await kubectlJson(['get', 'configmaps', '-n', NS, '-l', `kluctl.io/discriminator`])).items
    .map((item) => item.metadata.name)
    .sort();
}

beforeAll(async () => {
  await installCrds();
  for (const namespace of [NS, UNWATCHED_NS]) await kubectl(['create', 'namespace', namespace]);
  repo = await createRepo(PROJECT);
  const criLogFile = path.join(os.tmpdir(), `gantry-e2e-gitops-cli-${SUFFIX}.cri.log`);
  controller = await startController(['--namespace', NS, '--command-result-namespace', RESULTS_NS], {}, undefined, { criLogFile });
  await registerControllerPod(CONTROLLER_NS, criLogFile);
  await applyObject(kluctlDeployment('shop', NS, { tier: 'web' }, { target: 'shop', includeTags: ['web'] }));
  await applyObject(kluctlDeployment('cart', NS, { tier: 'web' }, { target: 'cart' }));
  await applyObject(kluctlDeployment('bag', NS, { tier: 'store' }, { target: 'bag' }));
  await applyObject(kluctlDeployment('broken', NS, { tier: 'db' }, { target: 'prod' }));
  await applyObject(kluctlDeployment('ignored', UNWATCHED_NS, {}, { target: 'shop' }));
  for (const name of TARGETS) {
    await waitFor(
      async () => {
        const deployment = await getDeployment(NS, name);
        return readyOf(deployment)?.status === 'True' && deployment.status.observedGeneration === deployment.metadata.generation;
      },
      120_000,
      async () => `${name} Ready: ${JSON.stringify(readyOf(await getDeployment(NS, name)))}\n${(await controller.log()).slice(-4000)}`,
    );
  }
  expect(await configMapNames()).toEqual(DEPLOYED);
});

afterAll(async () => {
  // While the controller runs, so its finalizer deletes the deployed objects.
  await kubectl(['delete', KD, '--all', '-n', NS, '--wait=true', '--timeout=120s']).catch(() => undefined);
  await controller?.stop();
  await kubectl(['delete', 'namespace', NS, RESULTS_NS, UNWATCHED_NS, CONTROLLER_NS, '--ignore-not-found', '--wait=false']).catch(
    () => undefined,
  );
  await repo?.remove();
});

describe('gantry gitops against the controller', { timeout: 180_000 }, () => {
  it('deploy: sends the overrides as a patch of the spec, waits, and prints the stored result as JSON', async () => {
    const run = await gantry([
      'gitops',
      'deploy',
      ...select('shop'),
      '--dry-run',
      '--no-wait',
      '-a',
      'level=2',
      '-a',
      'extra.flag=true',
      '-I',
      'db',
      '-o',
      'json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    // -I db adds to the spec's includeTags [web]: the db item is rendered too.
    expect(JSON.parse(run.stdout) as JsonResult).toEqual({
      ...EMPTY,
      newObjects: [ref('shop-db'), ref('shop-level-two')],
      changedObjects: [{ ...ref('shop-settings'), diff: levelDiff('shop') }],
      dryRun: true,
    });
    const answer = await requestResult('shop', 'deploy');
    expect(answer.request.overridesPatch).toEqual({
      dryRun: true,
      noWait: true,
      includeTags: ['web', 'db'],
      args: { level: 2, extra: { flag: true } },
    });
    expect(answer.resultId).toMatch(/^deploy-/);
    expect(answer).not.toHaveProperty('commandError');
    expect(run.stderr).toContain(`${NS}/shop: requested deploy, waiting for the controller…`);
    expect(run.stderr).toContain(`${NS}/shop: the controller started the deploy request (reconcile ${answer.reconcileId})`);
    expect(await configMapNames()).toEqual(DEPLOYED); // a dry run
  });

  it('diff: prints text exactly as the local commands do; --short-output leaves the diffs out', async () => {
    const run = await gantry(['gitops', 'diff', ...select('shop'), '-a', 'level=2']);
    expect(run.code, run.stderr).toBe(0);
    const sections = (name: string) => [
      'New objects:',
      `  ${NS}/ConfigMap/${name}-level-two`,
      '',
      'Changed objects:',
      `  ${NS}/ConfigMap/${name}-settings`,
    ];
    const note = ['', 'Dry run: nothing was changed in the cluster.', ''];
    expect(run.stdout).toBe(
      [...sections('shop'), '', `Diff for object ${NS}/ConfigMap/shop-settings`, levelDiff('shop'), ...note].join('\n'),
    );
    expect((await requestResult('shop', 'diff')).request.overridesPatch).toEqual({ args: { level: 2 } });

    const short = await gantry(['gitops', 'diff', ...select('cart'), '-a', 'level=2', '--short-output']);
    expect(short.code, short.stderr).toBe(0);
    expect(short.stdout).toBe([...sections('cart'), ...note].join('\n'));
  });

  it('exits 1 and prints the errors when the result has errors', async () => {
    const run = await gantry(['gitops', 'deploy', ...select('cart'), '--dry-run', '-a', `namespace=${MISSING_NS}`, '-o', 'json']);
    expect(run.code, run.stderr).toBe(1);
    const answer = await requestResult('cart', 'deploy');
    expect(answer.resultId).toMatch(/^deploy-/);
    const { errors } = JSON.parse(run.stdout) as JsonResult;
    expect(errors.map((error) => error.object?.name).sort()).toEqual(['cart-db', 'cart-settings']);
    for (const error of errors) expect(error.message).toContain(`namespaces "${MISSING_NS}" not found`);
    expect(answer.commandError).toBe(errors.map((error) => error.message).join('; '));
  });

  it('exits 1 with the command error as the result when the controller stored none', async () => {
    const run = await gantry(['gitops', 'prune', ...select('broken'), '-o', 'json']);
    expect(run.code, run.stderr).toBe(1);
    const answer = await requestResult('broken', 'prune');
    expect(answer).not.toHaveProperty('resultId');
    expect(answer.commandError).toMatch(/^target 'prod' not found in .*; known targets: shop, cart, bag$/);
    expect(JSON.parse(run.stdout) as JsonResult).toEqual({ ...EMPTY, errors: [{ message: answer.commandError }] });
    expect(run.stderr).toContain(`${NS}/broken: the controller reports: ${answer.commandError}`);
  });

  it('validate: runs every deployment a label selector matches, in name order; fails on objects that are not ready', async () => {
    const run = await gantry([
      'gitops',
      'validate',
      '-n',
      NS,
      '-l',
      'tier=web',
      '--command-result-namespace',
      RESULTS_NS,
      '--warnings-as-errors',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('No changes.\nNo changes.\n');
    const cart = run.stderr.indexOf(`${NS}/cart: requested validate`);
    expect(cart).toBeGreaterThanOrEqual(0);
    expect(cart).toBeLessThan(run.stderr.indexOf(`${NS}/shop: requested validate`));
    expect((await requestResult('cart', 'validate')).request).not.toHaveProperty('overridesPatch');

    // Validated against a namespace where nothing was deployed: every object is missing.
    const missing = await gantry(['gitops', 'validate', ...select('bag'), '-a', `namespace=${MISSING_NS}`]);
    expect(missing.code, missing.stderr).toBe(1);
    expect(missing.stdout).toBe(
      [
        'Errors:',
        `  ${MISSING_NS}/ConfigMap/bag-settings: not ready: does not exist`,
        `  ${MISSING_NS}/ConfigMap/bag-db: not ready: does not exist`,
        '',
      ].join('\n'),
    );
  });

  it('stops at the first failing deployment of a selection', async () => {
    const before = await Promise.all(['cart', 'shop'].map((name) => requestResult(name, 'deploy')));
    const run = await gantry([
      'gitops',
      'deploy',
      '-n',
      NS,
      '-l',
      'tier in (db,web)',
      '--command-result-namespace',
      RESULTS_NS,
      '--short-output',
    ]);
    expect(run.code).toBe(1);
    // broken < cart < shop: broken fails first and the other two are never asked.
    expect(run.stderr).toContain(`${NS}/broken: failed; skipping the remaining 2 KluctlDeployment(s)`);
    expect(run.stderr).not.toContain(`${NS}/cart: requested`);
    expect(run.stdout).toBe(`Errors:\n  ${(await requestResult('broken', 'deploy')).commandError}\n`);
    expect(await Promise.all(['cart', 'shop'].map((name) => requestResult(name, 'deploy')))).toEqual(before);
  });

  it('reconcile --prune deploys a pushed change with prune and prints the result', async () => {
    await repo.commit({ 'deployment.yaml': 'deployments:\n  - path: web\n    tags: [web]\n' }, 'drop the db item');
    const run = await gantry(['gitops', 'reconcile', ...select('cart'), '--prune', '-o', 'json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout) as JsonResult).toEqual({ ...EMPTY, deletedObjects: [ref('cart-db')], orphanObjects: [ref('cart-db')] });
    expect((await requestResult('cart', 'reconcile')).request.overridesPatch).toEqual({ prune: true });
    expect(await configMapNames()).toEqual(DEPLOYED.filter((name) => name !== 'cart-db'));
  });

  it('reconcile: a second request gets its own answer; without changes it succeeds and prints nothing', async () => {
    // The controller must replace the previous answer (endTime, resultId, commandError), not merge into it.
    const first = await requestResult('cart', 'reconcile');
    const run = await gantry(['gitops', 'reconcile', ...select('cart')]);
    const answer = await requestResult('cart', 'reconcile');
    expect(answer.request.requestValue).not.toBe(first.request.requestValue);
    expect(answer, 'the answer keeps fields of the previous one').not.toHaveProperty('resultId');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`${NS}/cart: the reconcile request finished without a stored result`);
  });

  it('suspend and resume set spec.suspend and wait for the controller to observe it', async () => {
    const suspended = await gantry(['gitops', 'suspend', '-n', NS, '--name', 'cart']);
    expect(suspended.code, suspended.stderr).toBe(0);
    expect(suspended.stderr).toContain(`${NS}/cart: suspended`);
    const afterSuspend = await getDeployment(NS, 'cart');
    expect(afterSuspend.spec.suspend).toBe(true);
    expect(afterSuspend.status.observedGeneration).toBe(afterSuspend.metadata.generation);

    const resumed = await gantry(['gitops', 'resume', '-n', NS, '-l', 'tier=web']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`${NS}/cart: resumed`);
    expect(resumed.stderr).toContain(`${NS}/shop: resumed`);
    const afterResume = await getDeployment(NS, 'cart');
    expect(afterResume.spec.suspend).toBe(false);
    expect(afterResume.status.observedGeneration).toBe(afterResume.metadata.generation);
  });

  it('times out when no controller answers', async () => {
    const started = Date.now();
    const run = await gantry(['gitops', 'deploy', '-n', UNWATCHED_NS, '--name', 'ignored', '--timeout', '3s', '-o', 'json']);
    expect(run.code).toBe(1);
    const message = `${UNWATCHED_NS}/ignored: timed out after 3s waiting for the controller to finish the deploy request (is the Gantry controller running?)`;
    expect(JSON.parse(run.stdout) as JsonResult).toEqual({ ...EMPTY, errors: [{ message }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
  });

  it('names what is wrong with the selection', async () => {
    const missing = await gantry(['gitops', 'diff', '-n', NS, '--name', 'missing']);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe(`Errors:\n  KluctlDeployment ${NS}/missing not found\n`);
    const none = await gantry(['gitops', 'diff', '-n', NS]);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('Errors:\n  pass --name (with -n/--namespace) or -l/--label-selector to select KluctlDeployments\n');
    const nothingMatches = await gantry(['gitops', 'suspend', '-n', NS, '-l', 'tier=nothing']);
    expect(nothingMatches.code).toBe(1);
    expect(nothingMatches.stderr).toBe(`error: no KluctlDeployment in namespace ${NS} matches the label selector 'tier=nothing'\n`);
  });
});

/** The controller's log lines, as it wrote them. */
async function controllerLines(): Promise<Array<Record<string, any>>> {
  return (await controller.log())
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>);
}

/** The lines of one reconcile of `name` up to its request's last line, which the CLI stops at. */
async function requestLines(name: string, reconcileId: string): Promise<Array<Record<string, any>>> {
  const lines = (await controllerLines()).filter((line) => line.reconcileID === reconcileId && line.name === name);
  return lines.slice(0, lines.findIndex((line) => line.requestFinished) + 1);
}

/** A log line as the CLI prints it in text. */
const shownAs = (line: Record<string, any>) =>
  `${line.level === 'info' ? '' : `${line.level}: `}${line.msg}${line.err?.message ? `: ${line.err.message}` : ''}`;

const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, any>);

describe("the controller's log, read through its Pod", { timeout: 180_000 }, () => {
  it("a request shows its reconcile's log lines on stderr, up to the request's last line", async () => {
    const run = await gantry(['gitops', 'deploy', ...select('bag'), '--dry-run', '-o', 'json']);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as JsonResult).errors).toEqual([]);
    const answer = await requestResult('bag', 'deploy');
    const lines = await requestLines('bag', answer.reconcileId);
    expect(lines.at(-1)).toMatchObject({ requestFinished: 'deploy', msg: 'the deploy request finished' });
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(run.stderr).toContain(`${NS}/bag: ${shownAs(line)}\n`);
  });

  it('logs prints the lines of a reconcile: its messages as text, each JSON object with -o json; --all every line', async () => {
    const { reconcileId } = await requestResult('bag', 'deploy');
    const args = ['gitops', 'logs', '-n', NS, '--name', 'bag', '--controller-namespace', CONTROLLER_NS, '--log-since', '30m'];
    const json = await gantry([...args, '--reconcile-id', reconcileId, '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const printed = jsonLines(json.stdout);
    expect(printed.length).toBeGreaterThan(2);
    expect(printed).toEqual((await controllerLines()).filter((line) => line.reconcileID === reconcileId).slice(0, printed.length));

    const text = await gantry([...args, '--reconcile-id', reconcileId]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stderr).toBe(`showing logs for ${NS}/bag and reconcile ${reconcileId}\n`);
    expect(text.stdout.split('\n').slice(0, printed.length)).toEqual(printed.map(shownAs));

    const all = await gantry(['gitops', 'logs', '--all', '--controller-namespace', CONTROLLER_NS, '--log-since', '30m', '-o', 'json']);
    expect(all.code, all.stderr).toBe(0);
    const every = jsonLines(all.stdout);
    expect(every.find((line) => line.msg === 'workers started' && line.name === undefined)).toBeDefined();
    expect(every.filter((line) => line.reconcileID === reconcileId).slice(0, printed.length)).toEqual(printed);
    expect(every.some((line) => line.name === 'shop')).toBe(true);
  });

  it('logs -f keeps printing the lines of later reconciles until interrupted', async () => {
    const follow = startGantry([
      'gitops',
      'logs',
      '-f',
      '-n',
      NS,
      '--name',
      'cart',
      '--controller-namespace',
      CONTROLLER_NS,
      '--log-since',
      '30m',
      '-o',
      'json',
    ]);
    try {
      // A line of an earlier reconcile of cart: the stream is open.
      await follow.waitForOutput('stdout', /"name":"cart"/);
      const run = await gantry(['gitops', 'reconcile', ...select('cart'), '-o', 'json']);
      expect(run.code, run.stderr).toBe(0);
      const { reconcileId } = await requestResult('cart', 'reconcile');
      await follow.waitForOutput('stdout', new RegExp(`"reconcileID":"${reconcileId}".*"requestFinished":"reconcile"`));
      const lines = await requestLines('cart', reconcileId);
      const shown = jsonLines(follow.output.stdout).filter((line) => line.reconcileID === reconcileId);
      expect(shown.slice(0, lines.length)).toEqual(lines);
    } finally {
      await follow.stop();
    }
  });

  it('logs names what it is missing', async () => {
    const unselected = await gantry(['gitops', 'logs', '-n', NS]);
    expect(unselected.code).toBe(1);
    expect(unselected.stderr).toBe('error: pass --name (with -n/--namespace), -l/--label-selector or --all\n');
    const noPods = await gantry(['gitops', 'logs', '--all', '--controller-namespace', UNWATCHED_NS]);
    expect(noPods.code).toBe(1);
    expect(noPods.stderr).toBe(
      `error: no controller Pods (label app.kubernetes.io/name=gantry-controller) in namespace ${UNWATCHED_NS}: is the controller running in this cluster? (--controller-namespace)\n`,
    );
  });
});
