/**
 * The demo's fleet on this machine: one `gantry server` (embedded SQLite) and one `gantry agent` per workload
 * cluster, each a detached process like the clusters' components, recorded in `.cluster/fleet/state.json` so a
 * second `up` reuses what runs and `down` stops exactly what it started. The admin token the server prints at its
 * first start is kept in `.cluster/fleet/admin-token` (mode 0600) for the demo's own calls and the user's; the
 * first admin user's password is made here and handed to the server in `.cluster/fleet/admin-password` (0600), so
 * every run of the demo can print how to log in to the UI.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { clusterLayout } from '../cluster/layout.ts';
import { freePorts } from '../../src/ports.ts';
import { type ComponentProcess, isRunning, startComponent, stopComponent } from '../../src/processes.ts';
import { waitUntil } from '../cluster/readiness.ts';
import { run } from '../../src/exec.ts';
import { Cluster } from '../../src/kube/cluster.ts';
import { KubeClient, loadKubeConfig } from '../../src/kube/client.ts';
import { ensureCrdsServed } from '../../src/deploy/crds.ts';
import { gantryCrds } from '../generate-install.ts';
import { REPO_ROOT } from '../examples.ts';

export interface FleetLayout {
  root: string;
  state: string;
  logs: string;
  adminToken: string;
  adminPassword: string;
  serverData: string;
  agentData: (cluster: string) => string;
  agentToken: (cluster: string) => string;
}

export interface FleetState {
  /** http://127.0.0.1:<port> */
  server: string;
  processes: Record<string, ComponentProcess>;
}

const NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');
const GANTRY = path.join(REPO_ROOT, 'bin/gantry.js');

export function fleetLayout(): FleetLayout {
  const root = path.join(clusterLayout().root, 'fleet');
  return {
    root,
    state: path.join(root, 'state.json'),
    logs: path.join(root, 'logs'),
    adminToken: path.join(root, 'admin-token'),
    adminPassword: path.join(root, 'admin-password'),
    serverData: path.join(root, 'server'),
    agentData: (cluster) => path.join(root, 'agents', cluster),
    agentToken: (cluster) => path.join(root, 'agents', cluster, 'token'),
  };
}

export async function readFleetState(layout = fleetLayout()): Promise<FleetState | undefined> {
  const text = await readFile(layout.state, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as FleetState);
}

/**
 * Starts the server unless it runs; resolves with its URL and the admin token once it answers.
 * @throws Error naming the log when it does not come up.
 */
export async function serverUp(report: (line: string) => void): Promise<{ state: FleetState; adminToken: string }> {
  const layout = fleetLayout();
  await mkdir(layout.logs, { recursive: true });
  const previous = await readFleetState(layout);
  const running = previous?.processes['server'];
  if (previous && running && isRunning(running)) return { state: previous, adminToken: await readAdminToken(layout) };

  const { port } = await freePorts(['port']);
  const server = `http://127.0.0.1:${port}`;
  report(`starting gantry server on ${server}`);
  await ensureAdminPassword(layout);
  const args = [
    GANTRY,
    'server',
    '--listen',
    `127.0.0.1:${port}`,
    '--data-dir',
    layout.serverData,
    '--git-poll-interval',
    '10s',
    '--admin-password-file',
    layout.adminPassword,
  ];
  const process = startComponent('server', NODE, args, layout.logs);
  const state: FleetState = { server, processes: { ...previous?.processes, server: process } };
  await writeFleetState(layout, state);
  const log = path.join(layout.logs, 'server.log');
  await waitUntil(
    { what: 'gantry server /readyz', log, alive: () => isRunning(process) },
    60_000,
    async () => (await fetch(`${server}/readyz`)).ok,
  );
  const printed = /^\s+(gantry-api-\S+)$/m.exec(await readFile(log, 'utf8'))?.[1];
  if (printed) await writeFile(layout.adminToken, `${printed}\n`, { mode: 0o600 });
  return { state, adminToken: await readAdminToken(layout) };
}

