/**
 * `gantry up --runtime local`: the server (embedded SQLite), the operator and the management cluster's agent as
 * detached local processes of this same Gantry, for management clusters whose nodes run no containers (the
 * project's local clusters, whose kwok nodes only pretend to). They are recorded in `<stateDir>/state.json` (pid and
 * command line, see processes.ts), so a re-run reuses what runs and `gantry down` stops exactly what `up` started.
 * The admin token is made by `up` into `<stateDir>/admin-token` (0600) and given to the server as its first token.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { freePorts } from '../ports.ts';
import { type ComponentProcess, isRunning, startComponent, stopComponent } from '../processes.ts';
import { sleep } from '../sleep.ts';
import { newApiToken } from '../crypto/tokens.ts';

export interface LocalRuntime {
  /** http://127.0.0.1:<port> */
  server: string;
  adminToken: string;
}

interface LocalState {
  server: string;
  processes: Partial<Record<Component, ComponentProcess>>;
}

type Component = 'server' | 'operator' | 'agent';

/** Where the local runtime of one management cluster keeps its state: `$XDG_STATE_HOME/gantry/up/<context>`. */
export function defaultStateDir(context: string): string {
  const base = process.env['XDG_STATE_HOME'] ?? path.join(process.env['HOME'] ?? '/tmp', '.local', 'state');
  return path.join(base, 'gantry', 'up', context);
}

/**
 * Starts the server unless it runs, and resolves once it answers.
 * @throws Error naming the server's log when it does not answer within 60 s.
 */
export async function serverUp(stateDir: string): Promise<LocalRuntime> {
  await mkdir(path.join(stateDir, 'logs'), { recursive: true, mode: 0o700 });
  const adminToken = await ensureAdminTokenFile(stateDir);
  const state = await readState(stateDir);
  const running = state?.processes.server;
  if (state && running && isRunning(running)) return { server: state.server, adminToken };
  const { port } = await freePorts(['port']);
  const server = `http://127.0.0.1:${port}`;
  const args = ['server', '--listen', `127.0.0.1:${port}`, '--data-dir', path.join(stateDir, 'server'), '--admin-token-file'];
  const process_ = gantryProcess(stateDir, 'server', [...args, tokenFile(stateDir), '--git-poll-interval', '10s']);
  await writeState(stateDir, { server, processes: { ...state?.processes, server: process_ } });
  await waitUntilAnswers(`${server}/readyz`, process_, logOf(stateDir, 'server'));
  return { server, adminToken };
}

/** Starts the operator against `server` unless it runs, on `context` of `kubeconfig` (default: $KUBECONFIG). */
export async function operatorUp(stateDir: string, server: string, cluster: { kubeconfig?: string; context: string }): Promise<void> {
  await startUnlessRunning(stateDir, 'operator', [
    'operator',
    'run',
    '--server',
    server,
    '--token-file',
    tokenFile(stateDir),
    // A fleet on one machine is small: status (Ready, health) can be read back more often than Plural's 30 s.
    '--status-interval',
    '10s',
    // Free ports: several management clusters' runtimes (and a controller) may run on one machine.
    '--metrics-bind-address',
    '127.0.0.1:0',
    '--health-probe-bind-address',
    '127.0.0.1:0',
    ...kubeFlags(cluster),
  ]);
}

/**
 * Starts the management cluster's agent unless it runs, with the deploy token of the Secret `tokenSecret`
 * (namespace/name), where it also stores the token it rotates to.
 */
export async function agentUp(
  stateDir: string,
  server: string,
  tokenSecret: string,
  cluster: { kubeconfig?: string; context: string },
): Promise<void> {
  await startUnlessRunning(stateDir, 'agent', [
    'agent',
    'run',
    '--server',
    server,
    '--token-secret',
    tokenSecret,
    '--data-dir',
    path.join(stateDir, 'agent'),
    ...kubeFlags(cluster),
  ]);
}

/** Stops what `up` started; returns the names of the processes stopped. */
export async function localDown(stateDir: string): Promise<string[]> {
  const state = await readState(stateDir);
  if (!state) return [];
  const stopped: string[] = [];
  // The agent and operator first: they would log the server's absence.
  for (const name of ['agent', 'operator', 'server'] as const) {
    const component = state.processes[name];
    if (!component || !isRunning(component)) continue;
    await stopComponent(component, 10_000);
    stopped.push(name);
  }
  await writeState(stateDir, { server: state.server, processes: {} });
  return stopped;
}

async function startUnlessRunning(stateDir: string, name: Component, args: string[]): Promise<void> {
  const state = await readState(stateDir);
  if (!state) throw new Error(`${stateDir}: no server was started here`);
  const running = state.processes[name];
  if (running && isRunning(running)) return;
  const started = gantryProcess(stateDir, name, args);
  await writeState(stateDir, { ...state, processes: { ...state.processes, [name]: started } });
}

/** This Gantry (the same Node and entry point) as a detached process logging to `<stateDir>/logs/<name>.log`. */
function gantryProcess(stateDir: string, name: Component, args: string[]): ComponentProcess {
  const entry = process.argv[1];
  if (!entry) throw new Error('gantry up: cannot tell which Gantry to start (no entry script)');
  return startComponent(name, process.execPath, [entry, ...args], path.join(stateDir, 'logs'));
}

function kubeFlags(cluster: { kubeconfig?: string; context: string }): string[] {
  return [...(cluster.kubeconfig ? ['--kubeconfig', cluster.kubeconfig] : []), '--context', cluster.context];
}

async function ensureAdminTokenFile(stateDir: string): Promise<string> {
  const existing = await readFile(tokenFile(stateDir), 'utf8').catch(() => undefined);
  if (existing) return existing.trim();
  const token = newApiToken();
  await writeFile(tokenFile(stateDir), `${token}\n`, { mode: 0o600 });
  return token;
}

const tokenFile = (stateDir: string) => path.join(stateDir, 'admin-token');
const logOf = (stateDir: string, name: Component) => path.join(stateDir, 'logs', `${name}.log`);

async function readState(stateDir: string): Promise<LocalState | undefined> {
  const text = await readFile(path.join(stateDir, 'state.json'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as LocalState);
}

async function writeState(stateDir: string, state: LocalState): Promise<void> {
  await writeFile(path.join(stateDir, 'state.json'), `${JSON.stringify(state, null, 2)}\n`);
}

async function waitUntilAnswers(url: string, component: ComponentProcess, log: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (!isRunning(component)) throw new Error(`the server exited; see ${log}`);
    if (
      await fetch(url).then(
        (response) => response.ok,
        () => false,
      )
    )
      return;
    await sleep(200);
  }
  throw new Error(`the server did not answer ${url} within 60 s; see ${log}`);
}
