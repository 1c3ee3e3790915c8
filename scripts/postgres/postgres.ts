/**
 * The local PostgreSQL server the fleet server's tests run against: one `postgres` process of Debian's package
 * (linked into `.cluster/bin` by the setup), listening on 127.0.0.1 on a port from the OS, with a fresh data folder
 * and a random password for user `gantry`. Tests create their own databases in it.
 *
 * PostgreSQL refuses to run as root; when this process is root, the server runs as the package's `postgres` user
 * and its data folder lives under the system temp folder (a clone may sit where that user cannot reach).
 */
import { createHash, randomBytes } from 'node:crypto';
import { chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type ProcessUser, run } from '../../src/exec.ts';
import { clusterLayout } from '../cluster/layout.ts';
import { withLock } from '../cluster/lock.ts';
import { freePorts } from '../../src/ports.ts';
import { type ComponentProcess, isRunning, residentBytes, startComponent, stopComponent } from '../../src/processes.ts';
import { waitUntil } from '../cluster/readiness.ts';

/** Contents of `.cluster/postgres/state.json` (mode 0600: it holds the password). */
export interface PostgresState {
  /** `postgres://gantry:<password>@127.0.0.1:<port>/postgres`; see databaseUrl for other databases. */
  url: string;
  port: number;
  dataDir: string;
  startedAt: string;
  process: ComponentProcess;
}

export interface PostgresStatus {
  state: 'running' | 'degraded' | 'stopped';
  port?: number;
  pid?: number;
  rssBytes?: number;
}

interface PostgresLayout {
  /** `.cluster/postgres/`: state.json, lock, logs/postgres.log. */
  root: string;
  state: string;
  lock: string;
  logs: string;
  /** The server's data folder (and unix socket). */
  dataDir: string;
  bin: string;
}

const USER = 'gantry';
const LOCK_TIMEOUT_MS = 2 * 60_000;
const STOP_GRACE_MS = 10_000;

function postgresLayout(): PostgresLayout {
  const cluster = clusterLayout();
  const root = join(cluster.root, 'postgres');
  // Under the temp folder when root (see above), named after the clone so that clones do not share one.
  const clone = createHash('sha256').update(cluster.root).digest('hex').slice(0, 12);
  const dataDir = process.getuid?.() === 0 ? join(tmpdir(), `gantry-postgres-${clone}`) : join(root, 'data');
  return { root, state: join(root, 'state.json'), lock: join(root, 'lock'), logs: join(root, 'logs'), dataDir, bin: cluster.bin };
}

