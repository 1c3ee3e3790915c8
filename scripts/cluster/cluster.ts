/**
 * The local Kubernetes cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (fake
 * kubelets) as detached processes of this machine, described by `.cluster/state.json`.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../../src/exec.ts';
import { toYamlDocuments } from '../../src/yaml.ts';
import {
  apiserverCommand,
  type ClusterPorts,
  type ComponentCommand,
  controllerManagerCommand,
  etcdCommand,
  kwokCommand,
  PORT_NAMES,
  schedulerCommand,
} from './components.ts';
import { kubeconfigYaml, readCredentials, writeCredentials } from './credentials.ts';
import { type ClusterLayout, clusterLayout } from './layout.ts';
import { withLock } from './lock.ts';
import { kwokNode, NODE_NAMES } from './nodes.ts';
import { defaultStorageClass } from './storage.ts';
import { freePorts } from '../../src/ports.ts';
import { type ComponentProcess, isRunning, residentBytes, startComponent, stopComponent } from '../../src/processes.ts';
import { answersOk, untilPortFree, waitUntil } from './readiness.ts';

/** Contents of the cluster's state.json. */
export interface ClusterState {
  /** https://127.0.0.1:<port> of kube-apiserver. */
  server: string;
  /** Path of the kubeconfig for users and tests. */
  kubeconfig: string;
  /** ISO time `up` started the cluster. */
  startedAt: string;
  ports: ClusterPorts;
  /** In start order. */
  components: ComponentProcess[];
}

export interface ClusterStatus {
  /** The cluster's name; its kubeconfig context is `gantry-<name>`. */
  name: string;
  /** `degraded`: state.json exists, but a component is gone or the API does not answer. */
  state: 'running' | 'degraded' | 'stopped';
  server?: string;
  kubeconfig?: string;
  startedAt?: string;
  components: Array<{ name: string; pid: number; running: boolean; rssBytes?: number }>;
}

export interface ClusterOptions {
  /** Defaults to the default cluster (`local`) of this clone's `.cluster/`. */
  layout?: ClusterLayout;
  /** Receives progress lines. */
  report?: (line: string) => void;
}

// Long enough for another clone's `up` (tens of seconds) to finish; short enough to notice a hung one.
const LOCK_TIMEOUT_MS = 5 * 60_000;
const STOP_GRACE_MS = 10_000;
const APISERVER = 'kube-apiserver';
/** kwok's Logs CRD, in layout.crds (see scripts/setup/tools.ts). */
const LOGS_CRD = 'logs.kwok.x-k8s.io.yaml';
const OWN_STAGES = fileURLToPath(new URL('stages', import.meta.url));

/**
 * Starts the cluster unless it is already running (then returns at once). Resolves when /readyz is ok, the kwok
 * Nodes are Ready and namespace default has its ServiceAccount (Pods cannot be created before that).
 * A cluster left half-running (a component died) is stopped and started afresh.
 * A start that fails is tried once more from scratch.
 * @throws Error naming the step that failed and the log to read; whatever had been started is stopped again.
 */
export async function clusterUp(options: ClusterOptions = {}): Promise<ClusterState> {
  const layout = options.layout ?? clusterLayout();
  const report = options.report ?? (() => {});
  await mkdir(dirname(layout.lock), { recursive: true });
  return await withLock(layout.lock, LOCK_TIMEOUT_MS, async () => {
    const previous = await readState(layout);
    if (previous && (await isHealthy(layout, previous))) {
      report(`already up at ${previous.server}`);
      return previous;
    }
    if (previous) {
      report('found a stale or half-running cluster; stopping what is left of it');
      await stopComponents(previous.components, report);
    }
    const started = performance.now();
    const state = await startCluster(layout, report).catch((error: Error) => {
      // Seen once on a loaded machine: etcd closed its listeners a second after starting, for no reason its log gave.
      // A fresh start (new ports, empty data) is cheap; a second failure is reported.
      report(`start failed (${error.message}); starting afresh once more`);
      return startCluster(layout, report);
    });
    report(`up at ${state.server} in ${((performance.now() - started) / 1000).toFixed(1)}s`);
    return state;
  });
}

