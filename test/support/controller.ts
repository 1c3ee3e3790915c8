/**
 * The GitOps controller in end-to-end tests: the real `gantry controller run` as a subprocess against the local
 * cluster (out of cluster, as for development), with the CRDs from install/ applied first.
 */
import { appendFileSync, closeSync, createWriteStream, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { start } from '../../src/exec.ts';
import { REPO_ROOT } from './fixtures.ts';
import { KUBECONFIG, kubectl, kubectlJson } from './cli.ts';
import { crdsServed } from './crds.ts';

export const WEBHOOK_SECRET = 'e2e-webhook-secret';

export interface RunningController {
  /** Of the controller process. */
  pid: number;
  healthUrl: string;
  metricsUrl: string;
  /** POST target of git push webhooks. */
  webhookUrl: string;
  log(): Promise<string>;
  /** False once the process exited. */
  running(): boolean;
  stop(): Promise<void>;
}

/** Applies the CRDs of install/ (server-side, so reruns are no-ops) to the cluster of `kubeconfig`, the local one by default. */
export async function installCrds(kubeconfig = KUBECONFIG): Promise<void> {
  await kubectl([
    '--kubeconfig',
    kubeconfig,
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    path.join(REPO_ROOT, 'install/crds/kluctldeployments.gitops.gantry.dev.yaml'),
    '-f',
    path.join(REPO_ROOT, 'install/crds/alerts.gitops.gantry.dev.yaml'),
  ]);
  await crdsServed(['kluctldeployments.gitops.gantry.dev', 'alerts.gitops.gantry.dev'], kubeconfig);
}

export interface ControllerOptions {
  /**
   * Also copy the output, line by line, into this file in the CRI log format a container runtime writes
   * (`<RFC 3339 time> stdout F <line>`, as containerd does), for kwok's kubelet to serve as a Pod's log
   * (see controller-pod.ts).
   */
  criLogFile?: string;
  /** A command line the controller's is appended to and run by, e.g. one that puts it in a cgroup (scripts/bench/memory-limit.ts). */
  launcher?: string[];
}

/** Starts `gantry controller run` against the cluster of `kubeconfig` (the local one by default) and waits until it is ready. */
export async function startController(
  extraArgs: string[] = [],
  env: Record<string, string> = {},
  kubeconfig = KUBECONFIG,
  options: ControllerOptions = {},
): Promise<RunningController> {
  const [healthPort, metricsPort] = await Promise.all([freePort(), freePort()]);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-e2e-controller-'));
  const secretFile = path.join(dir, 'webhook-secret');
  await writeFile(secretFile, WEBHOOK_SECRET);
  const logFile = path.join(dir, 'controller.log');
  const fd = openSync(logFile, 'a');
  const [command, ...launcherArgs] = [...(options.launcher ?? []), path.join(REPO_ROOT, 'node_modules/.bin/node')];
  const child: ChildProcess = start(
    command!,
    [
      ...launcherArgs,
      path.join(REPO_ROOT, 'bin/gantry.js'),
      'controller',
      'run',
      '--kubeconfig',
      kubeconfig,
      '--health-probe-bind-address',
      `127.0.0.1:${healthPort}`,
      '--metrics-bind-address',
      `127.0.0.1:${metricsPort}`,
      '--webhook-secret-file',
      secretFile,
      '--cache-dir',
      path.join(dir, 'cache'),
      ...extraArgs,
    ],
    { logFd: options.criLogFile ? undefined : fd, env: { GANTRY_CACHE_DIR: path.join(dir, 'cache'), ...env } },
  );
  if (options.criLogFile) copyOutput(child, fd, options.criLogFile);
  else closeSync(fd);
  const healthUrl = `http://127.0.0.1:${healthPort}`;
  const controller: RunningController = {
    pid: child.pid ?? 0,
    healthUrl,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    webhookUrl: `http://127.0.0.1:${metricsPort}/hooks/git`,
    log: () => readFile(logFile, 'utf8'),
    running: () => child.exitCode === null && child.signalCode === null,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(15_000).then(() => child.kill('SIGKILL'))]);
    },
  };
  await waitFor(
    async () => (await fetch(`${healthUrl}/readyz`).catch(() => undefined))?.ok === true,
    60_000,
    async () => `controller not ready:\n${await controller.log()}`,
  );
  return controller;
}