/** Starts the agent of `cluster` unless it runs, with the kubeconfig of that local cluster and its token file. */
export async function agentUp(cluster: string, server: string, report: (line: string) => void): Promise<void> {
  const layout = fleetLayout();
  const state = (await readFleetState(layout)) ?? { server, processes: {} };
  const name = `agent-${cluster}`;
  const existing = state.processes[name];
  if (existing && isRunning(existing)) return;
  report(`starting the agent of cluster ${cluster}`);
  const args = [
    GANTRY,
    'agent',
    'run',
    '--server',
    server,
    '--token-file',
    layout.agentToken(cluster),
    '--kubeconfig',
    clusterLayout(cluster).kubeconfig,
    '--data-dir',
    layout.agentData(cluster),
    '--poll-interval',
    '30s',
  ];
  state.processes[name] = startComponent(name, NODE, args, layout.logs);
  await writeFleetState(layout, state);
}

/**
 * Starts `gantry controller run` on the workload cluster unless it runs (a host process, as the agents are), after
 * applying the KluctlDeployment and Alert CRDs it needs there, so the UI has KluctlDeployments to show.
 */
export async function controllerUp(cluster: string, report: (line: string) => void): Promise<void> {
  const layout = fleetLayout();
  const state = await readFleetState(layout);
  if (!state) throw new Error('start the server first (serverUp)');
  const name = `controller-${cluster}`;
  const existing = state.processes[name];
  if (existing && isRunning(existing)) return;
  const kubeconfig = clusterLayout(cluster).kubeconfig;
  await run(path.join(clusterLayout().bin, 'kubectl'), ['apply', '--server-side', '-k', path.join(REPO_ROOT, 'install/crds')], {
    env: { KUBECONFIG: kubeconfig },
  });
  await crdsServed(
    kubeconfig,
    gantryCrds().map((crd) => (crd['metadata'] as { name: string }).name),
  );
  report(`starting the KluctlDeployment controller of cluster ${cluster}`);
  const { health, metrics } = await freePorts(['health', 'metrics']);
  const args = [
    GANTRY,
    'controller',
    'run',
    '--kubeconfig',
    kubeconfig,
    '--health-probe-bind-address',
    `127.0.0.1:${health}`,
    '--metrics-bind-address',
    `127.0.0.1:${metrics}`,
    '--cache-dir',
    path.join(layout.root, 'controllers', cluster),
  ];
  state.processes[name] = startComponent(name, NODE, args, layout.logs);
  await writeFleetState(layout, state);
}

/**
 * Waits until the CRDs `names` are served on the cluster of `kubeconfig`: the demo creates a KluctlDeployment right
 * after, which failed with "no matches for kind" while the API server had not yet served the new kind.
 */
async function crdsServed(kubeconfig: string, names: readonly string[]): Promise<void> {
  const cluster = new Cluster(new KubeClient(loadKubeConfig({ kubeconfig })));
  try {
    await ensureCrdsServed(cluster, names, { timeoutMs: 60_000 });
  } finally {
    await cluster.close();
  }
}

/** Stops every recorded process and forgets the fleet's data (database, tokens, agents' caches). */
export async function fleetDown(report: (line: string) => void): Promise<void> {
  const layout = fleetLayout();
  const state = await readFleetState(layout);
  for (const [name, process] of Object.entries(state?.processes ?? {})) {
    if (!isRunning(process)) continue;
    report(`stopping ${name} (pid ${process.pid})`);
    await stopComponent(process, 10_000);
  }
  await rm(layout.root, { recursive: true, force: true });
}

/** The first admin user's password, made once (a server started on an empty database takes it). */
async function ensureAdminPassword(layout: FleetLayout): Promise<void> {
  if (await readFile(layout.adminPassword, 'utf8').catch(() => undefined)) return;
  await mkdir(path.dirname(layout.adminPassword), { recursive: true });
  await writeFile(layout.adminPassword, `${randomBytes(12).toString('base64url')}\n`, { mode: 0o600 });
}

/** The admin user's password for the demo to print. */
export async function readAdminPassword(layout = fleetLayout()): Promise<string> {
  return (await readFile(layout.adminPassword, 'utf8')).trim();
}

async function readAdminToken(layout: FleetLayout): Promise<string> {
  const token = (await readFile(layout.adminToken, 'utf8').catch(() => '')).trim();
  if (!token) throw new Error(`no admin token in ${layout.adminToken}: run npm run fleet -- down, then the demo again`);
  return token;
}

async function writeFleetState(layout: FleetLayout, state: FleetState): Promise<void> {
  await mkdir(layout.root, { recursive: true });
  await writeFile(layout.state, `${JSON.stringify(state, null, 2)}\n`);
}