/** A process run beside a cluster's own components (Cluster API's controllers, see scripts/capi). */
export interface AddOn {
  /** Component name, also its log file's (`<logs>/<name>.log`). */
  name: string;
  /** Absolute path of the program. */
  program: string;
  args: string[];
  /** True once it serves (polled every 100 ms). */
  ready: () => Promise<boolean>;
}

/**
 * Starts add-ons beside the running cluster's components and records them in state.json, so that `down` stops them
 * with the cluster (first, as the newest). When every add-on of these names still runs, nothing is started; when
 * only some do, those are stopped and all started afresh. `make` gets the cluster's state and is called only when
 * something starts (it may pick ports and write configuration).
 * @throws Error when the cluster is not running, or an add-on exits or is not ready within 90 s (naming its log).
 */
export async function startAddOns(
  layout: ClusterLayout,
  names: readonly string[],
  make: (state: ClusterState) => Promise<AddOn[]>,
  report: (line: string) => void = () => {},
): Promise<ClusterState> {
  return await withLock(layout.lock, LOCK_TIMEOUT_MS, async () => {
    const state = await runningState(layout);
    const present = state.components.filter((component) => names.includes(component.name));
    if (present.length === names.length && present.every(isRunning)) return state;
    await stopComponents(present, report);
    state.components = state.components.filter((component) => !names.includes(component.name));
    for (const addOn of await make(state)) {
      report(`starting ${addOn.name}`);
      const component = startComponent(addOn.name, addOn.program, addOn.args, layout.logs);
      state.components.push(component);
      await writeState(layout, state);
      await waitUntil(target(layout, component, `${addOn.name} readiness`), 90_000, addOn.ready);
    }
    return state;
  });
}

/** Stops exactly the processes recorded in state.json, then removes the data dir, the state and the kubeconfig. */
export async function clusterDown(options: ClusterOptions = {}): Promise<void> {
  const layout = options.layout ?? clusterLayout();
  const report = options.report ?? (() => {});
  await mkdir(dirname(layout.lock), { recursive: true });
  await withLock(layout.lock, LOCK_TIMEOUT_MS, async () => {
    const state = await readState(layout);
    if (state) await stopComponents(state.components, report);
    else report('not running');
    await removeClusterFiles(layout);
  });
  // A named cluster's folder holds nothing else; the default cluster's is `.cluster/` itself, which keeps the tools.
  if (layout.data !== join(layout.root, 'data')) await rm(dirname(layout.lock), { recursive: true, force: true });
}

/**
 * Kills the cluster's kube-apiserver with SIGKILL, as a crash would, for fault tests; etcd and the other components
 * keep running. startApiServer brings it back.
 * @throws Error when the cluster is not running.
 */
export async function stopApiServer(layout: ClusterLayout = clusterLayout()): Promise<void> {
  await withLock(layout.lock, LOCK_TIMEOUT_MS, async () => {
    const state = await runningState(layout);
    const apiserver = state.components.find((component) => component.name === APISERVER);
    if (apiserver && isRunning(apiserver)) await stopComponent(apiserver, STOP_GRACE_MS, 'SIGKILL');
    await untilPortFree(state.ports.apiserver, 10_000);
  });
}

/**
 * Starts the kube-apiserver stopApiServer killed, on the same port with the same certificate and token (its data is
 * in etcd), and resolves when /readyz answers.
 * @throws Error when the cluster is not running or the apiserver does not become ready (naming its log).
 */