/** The URL of `database` on the server that `state` describes. */
export function databaseUrl(state: PostgresState, database: string): string {
  const url = new URL(state.url);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * Starts the server unless it already runs (then returns at once); resolves when it accepts connections.
 * @throws Error naming the log to read when the server does not come up; what was started is stopped again.
 */
export async function postgresUp(report: (line: string) => void = () => {}): Promise<PostgresState> {
  const layout = postgresLayout();
  await mkdir(layout.root, { recursive: true });
  return await withLock(layout.lock, LOCK_TIMEOUT_MS, async () => {
    const previous = await readState(layout);
    if (previous && isRunning(previous.process) && (await accepts(previous.url))) return previous;
    if (previous) await stopComponent(previous.process, STOP_GRACE_MS);
    return await startPostgres(layout, report);
  });
}

/** Stops the recorded server and deletes its data. */
export async function postgresDown(report: (line: string) => void = () => {}): Promise<void> {
  const layout = postgresLayout();
  await mkdir(layout.root, { recursive: true });
  await withLock(layout.lock, LOCK_TIMEOUT_MS, async () => {
    const state = await readState(layout);
    if (state) {
      report(`stopping postgres (pid ${state.process.pid})`);
      await stopComponent(state.process, STOP_GRACE_MS);
    }
    await rm(layout.dataDir, { recursive: true, force: true });
    await rm(layout.state, { force: true });
  });
}

/**
 * Stops the server (fast shutdown: open sessions are cut, as a crash or failover cuts them) and starts it again on
 * the same data and port, for tests of what survives a database restart.
 * @throws Error when the server is not running or does not come back.
 */
export async function postgresRestart(): Promise<PostgresState> {
  const layout = postgresLayout();
  return await withLock(layout.lock, LOCK_TIMEOUT_MS, async () => {
    const state = await readState(layout);
    if (!state) throw new Error('postgres: not running');
    await stopComponent(state.process, STOP_GRACE_MS, 'SIGINT');
    const user = await serverUser();
    const started = startComponent('postgres', state.process.command, serverArgs(state.dataDir, state.port), layout.logs, user);
    const restarted: PostgresState = { ...state, startedAt: new Date().toISOString(), process: started };
    await writeFile(layout.state, `${JSON.stringify(restarted, null, 2)}\n`, { mode: 0o600 });
    await waitUntil({ what: 'postgres', log: join(layout.logs, 'postgres.log'), alive: () => isRunning(started) }, 30_000, () =>
      accepts(state.url),
    );
    return restarted;
  });
}

export async function postgresStatus(): Promise<PostgresStatus> {
  const state = await readState(postgresLayout());
  if (!state) return { state: 'stopped' };
  const running = isRunning(state.process) && (await accepts(state.url));
  return { state: running ? 'running' : 'degraded', port: state.port, pid: state.process.pid, rssBytes: residentBytes(state.process.pid) };
}

async function startPostgres(layout: PostgresLayout, report: (line: string) => void): Promise<PostgresState> {
  report('initialising a PostgreSQL data folder');
  const user = await serverUser();
  await rm(layout.dataDir, { recursive: true, force: true });
  await mkdir(layout.dataDir, { recursive: true, mode: 0o700 });
  await mkdir(layout.logs, { recursive: true });
  if (user) await chown(layout.dataDir, user.uid, user.gid);
  const password = randomBytes(24).toString('hex');
  const passwordFile = join(layout.dataDir, 'password');
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  if (user) await chown(passwordFile, user.uid, user.gid);
  const pgData = join(layout.dataDir, 'pgdata');
  const initdb = ['-D', pgData, '-U', USER, `--pwfile=${passwordFile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C', '--no-sync'];
  await run(join(layout.bin, 'initdb'), initdb, { user });
  await rm(passwordFile);

  const { port } = await freePorts(['port']);
  const command = join(layout.bin, 'postgres');
  const args = serverArgs(layout.dataDir, port);
  report(`starting postgres on 127.0.0.1:${port}`);
  const started = startComponent('postgres', command, args, layout.logs, user);
  const state: PostgresState = {
    url: `postgres://${USER}:${password}@127.0.0.1:${port}/postgres`,
    port,
    dataDir: layout.dataDir,
    startedAt: new Date().toISOString(),
    process: started,
  };
  await writeFile(layout.state, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  const target = { what: 'postgres', log: join(layout.logs, 'postgres.log'), alive: () => isRunning(started) };
  try {
    await waitUntil(target, 30_000, () => accepts(state.url));
  } catch (error) {
    await stopComponent(started, STOP_GRACE_MS);
    await rm(layout.state, { force: true });
    throw error;
  }
  return state;
}

function serverArgs(dataDir: string, port: number): string[] {
  return [
    '-D',
    join(dataDir, 'pgdata'),
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${dataDir}`,
    '-c',
    'max_connections=300',
    // A throwaway test server: durability traded for speed, as the cluster's etcd does.
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
  ];
}

/** Debian's `postgres` user when this process is root; nobody otherwise (the server runs as this user). */
async function serverUser(): Promise<ProcessUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = await readFile('/etc/passwd', 'utf8');
  const entry = passwd.split('\n').find((line) => line.startsWith('postgres:'));
  if (!entry) throw new Error('postgres: running as root needs the postgres user of Debian package postgresql; run sh scripts/setup.sh');
  const [, , uid, gid] = entry.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

async function accepts(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function readState(layout: PostgresLayout): Promise<PostgresState | undefined> {
  const text = await readFile(layout.state, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as PostgresState);
}