/** The child's output lines into the log file `fd` as they are, and into `criLogFile` as a container runtime writes them. */
function copyOutput(child: ChildProcess, fd: number, criLogFile: string): void {
  const cri = createWriteStream(criLogFile, { flags: 'a' });
  let open = 2;
  for (const [stream, input] of [
    ['stdout', child.stdout],
    ['stderr', child.stderr],
  ] as const) {
    const lines = createInterface({ input: input!, crlfDelay: Infinity });
    lines.on('line', (line) => {
      appendFileSync(fd, `${line}\n`);
      cri.write(`${new Date().toISOString()} ${stream} F ${line}\n`);
    });
    lines.on('close', () => {
      if (--open > 0) return;
      closeSync(fd);
      cri.end();
    });
  }
}

/**
 * Polls `check` until it returns a truthy value. A check that throws fails the wait at once: a check that may meet
 * a transient error (an object not created yet) says so itself.
 * @throws Error with `describe()`'s text when `timeoutMs` passes; the check's own error when it throws.
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false | null>,
  timeoutMs: number,
  describe: () => Promise<string> | string = () => 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${await describe()}`);
    await sleep(250);
  }
}

/**
 * A KluctlDeployment of the git repository `url` in `namespace`, with the defaults the e2e tests share (target and
 * context `default`: the controller's own cluster; prune and delete) overridden by `spec`.
 */
export function kluctlDeployment(
  namespace: string,
  name: string,
  url: string,
  spec: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'gitops.gantry.dev/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name, namespace },
    spec: {
      interval: '10m',
      timeout: '2m',
      source: { git: { url } },
      target: 'default',
      context: 'default',
      prune: true,
      delete: true,
      ...spec,
    },
  };
}