export async function startApiServer(layout: ClusterLayout = clusterLayout()): Promise<void> {
  await withLock(layout.lock, LOCK_TIMEOUT_MS, async () => {
    const state = await runningState(layout);
    const index = state.components.findIndex((component) => component.name === APISERVER);
    const previous = state.components[index];
    if (previous && isRunning(previous)) return;
    const command = apiserverCommand(state.ports, await readCredentials(layout.data));
    const apiserver = startComponent(command.name, join(layout.bin, command.binary), command.args, layout.logs);
    state.components[index] = apiserver;
    await writeState(layout, state);
    await waitUntil(target(layout, apiserver, 'kube-apiserver /readyz'), 90_000, () => apiserverReady(layout, state));
  });
}

async function runningState(layout: ClusterLayout): Promise<ClusterState> {
  const state = await readState(layout);
  if (!state) throw new Error(`cluster ${layout.name} is not running`);
  return state;
}

/** What state.json records, checked against the live processes and the API. */
export async function clusterStatus(layout: ClusterLayout = clusterLayout()): Promise<ClusterStatus> {
  const state = await readState(layout);
  if (!state) return { name: layout.name, state: 'stopped', components: [] };
  const components = state.components.map((component) => {
    const running = isRunning(component);
    return { name: component.name, pid: component.pid, running, rssBytes: running ? residentBytes(component.pid) : undefined };
  });
  return {
    name: layout.name,
    state: (await isHealthy(layout, state)) ? 'running' : 'degraded',
    server: state.server,
    kubeconfig: state.kubeconfig,
    startedAt: state.startedAt,
    components,
  };
}

async function startCluster(layout: ClusterLayout, report: (line: string) => void): Promise<ClusterState> {
  const stages = await stageFiles(layout);
  await removeClusterFiles(layout);
  await mkdir(layout.data, { recursive: true });
  await mkdir(layout.logs, { recursive: true });
  const ports: ClusterPorts = await freePorts(PORT_NAMES);
  const credentials = await writeCredentials(layout.data);
  const state: ClusterState = {
    server: `https://127.0.0.1:${ports.apiserver}`,
    kubeconfig: layout.kubeconfig,
    startedAt: new Date().toISOString(),
    ports,
    components: [],
  };
  // state.json is rewritten after every start, so a crash of `up` itself still leaves `down` a complete list.
  const launch = async (command: ComponentCommand): Promise<ComponentProcess> => {
    report(`starting ${command.name}`);
    const component = startComponent(command.name, join(layout.bin, command.binary), command.args, layout.logs);
    state.components.push(component);
    await writeState(layout, state);
    return component;
  };

  try {
    const etcd = await launch(etcdCommand(ports, layout.data));
    await waitUntil(target(layout, etcd, 'etcd /health'), 30_000, () => answersOk(`http://127.0.0.1:${ports.etcdClient}/health`));

    const apiserver = await launch(apiserverCommand(ports, credentials));
    await waitUntil(target(layout, apiserver, 'kube-apiserver /readyz'), 90_000, () => apiserverReady(layout, state));
    const kubeconfig = kubeconfigYaml(layout.context, state.server, await readFile(caFile(layout), 'utf8'), credentials.token);
    // .cluster/kubeconfig is written last, so that it exists only for a cluster that is ready; until then (and
    // for the components) this copy serves.
    const componentKubeconfig = join(layout.data, 'components.kubeconfig');
    await writeFile(componentKubeconfig, kubeconfig, { mode: 0o600 });

    await launch(controllerManagerCommand(ports, credentials, componentKubeconfig));
    await launch(schedulerCommand(ports, componentKubeconfig));
    const kubectl = (args: string[], input?: string) =>
      run(join(layout.bin, 'kubectl'), [`--kubeconfig=${componentKubeconfig}`, ...args], { input });
    // kwok watches Logs objects from its start, so their CRD comes first.
    await kubectl(['create', '-f', join(layout.crds, LOGS_CRD)]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${LOGS_CRD.replace(/\.yaml$/, '')}`]);
    const kwok = await launch(kwokCommand(componentKubeconfig, stages, ports.kubelet));

    await kubectl(['create', '-f', '-'], toYamlDocuments([...NODE_NAMES.map(kwokNode), defaultStorageClass()]));
    report(`waiting for nodes ${NODE_NAMES.join(', ')} to be Ready`);
    await kubectl(['wait', '--for=condition=Ready', '--timeout=60s', ...NODE_NAMES.map((n) => `node/${n}`)]).catch((error: Error) => {
      throw new Error(`cluster: nodes not Ready (see ${logOf(layout, kwok)}): ${error.message}`);
    });
    report('waiting for the default ServiceAccount');
    await kubectl(['wait', '--for=create', '--timeout=60s', '--namespace=default', 'serviceaccount/default']).catch((error: Error) => {
      throw new Error(`cluster: no default ServiceAccount (see ${layout.logs}/kube-controller-manager.log): ${error.message}`);
    });
    await writeFile(layout.kubeconfig, kubeconfig, { mode: 0o600 });
    return state;
  } catch (error) {
    report('start failed; stopping what was started (logs are kept)');
    await stopComponents(state.components, report);
    await rm(layout.state, { force: true });
    throw error;
  }
}

function target(layout: ClusterLayout, component: ComponentProcess, what: string) {
  return { what, log: logOf(layout, component), alive: () => isRunning(component) };
}

function logOf(layout: ClusterLayout, component: ComponentProcess): string {
  return join(layout.logs, `${component.name}.log`);
}

/** The apiserver writes its self-signed certificate (with its CA) here at startup. */
function caFile(layout: ClusterLayout): string {
  return join(layout.data, 'pki', 'apiserver.crt');
}

/**
 * Anonymous GET /readyz (allowed by the default RBAC roles once they are bootstrapped, which is itself part of
 * readiness). The certificate is re-read on every try: the first read may catch it half-written.
 */
async function apiserverReady(layout: ClusterLayout, state: ClusterState): Promise<boolean> {
  const ca = await readFile(caFile(layout), 'utf8');
  return await answersOk(`${state.server}/readyz`, ca);
}

async function isHealthy(layout: ClusterLayout, state: ClusterState): Promise<boolean> {
  if (!state.components.every(isRunning)) return false;
  return await apiserverReady(layout, state).catch(() => false);
}

/** kwok's stock stages (from its module, see setup) and Gantry's own (stages/ beside this file). */
async function stageFiles(layout: ClusterLayout): Promise<string[]> {
  const names = await readdir(layout.kwokStages).catch(() => {
    throw new Error(`cluster: no kwok stages at ${layout.kwokStages}; run sh scripts/setup.sh`);
  });
  const own = await readdir(OWN_STAGES);
  return [
    ...names
      .filter((name) => name.endsWith('.yaml'))
      .sort()
      .map((name) => join(layout.kwokStages, name)),
    ...own
      .filter((name) => name.endsWith('.yaml'))
      .sort()
      .map((name) => join(OWN_STAGES, name)),
  ];
}

/** Stops the newest first, so nothing loses its API server or etcd while still running. */
async function stopComponents(components: readonly ComponentProcess[], report: (line: string) => void): Promise<void> {
  for (const component of [...components].reverse()) {
    if (!isRunning(component)) continue;
    report(`stopping ${component.name} (pid ${component.pid})`);
    await stopComponent(component, STOP_GRACE_MS);
  }
}

async function removeClusterFiles(layout: ClusterLayout): Promise<void> {
  await rm(layout.data, { recursive: true, force: true });
  await rm(layout.state, { force: true });
  await rm(layout.kubeconfig, { force: true });
}

async function readState(layout: ClusterLayout): Promise<ClusterState | undefined> {
  const text = await readFile(layout.state, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as ClusterState);
}

async function writeState(layout: ClusterLayout, state: ClusterState): Promise<void> {
  await writeFile(layout.state, `${JSON.stringify(state, null, 2)}\n`);
}