/** The files of a one-item Kluctl project deploying ConfigMaps (name → `data.value`) into `namespace`. */
export function configMapProject(namespace: string, discriminator: string, configMaps: Record<string, string>): Record<string, string> {
  const files: Record<string, string> = {
    '.kluctl.yaml': `discriminator: ${discriminator}\ntargets:\n  - name: default\n`,
    'deployment.yaml': 'deployments:\n  - path: app\n',
  };
  for (const [name, value] of Object.entries(configMaps)) {
    files[`app/${name}.yaml`] =
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\ndata:\n  value: "${value}"\n`;
  }
  return files;
}

/** `data.value` of the ConfigMap `namespace/name`, undefined when it does not exist. */
export async function configMapValue(namespace: string, name: string): Promise<string | undefined> {
  const found = await kubectlJson<{ items: Array<{ metadata: { name: string }; data?: { value?: string } }> }>([
    'get',
    'configmaps',
    '-n',
    namespace,
  ]);
  return found.items.find((item) => item.metadata.name === name)?.data?.value;
}

/**
 * Waits until the KluctlDeployment is Ready for its current generation.
 * @throws Error with its Ready condition and the end of `log` (the controller's) on timeout.
 */
export async function waitReady(
  namespace: string,
  name: string,
  log: () => Promise<string>,
  timeoutMs = 120_000,
): Promise<Record<string, any>> {
  return waitFor(
    async () => {
      const deployment = await getDeployment(namespace, name);
      return readyOf(deployment)?.status === 'True' && deployment.status.observedGeneration === deployment.metadata.generation
        ? deployment
        : undefined;
    },
    timeoutMs,
    async () =>
      `${namespace}/${name} Ready: ${JSON.stringify(readyOf(await getDeployment(namespace, name).catch(() => ({}))))}\n${(await log()).slice(-4000)}`,
  );
}

/**
 * Asks for a reconcile through Kluctl's request annotation and waits until a reconcile answered it.
 * @throws Error with the end of `log` (the controller's) on timeout.
 */
export async function reconcileNow(namespace: string, name: string, log: () => Promise<string>): Promise<Record<string, any>> {
  const request = `e2e-${Date.now()}`;
  await kubectl([
    'annotate',
    '--overwrite',
    'kluctldeployments.gitops.gantry.dev',
    name,
    '-n',
    namespace,
    `kluctl.io/request-reconcile=${request}`,
  ]);
  return waitFor(
    async () => {
      const deployment = await getDeployment(namespace, name);
      const result = deployment.status?.reconcileRequestResult;
      // An endTime before the startTime would be the previous request's, left behind in the status.
      const ended = result?.endTime && Date.parse(result.endTime) >= Date.parse(result.startTime);
      return result?.request?.requestValue === request && ended ? deployment : undefined;
    },
    120_000,
    async () => `reconcile request ${request} of ${namespace}/${name}\n${(await log()).slice(-4000)}`,
  );
}

/**
 * How many reconciles of `namespace/name` the controller whose metrics are at `metricsUrl` has finished: the count of
 * Flux's `gotk_reconcile_duration_seconds`, which the manager observes once a reconcile has returned; 0 before the
 * first one.
 */
export async function reconcileCount(metricsUrl: string, namespace: string, name: string, kind = 'KluctlDeployment'): Promise<number> {
  const series = `gotk_reconcile_duration_seconds_count{kind="${kind}",name="${name}",namespace="${namespace}"} `;
  const line = (await (await fetch(metricsUrl)).text()).split('\n').find((entry) => entry.startsWith(series));
  return line === undefined ? 0 : Number(line.slice(series.length));
}

/**
 * Waits until the controller has finished two more reconciles of `namespace/name` than it had when called.
 * Reconciles of one object never overlap, so the second of them started after this call: whatever the test did
 * before calling, a whole reconcile of the object has run since.
 * @throws Error with the end of `log` (the controller's) on timeout.
 */
export async function waitReconciledSince(
  metricsUrl: string,
  namespace: string,
  name: string,
  log: () => Promise<string>,
  timeoutMs = 60_000,
): Promise<void> {
  const before = await reconcileCount(metricsUrl, namespace, name);
  let now = before;
  await waitFor(
    async () => (now = await reconcileCount(metricsUrl, namespace, name)) >= before + 2,
    timeoutMs,
    async () => `two reconciles of ${namespace}/${name} after the ${before} finished before (now ${now})\n${(await log()).slice(-4000)}`,
  );
}

/** Waits until the KluctlDeployment's Ready condition is False (a failure was reported). */
export async function waitNotReady(namespace: string, name: string, timeoutMs = 60_000): Promise<Record<string, any>> {
  return waitFor(
    async () => {
      const deployment = await getDeployment(namespace, name);
      return readyOf(deployment)?.status === 'False' ? deployment : undefined;
    },
    timeoutMs,
    async () => `${namespace}/${name} not Ready: ${JSON.stringify(readyOf(await getDeployment(namespace, name).catch(() => ({}))))}`,
  );
}

/** The KluctlDeployment as the API server has it. */
export async function getDeployment(namespace: string, name: string): Promise<Record<string, any>> {
  return kubectlJson<Record<string, any>>(['get', 'kluctldeployments.gitops.gantry.dev', name, '-n', namespace]);
}

/** Its Ready condition, or undefined. */
export function readyOf(
  deployment: Record<string, any>,
): { status: string; reason: string; message: string; lastTransitionTime: string } | undefined {
  return (deployment.status?.conditions ?? []).find((condition: { type: string }) => condition.type === 'Ready');
}

/** Applies a KluctlDeployment (or any object) given as a plain object. */
export async function applyObject(object: Record<string, unknown>): Promise<void> {
  await kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=e2e', '-f', '-'], JSON.stringify(object));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
