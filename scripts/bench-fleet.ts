/**
 * The fleet half of `npm run bench` (`--only fleet`): the real `gantry server` process and real agents. Four parts
 * (`--fleet-part load|replicas|apply|agents` runs one; agents: scripts/bench/agent-upgrade.ts):
 *
 * load: one server on SQLite (a data folder) and one on PostgreSQL (a fresh database on the project's PostgreSQL,
 * scripts/postgres), each with `--agents` simulated agents (default 10,000; scripts/bench/agent-load.ts, in child
 * processes of at most 5,000 agents each, so the server's CPU and RSS from /proc are its own). Seeded through the
 * store modules before the server starts: one cluster per agent with its deploy token, tagged `bench: load`, and
 * three services each from one local file:// repository — two plain ones and the copy of a global service that
 * selects every cluster. Every agent holds its push channel and polls /v1/agent/services every `--interval`
 * (default 30 s) plus up to `--jitter` (5 s), i.e. about agents / 32.5 s polls per second (Plural's agent: 2 min
 * plus up to 15 s). Measured once all agents are connected, over a steady window of `--window` seconds (default
 * 90): polls per second held against the rate offered, p50/p99 poll latency as the agents see it, the server's
 * CPU (cores) and peak RSS (the server at its default git poll of 1 min: each fetch's pass over every service of
 * the repository falls inside the window); then the time from a PATCH of the global service's template (the server's real path:
 * one revision per copy, each kicking its cluster) until every agent's socket got its kick, with the server's RSS
 * peak meanwhile (every agent polls at once when kicked). Anchors: Plural's
 * "1100 clusters with just over 3 CPU" (scaled per 1,000 clusters) and the goal of 1 GiB.
 *
 * replicas: three `gantry server` processes on one PostgreSQL database, seeded as load is with `--replica-agents`
 * clusters (default 30,000), whose simulated agents are spread over the three (each generator process of 5,000 on one
 * replica), polling as in load. Measured over the same window: polls held, p50/p99 as the agents see them, errors,
 * each replica's CPU and RSS peak and PostgreSQL's CPU; then a PATCH of the global service's template on the first
 * replica until every agent's socket, on whichever replica, got its kick (PostgreSQL's NOTIFY carries the kicks
 * between replicas: a lost one would leave the count short and the part failing after 10 minutes).
 *
 * apply: the local clusters `dev` and `prod` (and `stage` for the rollout; scripts/cluster), a server on SQLite and one
 * `gantry agent run` per cluster; a raw-YAML service of one ConfigMap on each from one file:// repository.
 * Commit→applied on both clusters (until both ConfigMaps have the committed value), 10 samples, p50 and p95 (nearest
 * rank: of 10 samples, the slowest): by push (GitHub push event to the server's /hooks/git, the server kicks the agents
 * over their channels) against the controller's commit→applied by webhook measured in the same run
 * (bench-controller.ts, on the local cluster), and by polling (no webhook, no channel: server git poll 5 s, agent poll
 * 5 s plus up to 1 s) against those two intervals. Through a pipeline (by push too): a ConfigMap service on each
 * cluster, prod promoted from dev behind a HEALTH gate of zero soak and a JOB gate whose Job dev's agent runs; commit
 * on dev → applied on prod, 10 samples, p50 and p95 against the push figures of the same run (what the pipeline adds;
 * Plural's JOB-gated promotions wait for a sweep every 2–4 minutes). Drift: a ConfigMap deleted by another client,
 * until reported and until repaired. Previews of the service on both clusters at a new commit of a branch main does not
 * follow, until both are DONE (against push commit→applied), and asked again (reused). The same previews over 10
 * clusters, `preview-1`..`preview-10` registered for it, each with its own `gantry agent run` (five on dev's API
 * server, five on prod's; each service in a namespace of its own), asked on all 10 at once, until all are DONE, against
 * the 2-cluster previews of the same run; then those agents are stopped and the clusters, services and namespaces
 * removed. A progressive rollout: a global service of one ConfigMap on dev, `stage` (a third local cluster with its
 * agent) and prod, one cluster per wave, each wave soaking 3 s; commit + webhook → rollout DONE and the value on all
 * three, 10 samples, against the sum of the soaks (value − baseline is Gantry's overhead). The dev agent's RSS after
 * 100 syncs of its service by push, then idle, and its peak while applying the microservices demo (3-templating-and-multi-env, target test; as `npm run demo`)
 * until healthy, against Plural's agent's memory request of 600 MiB.
 *
 * Everything started (servers, agents, generators, the PostgreSQL database, temporary folders) is stopped and
 * removed again, on failure too; the clusters are left running as the other halves leave theirs.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { NewServiceBody } from '../src/api/services.ts';
import { AGENT_NODE_FLAGS } from '../src/install/agent.ts';
import { type ApiPreview, FleetClient } from '../src/client/fleet-client.ts';
import { run } from '../src/exec.ts';
import { KubeApiError, KubeClient, loadKubeConfig } from '../src/kube/client.ts';
import { sleep } from '../src/sleep.ts';
import { ensureAdminToken } from '../src/store/api-tokens.ts';
import { createCluster } from '../src/store/clusters.ts';
import { openStore } from '../src/store/database.ts';
import { createGlobalService } from '../src/store/global-services.ts';
import { createRepository } from '../src/store/repositories.ts';
import { SecretBox } from '../src/crypto/secret-box.ts';
import { createService, type ServiceSpec } from '../src/store/services.ts';
import { TarballStore } from '../src/server/tarballs.ts';
import { waitFor } from '../src/controller/test-support.ts';
import { git } from '../test/support/git-repo.ts';
import type { LoadAnswer, LoadCommand } from './bench/agent-load.ts';
import { benchAgentUpgrade } from './bench/agent-upgrade.ts';
import { cpuSeconds, memoryOf, percentile, RssSampler, sampleFor } from './bench/measure.ts';
import { announceGithubPush, benchControllerWebhook, type BenchRow, type ControllerBenchOptions } from './bench-controller.ts';
import { clusterUp } from './cluster/cluster.ts';
import { clusterLayout } from './cluster/layout.ts';
import { freePorts } from '../src/ports.ts';
import { type ComponentProcess, isRunning, startComponent, stopComponent } from '../src/processes.ts';
import { waitUntil } from './cluster/readiness.ts';
import { databaseUrl, postgresUp } from './postgres/postgres.ts';
import { findExamples, REPO_ROOT } from './examples.ts';

export interface FleetBenchOptions {
  /** Simulated agents per server. */
  agents: number;
  intervalS: number;
  jitterS: number;
  windowS: number;
  part: 'load' | 'replicas' | 'apply' | 'agents' | undefined;
  /** Simulated agents of the replicas part, spread over its three servers. */
  replicaAgents: number;
  /** For the controller's webhook baseline (the local cluster). */
  controller: ControllerBenchOptions;
  report: (line: string) => void;
}

export interface FleetBenchResult {
  title: string;
  rows: BenchRow[];
  notes: string[];
}

const NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');
const GANTRY = path.join(REPO_ROOT, 'bin/gantry.js');
/** Simulated agents per generator process: 5,000 sockets and a small HTTP pool stay well under 20,000 files. */
const AGENTS_PER_GENERATOR = 5_000;
const HTTP_CONNECTIONS_PER_GENERATOR = 32;
/** Plural's published figure: "Managing 1100 Kubernetes clusters with just over 3cpu". */
const PLURAL_CPU_PER_1000 = 3 / 1.1;
const PLURAL_AGENT_REQUEST_MIB = 600;
const GOAL_RSS_MIB = 1024;
const COMMIT_SAMPLES = 10;
/** Syncs of the bench service before the agent's RSS "after syncs" is taken. */
const SYNC_ROUNDS = 100;
/** The agent's default --resync-interval, in seconds. */
const RESYNC_INTERVAL_S = 600;
const WEBHOOK_SECRET = 'gantry-bench-fleet';
const WORKLOAD_NS = 'gantry-bench-fleet';
const DEMO_PROJECT = 'microservices-demo/3-templating-and-multi-env';
const APPLY_CLUSTERS = ['dev', 'prod'] as const;
/** Registered for the previews over many clusters, each with its own agent on dev's or prod's API server. */
const PREVIEW_CLUSTERS = Array.from({ length: 10 }, (_, index) => `preview-${index + 1}`);
/** The rollout's waves in order, one cluster each: stage is a third local cluster, started for it. */
const ROLLOUT_CLUSTERS = ['dev', 'stage', 'prod'] as const;
const ROLLOUT_SOAK_S = 3;
/** Where a ConfigMap of the bench is applied: its name, namespace and clusters. */
interface Placement {
  name: string;
  namespace: string;
  clusters: readonly string[];
}
const BENCH_CONFIGMAP: Placement = { name: 'bench', namespace: WORKLOAD_NS, clusters: APPLY_CLUSTERS };
const STAGED_ON_PROD: Placement = { name: 'staged', namespace: WORKLOAD_NS, clusters: ['prod'] };
const ROLLED_OUT: Placement = { name: 'rollout', namespace: `${WORKLOAD_NS}-rollout`, clusters: ROLLOUT_CLUSTERS };

export async function benchFleet(options: FleetBenchOptions): Promise<FleetBenchResult> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-bench-fleet-'));
  const report = (line: string) => options.report(`fleet bench: ${line}`);
  const rows: BenchRow[] = [];
  const notes: string[] = [];
  try {
    if (options.part === undefined || options.part === 'load') {
      for (const kind of ['sqlite', 'postgres'] as const) {
        const figures = await benchLoad(kind, options, path.join(scratch, kind), report);
        rows.push(...figures.rows);
        notes.push(...figures.notes);
      }
    }
    if (options.part === undefined || options.part === 'replicas') {
      const figures = await benchReplicas(options, path.join(scratch, 'replicas'), report);
      rows.push(...figures.rows);
      notes.push(...figures.notes);
    }
    if (options.part === undefined || options.part === 'apply') {
      const figures = await benchApply(options, path.join(scratch, 'apply'), report);
      rows.push(...figures.rows);
      notes.push(...figures.notes);
    }
    if (options.part === undefined || options.part === 'agents') {
      // The agents inherit this process's environment, as benchApply's do.
      process.env['PATH'] = options.controller.env['PATH'];
      const kubeconfigs = { dev: '', prod: '' };
      for (const name of APPLY_CLUSTERS)
        kubeconfigs[name] = (
          await clusterUp({ layout: clusterLayout(name), report: (line) => report(`cluster ${name}: ${line}`) })
        ).kubeconfig;
      const figures = await benchAgentUpgrade(kubeconfigs, path.join(scratch, 'agents'), report);
      rows.push(...figures.rows);
      notes.push(...figures.notes);
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return { title: 'gantry server and agents (measured on this machine, alone or not)', rows, notes };
}

// ---------------------------------------------------------------- load

interface Figures {
  rows: BenchRow[];
  notes: string[];
}

async function benchLoad(
  kind: 'sqlite' | 'postgres',
  options: FleetBenchOptions,
  dir: string,
  report: (line: string) => void,
): Promise<Figures> {
  const { agents, intervalS, jitterS, windowS } = options;
  await mkdir(path.join(dir, 'logs'), { recursive: true });
  const database = await benchDatabase(kind, dir);
  const generators: Generator[] = [];
  let server: RunningServer | undefined;
  try {
    const repository = await loadRepository(path.join(dir, 'git'));
    const key = SecretBox.generateKey();
    const box = SecretBox.fromBase64(key, 'bench');
    const keyFile = path.join(dir, 'encryption.key');
    await writeFile(keyFile, key, { mode: 0o600 });
    report(`${kind}: seeding ${agents} clusters with a deploy token and 3 services each`);
    const seeded = await timedAsync(() => seed(database.url, box, repository, path.join(dir, 'cache'), agents));
    report(`${kind}: seeded in ${seeded.seconds.toFixed(1)} s`);
    // The default git poll (1 min): each fetch makes the server check every service of the repository.
    server = await startServer(kind, database, keyFile, dir, []);
    report(`${kind}: server pid ${server.process.pid} at ${server.url}; idle RSS ${mib(memoryOf(server.process.pid).rss)} MiB`);

    const opened = await startGenerators(generators, seeded.value.tokens, () => server!.url, options);
    report(`${kind}: ${agents} push channels open after ${opened.toFixed(1)} s; polling`);

    // The polls start spread over the first interval, so the load is steady at once; a few seconds let the
    // connection pools and the JIT settle.
    await sleep(5_000);
    const from = Date.now();
    const cpuBefore = cpuSeconds(server.process.pid);
    const databaseCpuBefore = database.pid ? cpuSeconds(database.pid) : 0;
    const rss = new RssSampler(server.process.pid, 1_000);
    for (let elapsed = 0; elapsed < windowS; elapsed += 15) {
      await sleep(Math.min(15, windowS - elapsed) * 1000);
      report(`${kind}: window ${Math.min(windowS, elapsed + 15)}/${windowS} s, server RSS ${mib(rss.current.rss)} MiB`);
    }
    const to = Date.now();
    const cores = (cpuSeconds(server.process.pid) - cpuBefore) / ((to - from) / 1000);
    const databaseCores = database.pid ? (cpuSeconds(database.pid) - databaseCpuBefore) / ((to - from) / 1000) : 0;
    const peak = rss.stop();
    const heap = `RSS ${mib(memoryOf(server.process.pid).rss)} MiB, ${await heapText(server.url)}`;
    const { latencies, errors, firstError: windowError } = await pollsIn(generators, from, to);
    const pollRate = latencies.length / ((to - from) / 1000);
    const offered = agents / (intervalS + jitterS / 2);
    report(
      `${kind}: ${pollRate.toFixed(0)} polls/s (offered ${offered.toFixed(0)}), p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, ${errors} errors, ${cores.toFixed(2)} cores, RSS peak ${mib(peak.rss)} MiB`,
    );
    if (errors > 0) report(`${kind}: first poll error: ${JSON.stringify(windowError)}`);

    // Every agent polls at once when kicked, and the PATCH's answer lists every copy: memory peaks here.
    const kickRss = new RssSampler(server.process.pid, 200);
    const kick = await timeKick(server, seeded.value.adminToken, repository, generators, agents, report);
    const kickPeak = kickRss.stop();
    const afterKick = `RSS ${mib(memoryOf(server.process.pid).rss)} MiB, ${await heapText(server.url)}`;
    report(`${kind}: kicks reached the first agent ${kick.first.toFixed(2)} s and all ${agents} ${kick.last.toFixed(2)} s after the PATCH`);

    const label = `${agents} agents, ${kind}`;
    const perThousand = cores / (agents / 1000);
    return {
      rows: [
        { measurement: `polls held, ${label}`, value: pollRate, baseline: offered, unit: '/s', baselineIs: 'polls offered' },
        { measurement: `poll latency p50, ${label}`, value: percentile(latencies, 50), unit: 'ms' },
        { measurement: `poll latency p99, ${label}`, value: percentile(latencies, 99), unit: 'ms' },
        {
          measurement: `kick to all, ${label}`,
          value: kick.last,
          baseline: (intervalS + jitterS / 2) / 2,
          unit: 's',
          baselineIs: 'mean wait for the next poll',
        },
        {
          measurement: `server CPU per 1,000, ${kind}`,
          value: perThousand,
          baseline: PLURAL_CPU_PER_1000,
          unit: 'cores',
          baselineIs: "Plural's 3 CPU / 1100 clusters",
        },
        { measurement: `server CPU, ${label}`, value: cores, baseline: 1, unit: 'cores', baselineIs: 'goal: under one core' },
        {
          measurement: `server RSS peak, ${label}`,
          value: peak.rss / 1024 / 1024,
          baseline: GOAL_RSS_MIB,
          unit: 'MiB',
          baselineIs: 'goal: 1 GiB',
        },
        {
          measurement: `server RSS peak, kick, ${kind}`,
          value: kickPeak.rss / 1024 / 1024,
          baseline: GOAL_RSS_MIB,
          unit: 'MiB',
          baselineIs: 'goal: 1 GiB',
        },
      ],
      notes: [
        `${kind}: ${agents} agents polling every ${intervalS} s + up to ${jitterS} s (${offered.toFixed(0)} polls/s offered; Plural's 2 min + 15 s would be ${(agents / 127.5).toFixed(0)}/s), window ${windowS} s after all connected; ${latencies.length} polls, ${errors} errors; seeding took ${seeded.seconds.toFixed(0)} s`,
        `${kind}: kicks: the first ${kick.first.toFixed(2)} s, the last ${kick.last.toFixed(2)} s after the PATCH; the server writes the copies' revisions 200 to a transaction and kicks each batch once it is committed`,
        `${kind}: server memory at the end of the window (no forced GC): ${heap}; after the kick: ${afterKick}`,
        ...(database.pid
          ? [`${kind}: PostgreSQL's own CPU in the window: ${databaseCores.toFixed(2)} cores (not in the server's figure)`]
          : []),
      ],
    };
  } finally {
    await Promise.all(generators.map((generator) => generator.stop()));
    if (server) await stopComponent(server.process, 15_000);
    await database.drop();
  }
}

/** A database for one server: a SQLite file in `dir`, or a new database on the project's PostgreSQL. */
interface BenchDatabase {
  kind: 'sqlite' | 'postgres';
  url: string;
  /** The PostgreSQL server's pid (its CPU is noted apart), when on PostgreSQL. */
  pid?: number;
  drop(): Promise<void>;
}

async function benchDatabase(kind: 'sqlite' | 'postgres', dir: string): Promise<BenchDatabase> {
  if (kind === 'sqlite') return { kind, url: path.join(dir, 'data', 'gantry.db'), drop: async () => undefined };
  const state = await postgresUp();
  const name = `bench_${Date.now().toString(36)}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: state.url });
    await client.connect();
    await client.query(statement).finally(() => client.end());
  };
  await admin(`CREATE DATABASE ${name}`);
  return {
    kind,
    url: databaseUrl(state, name),
    pid: state.process.pid,
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** A bare repository with three folders of one ConfigMap each: `a`, `b` (plain services) and `global`. */
async function loadRepository(dir: string): Promise<BenchSource> {
  const files: Record<string, string> = {};
  for (const folder of ['a', 'b', 'global']) files[`${folder}/configmap.yaml`] = configMap(`load-${folder}`, 'rev-0');
  return await BenchSource.create(dir, files);
}

interface Seeded {
  adminToken: string;
  tokens: string[];
}

/**
 * Fills the database through the store modules: the admin token, the repository, the global service, and per
 * cluster its deploy token and three services at the repository's commit (tarballs packed into the server's
 * cache, so the revisions are as the server would make them).
 */
async function seed(url: string, box: SecretBox, source: BenchSource, cacheDir: string, count: number): Promise<Seeded> {
  const store = await openStore(url);
  try {
    const { db } = store;
    const adminToken = await ensureAdminToken(db);
    if (!adminToken) throw new Error('the bench database already has an admin token');
    const repository = await createRepository(db, box, { url: source.url });
    const tarballs = new TarballStore(path.join(cacheDir, 'fleet', 'tarballs'));
    const digests = new Map<string, string>();
    for (const folder of ['a', 'b', 'global']) digests.set(folder, await tarballs.pack(path.join(source.work, folder)));
    const spec = (folder: string): ServiceSpec => ({
      namespace: WORKLOAD_NS,
      repositoryId: repository.id,
      git: { ref: 'main', folder },
      renderer: { kind: 'raw' },
    });
    const global = await createGlobalService(db, box, {
      name: 'bench-global',
      tags: { bench: 'load' },
      template: { name: 'global', ...spec('global'), configuration: { revision: '0' } },
    });
    const tokens: string[] = new Array(count);
    const seedOne = async (index: number) => {
      const { cluster, deployToken } = await createCluster(db, { name: `load-${index}`, tags: { bench: 'load' } });
      tokens[index] = deployToken;
      for (const folder of ['a', 'b', 'global']) {
        await createService(
          db,
          box,
          {
            clusterId: cluster.id,
            name: folder,
            spec: spec(folder),
            ...(folder === 'global' ? { ownerId: global.id, configuration: { revision: '0' } } : {}),
          },
          { commit: source.head, digest: digests.get(folder)! },
          { by: 'bench' },
        );
      }
    };
    // A few at a time: PostgreSQL's pool has 10 connections; SQLite serialises them anyway.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < count) await seedOne(next++);
      }),
    );
    return { adminToken, tokens };
  } finally {
    await store.close();
  }
}

/**
 * Arms every simulated agent, changes the global service's configuration through the API and waits until every
 * agent's socket got a kick; returns seconds from sending the PATCH to the first and to the last kick received.
 */
async function timeKick(
  server: RunningServer,
  adminToken: string,
  source: BenchSource,
  generators: Generator[],
  agents: number,
  report: (line: string) => void,
): Promise<{ first: number; last: number }> {
  await Promise.all(generators.map((generator) => generator.ask({ type: 'arm' })));
  const client = new FleetClient({ server: server.url, token: adminToken });
  const sent = Date.now();
  const patched = client
    .updateGlobalService(
      'bench-global',
      {
        template: {
          name: 'global',
          namespace: WORKLOAD_NS,
          repository: source.url,
          git: { ref: 'main', folder: 'global' },
          renderer: { kind: 'raw' },
          configuration: { revision: '1' },
        },
      },
      false,
    )
    // The answer lists the copies (routes/global-services.ts) and may take longer than the kicks, or time out.
    .then(
      () => `answered after ${((Date.now() - sent) / 1000).toFixed(2)} s`,
      (error: Error) => `failed after ${((Date.now() - sent) / 1000).toFixed(2)} s: ${error.message}`,
    );
  const deadline = sent + 10 * 60_000;
  let lastReport = Date.now();
  for (;;) {
    const answers = await Promise.all(generators.map((generator) => generator.ask({ type: 'kicks' })));
    const received = answers.reduce((sum, answer) => sum + (answer.type === 'kicks' ? answer.received : 0), 0);
    if (received >= agents) {
      const kicks = answers.flatMap((answer) => (answer.type === 'kicks' ? [answer] : []));
      const first = Math.min(...kicks.map((answer) => answer.first));
      const last = Math.max(...kicks.map((answer) => answer.last));
      report(`the PATCH ${await patched}`);
      return { first: (first - sent) / 1000, last: (last - sent) / 1000 };
    }
    if (Date.now() > deadline) throw new Error(`only ${received} of ${agents} agents kicked after 10 minutes`);
    if (Date.now() - lastReport > 5_000) {
      lastReport = Date.now();
      report(`kick: ${received}/${agents} agents after ${((Date.now() - sent) / 1000).toFixed(0)} s`);
    }
    await sleep(200);
  }
}

/**
 * Adds one generator per AGENTS_PER_GENERATOR tokens to `generators` (so the caller stops them, on failure too), the
 * i-th against `serverOf(i)`, and starts its agents: each opens its push channel and polls as `options` say.
 * @returns seconds until every channel was open. @throws Error naming how many were not and the first error.
 */
async function startGenerators(
  generators: Generator[],
  tokens: string[],
  serverOf: (index: number) => string,
  options: Pick<FleetBenchOptions, 'intervalS' | 'jitterS'>,
): Promise<number> {
  const first = generators.length;
  for (let start = 0; start < tokens.length; start += AGENTS_PER_GENERATOR) generators.push(new Generator());
  const started = performance.now();
  const answers = await Promise.all(
    generators.slice(first).map((generator, index) =>
      generator.ask({
        type: 'start',
        server: serverOf(index),
        tokens: tokens.slice(index * AGENTS_PER_GENERATOR, (index + 1) * AGENTS_PER_GENERATOR),
        intervalMs: options.intervalS * 1000,
        jitterMs: options.jitterS * 1000,
        httpConnections: HTTP_CONNECTIONS_PER_GENERATOR,
      }),
    ),
  );
  const failed = answers.reduce((sum, answer) => sum + (answer.type === 'start' ? answer.failed : 0), 0);
  const firstError = answers.find((answer) => answer.type === 'start' && answer.firstError);
  if (failed > 0) throw new Error(`${failed} of ${tokens.length} push channels not opened: ${JSON.stringify(firstError)}`);
  return (performance.now() - started) / 1000;
}

/** The polls every generator's agents sent between `from` and `to` (epoch ms): latencies, errors, the first error. */
async function pollsIn(
  generators: Generator[],
  from: number,
  to: number,
): Promise<{ latencies: number[]; errors: number; firstError: unknown }> {
  const windows = await Promise.all(generators.map((generator) => generator.ask({ type: 'window', from, to })));
  return {
    latencies: windows.flatMap((answer) => (answer.type === 'window' ? answer.latenciesMs : [])),
    errors: windows.reduce((sum, answer) => sum + (answer.type === 'window' ? answer.errors : 0), 0),
    firstError: windows.find((answer) => answer.type === 'window' && answer.firstError),
  };
}

/** One load-generator child process (scripts/bench/agent-load.ts); commands are answered in order. */
class Generator {
  readonly #child: ChildProcess;
  readonly #waiting: Array<(answer: LoadAnswer) => void> = [];
  readonly #exited: Promise<void>;

  constructor() {
    this.#child = fork(path.join(REPO_ROOT, 'scripts/bench/agent-load.ts'), [], {
      execPath: NODE,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#child.on('message', (answer: LoadAnswer) => this.#waiting.shift()?.(answer));
    this.#exited = new Promise((resolve) => this.#child.once('exit', () => resolve()));
  }

  ask(command: LoadCommand): Promise<LoadAnswer> {
    return new Promise((resolve, reject) => {
      if (!this.#child.connected) return reject(new Error('the load generator exited'));
      this.#waiting.push(resolve);
      this.#child.send(command);
    });
  }

  async stop(): Promise<void> {
    if (this.#child.connected) await this.ask({ type: 'stop' }).catch(() => undefined);
    const killed = setTimeout(() => this.#child.kill('SIGKILL'), 10_000);
    await this.#exited;
    clearTimeout(killed);
  }
}

// ---------------------------------------------------------------- replicas

const REPLICAS = 3;

async function benchReplicas(options: FleetBenchOptions, dir: string, report: (line: string) => void): Promise<Figures> {
  const { replicaAgents: agents, intervalS, jitterS, windowS } = options;
  await mkdir(path.join(dir, 'logs'), { recursive: true });
  const database = await benchDatabase('postgres', dir);
  const generators: Generator[] = [];
  const servers: RunningServer[] = [];
  try {
    const repository = await loadRepository(path.join(dir, 'git'));
    const key = SecretBox.generateKey();
    const keyFile = path.join(dir, 'encryption.key');
    await writeFile(keyFile, key, { mode: 0o600 });
    report(`replicas: seeding ${agents} clusters with a deploy token and 3 services each`);
    const seeded = await timedAsync(() =>
      seed(database.url, SecretBox.fromBase64(key, 'bench'), repository, path.join(dir, 'replica-1', 'cache'), agents),
    );
    report(`replicas: seeded in ${seeded.seconds.toFixed(1)} s`);
    // One after another: the first runs the migrations (the others would wait on its advisory lock anyway).
    for (let index = 1; index <= REPLICAS; index++) {
      servers.push(await startServer(`replica-${index}`, database, keyFile, path.join(dir, `replica-${index}`), []));
    }
    report(`replicas: servers ${servers.map((server) => `pid ${server.process.pid} at ${server.url}`).join(', ')}`);

    const opened = await startGenerators(generators, seeded.value.tokens, (index) => servers[index % REPLICAS]!.url, options);
    report(`replicas: ${agents} push channels open after ${opened.toFixed(1)} s; polling`);

    await sleep(5_000);
    const from = Date.now();
    const pids = servers.map((server) => server.process.pid!);
    const cpuBefore = pids.map(cpuSeconds);
    const databaseCpuBefore = cpuSeconds(database.pid!);
    const samplers = pids.map((pid) => new RssSampler(pid, 1_000));
    for (let elapsed = 0; elapsed < windowS; elapsed += 15) {
      await sleep(Math.min(15, windowS - elapsed) * 1000);
      const rss = samplers.map((sampler) => mib(sampler.current.rss)).join(', ');
      report(`replicas: window ${Math.min(windowS, elapsed + 15)}/${windowS} s, RSS ${rss} MiB`);
    }
    const to = Date.now();
    const seconds = (to - from) / 1000;
    const cores = pids.map((pid, index) => (cpuSeconds(pid) - cpuBefore[index]!) / seconds);
    const databaseCores = (cpuSeconds(database.pid!) - databaseCpuBefore) / seconds;
    const peaks = samplers.map((sampler) => sampler.stop());
    const { latencies, errors, firstError: windowError } = await pollsIn(generators, from, to);
    const pollRate = latencies.length / seconds;
    const offered = agents / (intervalS + jitterS / 2);
    report(
      `replicas: ${pollRate.toFixed(0)} polls/s (offered ${offered.toFixed(0)}), p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, ${errors} errors, cores ${cores.map((c) => c.toFixed(2)).join(' + ')}, PostgreSQL ${databaseCores.toFixed(2)}`,
    );
    if (errors > 0) report(`replicas: first poll error: ${JSON.stringify(windowError)}`);

    const kickSamplers = pids.map((pid) => new RssSampler(pid, 200));
    const kick = await timeKick(servers[0]!, seeded.value.adminToken, repository, generators, agents, report);
    const kickPeaks = kickSamplers.map((sampler) => sampler.stop());
    report(
      `replicas: kicks reached the first agent ${kick.first.toFixed(2)} s and all ${agents} ${kick.last.toFixed(2)} s after the PATCH`,
    );

    const label = `${agents} agents, ${REPLICAS} replicas on PostgreSQL`;
    const perReplica = (index: number): BenchRow[] => [
      { measurement: `replica ${index + 1} CPU, ${label}`, value: cores[index]!, unit: 'cores' },
      {
        measurement: `replica ${index + 1} RSS peak, ${label}`,
        value: Math.max(peaks[index]!.rss, kickPeaks[index]!.rss) / 1024 / 1024,
        baseline: GOAL_RSS_MIB,
        unit: 'MiB',
        baselineIs: 'goal: 1 GiB',
      },
    ];
    return {
      rows: [
        { measurement: `polls held, ${label}`, value: pollRate, baseline: offered, unit: '/s', baselineIs: 'polls offered' },
        { measurement: `poll latency p50, ${label}`, value: percentile(latencies, 50), unit: 'ms' },
        { measurement: `poll latency p99, ${label}`, value: percentile(latencies, 99), baseline: 50, unit: 'ms', baselineIs: 'goal' },
        ...servers.flatMap((_, index) => perReplica(index)),
        { measurement: `PostgreSQL CPU, ${label}`, value: databaseCores, unit: 'cores' },
        {
          measurement: `kick to all, ${label}`,
          value: kick.last,
          baseline: 5,
          unit: 's',
          baselineIs: 'goal',
        },
      ],
      notes: [
        `replicas: ${agents} agents on ${REPLICAS} servers (${AGENTS_PER_GENERATOR} per generator, generators dealt round the replicas), polling every ${intervalS} s + up to ${jitterS} s (${offered.toFixed(0)} polls/s offered, four times Plural's 2 min would be ${(agents / 30).toFixed(0)}/s); ${latencies.length} polls, ${errors} errors in the ${windowS} s window; seeding took ${seeded.seconds.toFixed(0)} s`,
        `replicas: the PATCH went to replica 1; every one of the ${agents} sockets, two thirds of them on the other replicas, got its kick (the count is exact, or the part fails)`,
        `replicas: all on this 2-core machine at once: the three servers, ${generators.length} generator processes and PostgreSQL share its cores`,
      ],
    };
  } finally {
    await Promise.all(generators.map((generator) => generator.stop()));
    for (const server of servers) await stopComponent(server.process, 15_000);
    await database.drop();
  }
}

// ---------------------------------------------------------------- apply

async function benchApply(options: FleetBenchOptions, dir: string, report: (line: string) => void): Promise<Figures> {
  report('baseline: the controller’s commit→applied by webhook');
  const controllerWebhook = await benchControllerWebhook({ ...options.controller, runs: COMMIT_SAMPLES });

  // The agents inherit this process's environment: the local clusters' bin folder first (its python3 has Jinja2
  // and the other template modules), as the controller half gives its controller.
  process.env['PATH'] = options.controller.env['PATH'];
  await mkdir(path.join(dir, 'logs'), { recursive: true });
  const kubeconfigs: Record<string, string> = {};
  for (const name of new Set([...APPLY_CLUSTERS, ...ROLLOUT_CLUSTERS])) {
    const state = await clusterUp({ layout: clusterLayout(name), report: (line) => report(`cluster ${name}: ${line}`) });
    kubeconfigs[name] = state.kubeconfig;
  }
  const source = await applyRepository(path.join(dir, 'git'));
  const database: BenchDatabase = { kind: 'sqlite', url: path.join(dir, 'data', 'gantry.db'), drop: async () => undefined };
  const keyFile = path.join(dir, 'encryption.key');
  await writeFile(keyFile, SecretBox.generateKey(), { mode: 0o600 });
  const secretFile = path.join(dir, 'webhook-secret');
  await writeFile(secretFile, WEBHOOK_SECRET);
  const fleet = new ApplyFleet(dir, kubeconfigs, report);
  try {
    // Push: the webhook tells the server, the server kicks the agents; the polls (10 min) never help.
    await fleet.startServer(database, keyFile, ['--webhook-secret-file', secretFile, '--git-poll-interval', '1h']);
    await fleet.register(source);
    fleet.startAgents(['--poll-interval', '10m', '--poll-jitter', '0s']);
    await fleet.waitApplied('rev-0', 300_000);
    const push: number[] = [];
    for (let index = 0; index < COMMIT_SAMPLES; index++) {
      const value = `push-${index + 1}`;
      await source.commit({ 'bench/configmap.yaml': configMap('bench', value) }, value);
      const started = performance.now();
      await fleet.announcePush(source);
      await fleet.waitApplied(value, 60_000);
      push.push((performance.now() - started) / 1000);
      report(`commit→applied on both clusters by push ${index + 1}/${COMMIT_SAMPLES}: ${push.at(-1)!.toFixed(2)} s`);
    }
    // The agent's memory once it has synced many revisions: what a long-lived agent holds, not a fresh one.
    for (let index = 0; index < SYNC_ROUNDS; index++) {
      const value = `round-${index + 1}`;
      await source.commit({ 'bench/configmap.yaml': configMap('bench', value) }, value);
      await fleet.announcePush(source);
      await fleet.waitApplied(value, 60_000);
      if ((index + 1) % 25 === 0) report(`sync rounds: ${index + 1}/${SYNC_ROUNDS}`);
    }
    const afterSyncs = await sampleFor(fleet.agentPid('dev'), 3_000);
    report(`dev agent after ${SYNC_ROUNDS} syncs: RSS ${mib(afterSyncs.rss)} MiB (tree ${mib(afterSyncs.treeRss)} MiB)`);

    // Through a pipeline: dev's commit reaches prod once its gates (HEALTH, zero soak; a Job on dev) open.
    await fleet.setUpPipeline(source);
    await fleet.waitApplied('rev-0', 120_000, STAGED_ON_PROD);
    const pipelined: number[] = [];
    for (let index = 0; index < COMMIT_SAMPLES; index++) {
      const value = `staged-${index + 1}`;
      await source.commit({ 'staged/configmap.yaml': configMap('staged', value) }, value);
      const started = performance.now();
      await fleet.announcePush(source);
      await fleet.waitApplied(value, 120_000, STAGED_ON_PROD);
      pipelined.push((performance.now() - started) / 1000);
      report(`commit on dev→applied on prod through the pipeline ${index + 1}/${COMMIT_SAMPLES}: ${pipelined.at(-1)!.toFixed(2)} s`);
    }
    // Gone before the polling part, whose commits it would otherwise promote meanwhile.
    await fleet.removePipeline();

    const drift = await fleet.timeDrift(source, COMMIT_SAMPLES);
    const previews = await fleet.timePreviews(source, COMMIT_SAMPLES);
    await fleet.addPreviewClusters(source);
    const widePreviews = await fleet.timePreviewsAcross(source, COMMIT_SAMPLES);
    await fleet.removeClusters(PREVIEW_CLUSTERS);

    // A global service on dev, stage and prod, one wave each: each wave soaks before the next starts, the last too.
    await fleet.setUpRollout(source);
    await fleet.waitApplied('rev-0', 120_000, ROLLED_OUT);
    const rollouts = await fleet.timeRollouts(source, COMMIT_SAMPLES);
    await fleet.removeRollout();

    // Polling: no webhook, no channel; the server fetches every 5 s, the agents poll every 5 s + up to 1 s.
    await fleet.stopAll();
    await fleet.startServer(database, keyFile, ['--git-poll-interval', '5s']);
    fleet.startAgents(['--poll-interval', '5s', '--poll-jitter', '1s', '--no-push-channel']);
    const polling: number[] = [];
    for (let index = 0; index < COMMIT_SAMPLES; index++) {
      await sleep(Math.random() * 5_000);
      const value = `poll-${index + 1}`;
      await source.commit({ 'bench/configmap.yaml': configMap('bench', value) }, value);
      const started = performance.now();
      await fleet.waitApplied(value, 60_000);
      polling.push((performance.now() - started) / 1000);
      report(`commit→applied on both clusters by polling ${index + 1}/${COMMIT_SAMPLES}: ${polling.at(-1)!.toFixed(2)} s`);
    }

    const agent = fleet.agentPid('dev');
    const idle = await sampleFor(agent, 3_000);
    report(`dev agent idle: RSS ${mib(idle.rss)} MiB (tree ${mib(idle.treeRss)} MiB); applying the microservices demo`);
    const sampler = new RssSampler(agent, 200);
    const demo = await timedAsync(() => fleet.applyDemo(source));
    const applying = sampler.stop();
    report(`demo healthy after ${demo.seconds.toFixed(1)} s; agent RSS peak ${mib(applying.rss)} MiB (tree ${mib(applying.treeRss)} MiB)`);

    const toMib = (bytes: number) => bytes / 1024 / 1024;
    return {
      rows: [
        ...pRows('commit→applied ×2, push', push, (p) => ({
          baseline: percentile(controllerWebhook, p),
          baselineIs: `controller, webhook, p${p}`,
        })),
        ...pRows('commit→applied ×2, polling', polling, () => ({ baseline: 10, baselineIs: 'git poll 5 s + agent poll 5 s' })),
        ...pRows('commit on dev→applied on prod, pipeline (HEALTH + JOB gates)', pipelined, (p) => ({
          baseline: percentile(push, p),
          baselineIs: `commit→applied ×2, push, p${p}`,
        })),
        ...pRows('object deleted→drift reported', drift.reported, () => ({
          baseline: RESYNC_INTERVAL_S,
          baselineIs: "the agent's resync, the only repair before",
        })),
        ...pRows('object deleted→repaired', drift.repaired, (p) => ({
          baseline: percentile(push, p),
          baselineIs: `commit→applied ×2, push, p${p}`,
        })),
        ...pRows('preview of a new commit on dev and prod', previews.fresh, (p) => ({
          baseline: percentile(push, p),
          baselineIs: `commit→applied ×2, push, p${p}`,
        })),
        ...pRows('preview asked again (reused)', previews.reused, (p) => ({
          baseline: percentile(previews.fresh, p),
          baselineIs: `preview of a new commit, p${p}`,
        })),
        ...pRows(`preview of a new commit over ${PREVIEW_CLUSTERS.length} clusters`, widePreviews, (p) => ({
          baseline: percentile(previews.fresh, p),
          baselineIs: `preview on dev and prod, p${p}`,
        })),
        ...pRows(`commit→rollout DONE, ${ROLLOUT_CLUSTERS.length} waves of ${ROLLOUT_SOAK_S} s soak`, rollouts, () => ({
          baseline: ROLLOUT_CLUSTERS.length * ROLLOUT_SOAK_S,
          baselineIs: 'the sum of the soaks',
        })),
        {
          measurement: 'agent RSS idle',
          value: toMib(idle.rss),
          baseline: PLURAL_AGENT_REQUEST_MIB,
          unit: 'MiB',
          baselineIs: "Plural agent's memory request",
        },
        {
          measurement: `agent RSS after ${SYNC_ROUNDS} syncs`,
          value: toMib(afterSyncs.rss),
          baseline: PLURAL_AGENT_REQUEST_MIB,
          unit: 'MiB',
          baselineIs: "Plural agent's memory request",
        },
        {
          measurement: 'agent RSS peak, applying demo',
          value: toMib(applying.rss),
          baseline: PLURAL_AGENT_REQUEST_MIB,
          unit: 'MiB',
          baselineIs: "Plural agent's memory request",
        },
        {
          measurement: 'agent tree RSS peak, demo',
          value: toMib(applying.treeRss),
          baseline: PLURAL_AGENT_REQUEST_MIB,
          unit: 'MiB',
          baselineIs: "Plural agent's memory request",
        },
      ],
      notes: [
        `commit→applied: ${COMMIT_SAMPLES} samples each, on both dev and prod; controller by webhook (local cluster): ${controllerWebhook.map((s) => s.toFixed(2)).join(', ')} s`,
        `drift: a ConfigMap deleted on dev by another client, one of ${COMMIT_SAMPLES} services each time (a service's repairs are rate-limited); reported = the server's first change hint for the service (GET /v1/events), repaired = the ConfigMap back`,
        `previews: the service bench on dev and prod, each sample at a new commit of a branch main does not follow, asked on both clusters at once; timed until both are DONE (a render and a server-side dry run by each agent); asked again, the DONE previews come back from the cache`,
        `previews over ${PREVIEW_CLUSTERS.length} clusters: ${PREVIEW_CLUSTERS[0]}..${PREVIEW_CLUSTERS.at(-1)} registered with an agent each (half on dev's API server, half on prod's), the service bench on each in a namespace of its own; each sample at a new commit of that branch, asked on all at once, timed until all are DONE`,
        `rollout: a global service (one ConfigMap) on dev, stage (a third local cluster) and prod, waves dev → stage → prod with a soak of ${ROLLOUT_SOAK_S} s each (the last wave soaks too); commit + webhook, timed until the rollout is DONE and the new value is on all three; value − baseline is what Gantry adds to the soaks`,
        `the microservices demo (${DEMO_PROJECT}, target test) became healthy ${demo.seconds.toFixed(1)} s after its service was created; agent tree RSS includes the Jinja2 workers`,
      ],
    };
  } finally {
    await fleet.cleanUp();
  }
}

/** p50 and p95 rows of `samples` (seconds), each against the baseline `baselineOf` gives for that percentile. */
function pRows(label: string, samples: number[], baselineOf: (p: 50 | 95) => { baseline: number; baselineIs: string }): BenchRow[] {
  return ([50, 95] as const).map((p) => ({ measurement: `${label} p${p}`, value: percentile(samples, p), unit: 's', ...baselineOf(p) }));
}

/**
 * The server and the agents of the apply part, as detached processes with logs in `<dir>/logs`: one agent per
 * registered cluster, each on the API server of a local cluster (dev's agent on dev's; several registered clusters
 * may share one).
 */
class ApplyFleet {
  url = '';
  #adminToken = '';
  #server: ComponentProcess | undefined;
  /** By registered cluster. */
  readonly #agents = new Map<string, ComponentProcess>();
  /** The flags of the agents startAgents started last; agents started later get them too. */
  #agentFlags: string[] = [];
  /** The local cluster whose API server each registered cluster's agent uses. */
  readonly #hosts = new Map<string, string>();
  readonly #dir: string;
  readonly #kubeconfigs: Record<string, string>;
  readonly #kube: Map<string, KubeClient>;
  readonly #report: (line: string) => void;

  constructor(dir: string, kubeconfigs: Record<string, string>, report: (line: string) => void) {
    this.#dir = dir;
    this.#kubeconfigs = kubeconfigs;
    this.#report = report;
    this.#kube = new Map(Object.entries(kubeconfigs).map(([name, file]) => [name, new KubeClient(loadKubeConfig({ kubeconfig: file }))]));
  }

  async startServer(database: BenchDatabase, keyFile: string, extra: string[]): Promise<void> {
    const server = await startServer('apply', database, keyFile, this.#dir, extra);
    this.url = server.url;
    this.#server = server.process;
    this.#adminToken ||= server.adminToken ?? '';
  }

  /** Registers the clusters (writing their tokens), the repository and a ConfigMap service on each. */
  async register(source: BenchSource): Promise<void> {
    const client = this.#client();
    await client.createRepository({ url: source.url });
    for (const name of APPLY_CLUSTERS) {
      await this.#registerCluster(name, name, {});
      await client.createService(name, benchService(source, 'bench', WORKLOAD_NS));
    }
  }

  /** Starts the agents of dev and prod with `extra` flags. */
  startAgents(extra: string[]): void {
    this.#agentFlags = extra;
    for (const name of APPLY_CLUSTERS) this.#startAgent(name);
  }

  /** Registers cluster `name`, whose agent will run on local cluster `host`'s API server; writes its deploy token. */
  async #registerCluster(name: string, host: string, tags: Record<string, string>): Promise<void> {
    const { deployToken } = await this.#client().createCluster({ name, tags });
    await writeFile(path.join(this.#dir, `${name}.token`), deployToken, { mode: 0o600 });
    this.#hosts.set(name, host);
  }

  /** Starts the agent of registered cluster `name` with the flags of startAgents. */
  #startAgent(name: string): void {
    const args = [
      // As the agent's Deployment runs it (its NODE_OPTIONS).
      ...AGENT_NODE_FLAGS,
      GANTRY,
      'agent',
      'run',
      '--server',
      this.url,
      '--token-file',
      path.join(this.#dir, `${name}.token`),
      '--kubeconfig',
      this.#kubeconfigs[this.#hosts.get(name)!]!,
      '--data-dir',
      path.join(this.#dir, 'agents', name),
      '--cache-dir',
      path.join(this.#dir, 'agents', name, 'cache'),
      ...this.#agentFlags,
    ];
    this.#agents.set(name, startComponent(`agent-${name}`, NODE, args, path.join(this.#dir, 'logs')));
  }

  /** Tells the server of a push to the repository (GitHub's push event, signed); the server fetches and kicks the agents. */
  async announcePush(source: BenchSource): Promise<void> {
    const response = await announceGithubPush(`${this.url}/hooks/git`, source.url, WEBHOOK_SECRET);
    if (!response.ok) throw new Error(`the server's webhook answered ${response.status}: ${await response.text()}`);
  }

  async #deleteNamespace(host: string, namespace: string): Promise<void> {
    await this.#kube.get(host)!.request('DELETE', `/api/v1/namespaces/${namespace}`).catch(notFound);
  }

  agentPid(name: string): number {
    return this.#agents.get(name)!.pid;
  }

  /**
   * The service `staged` on both clusters (prod at the repository's head commit) and the pipeline `bench`: prod
   * promoted from dev behind a HEALTH gate of zero soak and a JOB gate whose Job dev's agent runs.
   */
  async setUpPipeline(source: BenchSource): Promise<void> {
    const client = this.#client();
    for (const [name, ref] of [
      ['dev', 'main'],
      ['prod', source.head],
    ] as const) {
      await client.createService(name, {
        name: 'staged',
        namespace: WORKLOAD_NS,
        repository: source.url,
        git: { ref, folder: 'staged' },
        renderer: { kind: 'raw' },
      });
    }
    await client.setPipeline('bench', {
      stages: [
        { name: 'dev', services: [{ cluster: 'dev', name: 'staged' }] },
        { name: 'prod', services: [{ cluster: 'prod', name: 'staged', criteria: { cluster: 'dev', name: 'staged' } }] },
      ],
      edges: [
        {
          from: 'dev',
          to: 'prod',
          gates: [
            { name: 'healthy', type: 'HEALTH', health: { soak: '0' } },
            {
              name: 'check',
              type: 'JOB',
              job: { cluster: 'dev', namespace: 'bench-gates', containers: [{ name: 'check', image: 'registry.invalid/check:1' }] },
            },
          ],
        },
      ],
    });
  }

  /**
   * Deletes a ConfigMap of one of `samples` services on dev (each its own namespace: a service's repairs are
   * rate-limited) with another client, and times until the server announces a change of that service (its agent's
   * drift report: GET /v1/events) and until the ConfigMap is back; then removes those services and namespaces.
   * @returns seconds per sample.
   */
  async timeDrift(source: BenchSource, samples: number): Promise<{ reported: number[]; repaired: number[] }> {
    const client = this.#client();
    const kube = this.#kube.get('dev')!;
    const names = Array.from({ length: samples }, (_, index) => `drift-${index + 1}`);
    const ids = new Map<string, string>();
    for (const name of names) {
      const service = await client.createService('dev', benchService(source, name, `${WORKLOAD_NS}-${name}`));
      ids.set(name, service.id);
    }
    for (const name of names) await this.#waitHealthy('dev', name, 120_000);
    const hints = new ChangeHints(this.url, this.#adminToken);
    const reported: number[] = [];
    const repaired: number[] = [];
    try {
      await hints.ready;
      for (const name of names) {
        const url = `/api/v1/namespaces/${WORKLOAD_NS}-${name}/configmaps/bench`;
        const { metadata } = await kube.request<{ metadata: { uid: string } }>('GET', url);
        const started = performance.now();
        await kube.request('DELETE', url);
        const back = await waitFor(
          `ConfigMap ${name} back`,
          async () => {
            const configMap = await kube.request<{ metadata: { uid: string } }>('GET', url).catch(notFound);
            return configMap && configMap.metadata.uid !== metadata.uid ? performance.now() : undefined;
          },
          60_000,
        );
        const told = await hints.first(ids.get(name)!, started, 60_000);
        reported.push((told - started) / 1000);
        repaired.push((back - started) / 1000);
        this.#report(`${name}: deleted→reported ${reported.at(-1)!.toFixed(3)} s, →repaired ${repaired.at(-1)!.toFixed(3)} s`);
        await this.#waitHealthy('dev', name, 60_000);
      }
    } finally {
      hints.close();
    }
    for (const name of names) await client.deleteService('dev', name, false);
    for (const name of names) await this.#deleteNamespace('dev', `${WORKLOAD_NS}-${name}`);
    return { reported, repaired };
  }

  /**
   * Previews the service bench on both clusters at a new commit of the branch `preview` (main does not move), and
   * times until both previews are DONE; then asks again, which the server answers from its cache.
   * @returns seconds per sample.
   */
  async timePreviews(source: BenchSource, samples: number): Promise<{ fresh: number[]; reused: number[] }> {
    const fresh: number[] = [];
    const reused: number[] = [];
    for (let index = 0; index < samples; index++) {
      fresh.push(await this.#timePreview(source, APPLY_CLUSTERS, `preview-${index + 1}`));
      const again = performance.now();
      const cached = await this.#askPreviews(APPLY_CLUSTERS);
      if (cached.some((preview) => preview.state !== 'DONE')) throw new Error('a preview asked again was not reused');
      reused.push((performance.now() - again) / 1000);
      this.#report(
        `preview ${index + 1}/${samples} on both clusters: ${fresh.at(-1)!.toFixed(3)} s, asked again ${reused.at(-1)!.toFixed(3)} s`,
      );
    }
    return { fresh, reused };
  }

  /**
   * Registers the clusters of PREVIEW_CLUSTERS, each with its agent (on dev's and prod's API servers in turn) and the
   * service bench in a namespace of its own, so that agents sharing an API server never touch each other's objects;
   * waits until every one is healthy.
   */
  async addPreviewClusters(source: BenchSource): Promise<void> {
    const client = this.#client();
    for (const [index, name] of PREVIEW_CLUSTERS.entries()) {
      await this.#registerCluster(name, APPLY_CLUSTERS[index % APPLY_CLUSTERS.length]!, {});
      await client.createService(name, benchService(source, 'bench', `${WORKLOAD_NS}-${name}`));
      this.#startAgent(name);
    }
    for (const name of PREVIEW_CLUSTERS) await this.#waitHealthy(name, 'bench', 120_000);
  }

  /**
   * Deletes the clusters' services and waits until their agents deleted the objects; then stops the agents, deletes
   * the services' namespaces and unregisters the clusters.
   */
  async removeClusters(names: readonly string[]): Promise<void> {
    const client = this.#client();
    for (const name of names) {
      const services = await client.listServices(name);
      for (const service of services) await client.deleteService(name, service.name, false);
      await waitFor(`the services of ${name} deleted`, async () => (await client.listServices(name)).length === 0, 120_000);
      await stopComponent(this.#agents.get(name)!, 15_000);
      this.#agents.delete(name);
      for (const namespace of new Set(services.map((service) => service.namespace)))
        await this.#deleteNamespace(this.#hosts.get(name)!, namespace);
      await client.deleteCluster(name);
      this.#hosts.delete(name);
    }
  }

  /**
   * timePreviews' fresh previews on every cluster of PREVIEW_CLUSTERS (addPreviewClusters) at once.
   * @returns seconds per sample.
   */
  async timePreviewsAcross(source: BenchSource, samples: number): Promise<number[]> {
    const seconds: number[] = [];
    for (let index = 0; index < samples; index++) {
      seconds.push(await this.#timePreview(source, PREVIEW_CLUSTERS, `preview-across-${index + 1}`));
      this.#report(`preview ${index + 1}/${samples} on ${PREVIEW_CLUSTERS.length} clusters: ${seconds.at(-1)!.toFixed(3)} s`);
    }
    return seconds;
  }

  /**
   * Commits `value` to the branch `preview` and times from asking for a preview of it of the service bench on every
   * one of `clusters` until all are DONE, each changing the one ConfigMap.
   * @returns seconds.
   */
  async #timePreview(source: BenchSource, clusters: readonly string[], value: string): Promise<number> {
    const client = this.#client();
    await source.commit({ 'bench/configmap.yaml': configMap('bench', value) }, value, 'preview');
    const started = performance.now();
    // Waited for one after the other: once the first is DONE the others mostly are, so few polls load the server.
    for (const preview of await this.#askPreviews(clusters)) {
      const done = await waitFor(
        `preview on ${preview.cluster} done`,
        async () => {
          const current = await client.getPreview(preview.cluster, 'bench', preview.id);
          return current.state === 'PENDING' ? undefined : current;
        },
        60_000,
      );
      if (done.state !== 'DONE' || done.result?.change.length !== 1)
        throw new Error(`preview on ${preview.cluster}: ${JSON.stringify(done)}`);
    }
    return (performance.now() - started) / 1000;
  }

  /** Asks for a preview of the service bench at the branch `preview` on every one of `clusters` at once. */
  #askPreviews(clusters: readonly string[]): Promise<ApiPreview[]> {
    const client = this.#client();
    return Promise.all(clusters.map((name) => client.createPreview(name, 'bench', 'preview')));
  }

  /**
   * The cluster stage with its agent, and the global service `rollout` (folder rollout/) on dev, stage and prod,
   * which a new commit reaches one cluster per wave in ROLLOUT_CLUSTERS' order, each wave soaking ROLLOUT_SOAK_S.
   */
  async setUpRollout(source: BenchSource): Promise<void> {
    const client = this.#client();
    const tags = { rollout: 'bench' };
    await this.#registerCluster('stage', 'stage', tags);
    this.#startAgent('stage');
    for (const name of APPLY_CLUSTERS) await client.setClusterTags(name, tags);
    await client.createGlobalService({
      name: 'rollout',
      tags,
      template: benchService(source, 'rollout', ROLLED_OUT.namespace, 'rollout'),
      rollout: {
        waves: ROLLOUT_CLUSTERS.map((name) => ({ name, clusters: [name] })),
        soak: `${ROLLOUT_SOAK_S}s`,
        onFailure: 'pause',
      },
    });
  }

  /**
   * Commits a new value of the rollout's ConfigMap, announces it, and times until its rollout is DONE and the value
   * is on every cluster.
   * @returns seconds per sample.
   */
  async timeRollouts(source: BenchSource, samples: number): Promise<number[]> {
    const client = this.#client();
    const seconds: number[] = [];
    for (let index = 0; index < samples; index++) {
      const value = `rollout-${index + 1}`;
      await source.commit({ 'rollout/configmap.yaml': configMap('rollout', value) }, value);
      const started = performance.now();
      await this.announcePush(source);
      await this.waitApplied(value, 120_000, ROLLED_OUT);
      const commit = source.head.slice(0, 12);
      await waitFor(
        `the rollout of ${commit} done`,
        async () => {
          const rollout = await client.getRollout('rollout');
          if (!rollout.cause.includes(commit)) throw new Error(`the newest rollout is not of ${commit}: ${rollout.cause}`);
          if (rollout.state !== 'DONE' && rollout.state !== 'RUNNING') throw new Error(`the rollout: ${JSON.stringify(rollout)}`);
          return rollout.state === 'DONE';
        },
        60_000,
      );
      seconds.push((performance.now() - started) / 1000);
      this.#report(`commit→rollout DONE ${index + 1}/${samples}: ${seconds.at(-1)!.toFixed(2)} s`);
    }
    return seconds;
  }

  /** Deletes the global service rollout (its agents delete the copies' objects) and its namespaces, then stage. */
  async removeRollout(): Promise<void> {
    const client = this.#client();
    await client.deleteGlobalService('rollout', { detach: false, confirm: true });
    await waitFor(
      'the copies of rollout deleted',
      async () => !(await client.listServices()).some((service) => service.name === 'rollout'),
      120_000,
    );
    for (const name of ROLLOUT_CLUSTERS) await this.#deleteNamespace(name, ROLLED_OUT.namespace);
    await this.removeClusters(['stage']);
  }

  async #waitHealthy(cluster: string, name: string, timeoutMs: number): Promise<void> {
    const client = this.#client();
    await waitFor(
      `service ${cluster}/${name} healthy`,
      async () => {
        const service = await client.getService(cluster, name);
        return service.status === 'healthy' && service.appliedRevision === service.revision.number;
      },
      timeoutMs,
    );
  }

  async removePipeline(): Promise<void> {
    await this.#client().deletePipeline('bench');
  }

  /** Waits until the ConfigMap of `placement` (by default bench on dev and prod) has `value` on each of its clusters. */
  async waitApplied(value: string, timeoutMs: number, placement: Placement = BENCH_CONFIGMAP): Promise<void> {
    const { name, namespace, clusters } = placement;
    const deadline = Date.now() + timeoutMs;
    const pending = new Set(clusters);
    while (pending.size > 0) {
      for (const cluster of [...pending]) {
        const configMap = await this.#kube
          .get(cluster)!
          .request<{ data?: Record<string, string> }>('GET', `/api/v1/namespaces/${namespace}/configmaps/${name}`)
          .catch(notFound);
        if (configMap?.data?.['value'] === value) pending.delete(cluster);
      }
      if (pending.size === 0) return;
      for (const [cluster, agent] of this.#agents)
        if (!isRunning(agent)) throw new Error(`the agent of ${cluster} exited; see ${this.#dir}/logs`);
      if (Date.now() > deadline) throw new Error(`ConfigMap ${name}=${value} not applied on ${[...pending].join(', ')} in time`);
      await sleep(50);
    }
  }

  /** Creates the microservices demo's service on dev and waits until it is healthy at its revision. */
  async applyDemo(source: BenchSource): Promise<void> {
    const client = this.#client();
    await client.createService('dev', {
      name: 'ms-demo',
      namespace: 'ms-demo-test',
      repository: source.url,
      git: { ref: 'main', folder: DEMO_PROJECT },
      renderer: { kind: 'kluctl', target: 'test' },
    });
    const deadline = Date.now() + 10 * 60_000;
    for (;;) {
      const service = await client.getService('dev', 'ms-demo');
      if (service.status === 'healthy' && service.appliedRevision === service.revision.number) return;
      if (Date.now() > deadline) throw new Error(`the demo is ${service.status} after 10 minutes: ${JSON.stringify(service.errors)}`);
      await sleep(500);
    }
  }

  async stopAll(): Promise<void> {
    for (const agent of this.#agents.values()) await stopComponent(agent, 15_000);
    this.#agents.clear();
    if (this.#server) await stopComponent(this.#server, 15_000);
    this.#server = undefined;
  }

  /** Deletes the services (the agents delete their objects), then stops everything; never throws. */
  async cleanUp(): Promise<void> {
    try {
      if (this.#server && isRunning(this.#server)) {
        const client = this.#client();
        for (const service of await client.listServices()) await client.deleteService(service.cluster, service.name, false);
        const deadline = Date.now() + 3 * 60_000;
        while ((await client.listServices()).length > 0 && Date.now() < deadline) await sleep(1_000);
      }
    } catch (error) {
      this.#report(`cleanup: deleting the services failed: ${(error as Error).message}`);
    }
    await this.stopAll();
  }

  #client(): FleetClient {
    return new FleetClient({ server: this.url, token: this.#adminToken });
  }
}

/** The server's change hints (GET /v1/events), each with when it arrived (performance.now()). */
class ChangeHints {
  readonly ready: Promise<void>;
  readonly #received: Array<{ at: number; id: string | undefined }> = [];
  readonly #stop = new AbortController();

  constructor(server: string, token: string) {
    this.ready = this.#read(server, token);
  }

  /** When the first hint naming service `id` arrived after `after`; waits for it up to `timeoutMs`. */
  async first(id: string, after: number, timeoutMs: number): Promise<number> {
    return await waitFor(
      `a change hint of service ${id}`,
      () => this.#received.find((hint) => hint.id === id && hint.at >= after)?.at,
      timeoutMs,
    );
  }

  close(): void {
    this.#stop.abort();
  }

  /** Resolves once the stream is open; reads it on in the background until closed. */
  async #read(server: string, token: string): Promise<void> {
    const response = await fetch(`${server}/v1/events`, { headers: { authorization: `Bearer ${token}` }, signal: this.#stop.signal });
    if (!response.ok || !response.body) throw new Error(`GET /v1/events answered ${response.status}`);
    const lines = response.body.pipeThrough(new TextDecoderStream()).getReader();
    void (async () => {
      let buffer = '';
      for (;;) {
        const { value, done } = await lines.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        const at = performance.now();
        buffer += value;
        const events = buffer.split('\n\n');
        buffer = events.pop() ?? '';
        for (const event of events) {
          const data = event.split('\n').find((line) => line.startsWith('data: '));
          if (data) this.#received.push({ at, id: (JSON.parse(data.slice(6)) as { id?: string }).id });
        }
      }
    })();
  }
}

/** A repository with the bench ConfigMap services (`bench/`, `staged/`, `rollout/`) and a copy of Kluctl's examples (for the demo). */
async function applyRepository(dir: string): Promise<BenchSource> {
  const source = await BenchSource.create(dir, {
    'bench/configmap.yaml': configMap('bench', 'rev-0'),
    'staged/configmap.yaml': configMap('staged', 'rev-0'),
    'rollout/configmap.yaml': configMap('rollout', 'rev-0'),
  });
  await cp(findExamples(), source.work, { recursive: true });
  await run('chmod', ['-R', 'u+w', source.work]);
  await source.commit({}, 'Kluctl examples');
  return source;
}

// ---------------------------------------------------------------- shared

interface RunningServer {
  url: string;
  process: ComponentProcess;
  /** Printed at the first start on an empty database. */
  adminToken: string | undefined;
}

/** Starts `gantry server` (logs in `<dir>/logs/server-<name>.log`) and waits until /readyz answers. */
async function startServer(name: string, database: BenchDatabase, keyFile: string, dir: string, extra: string[]): Promise<RunningServer> {
  const { port } = await freePorts(['port']);
  const url = `http://127.0.0.1:${port}`;
  const where = database.kind === 'sqlite' ? ['--data-dir', path.dirname(database.url)] : ['--database-url', database.url];
  const args = [
    GANTRY,
    'server',
    '--listen',
    `127.0.0.1:${port}`,
    ...where,
    '--encryption-key-file',
    keyFile,
    '--cache-dir',
    path.join(dir, 'cache'),
    ...extra,
  ];
  const logs = path.join(dir, 'logs');
  await mkdir(logs, { recursive: true });
  const process = startComponent(`server-${name}`, NODE, args, logs);
  const log = path.join(logs, `server-${name}.log`);
  await waitUntil(
    { what: 'gantry server /readyz', log, alive: () => isRunning(process) },
    120_000,
    async () => (await fetch(`${url}/readyz`)).ok,
  );
  const printed = /^\s+(gantry-api-\S+)$/m.exec(await run('cat', [log]).then((result) => result.stdout))?.[1];
  return { url, process, adminToken: printed };
}

/** A bare git repository (file://) and a work tree to commit into. */
class BenchSource {
  readonly url: string;
  readonly work: string;
  /** The sha of the last commit. */
  head = '';

  private constructor(bare: string, work: string) {
    this.url = `file://${bare}`;
    this.work = work;
  }

  static async create(dir: string, files: Record<string, string>): Promise<BenchSource> {
    const bare = path.join(dir, 'source.git');
    const work = path.join(dir, 'work');
    await git(['init', '--quiet', '--bare', '--initial-branch=main', bare]);
    await git(['init', '--quiet', '--initial-branch=main', work]);
    await git(['remote', 'add', 'origin', bare], { cwd: work });
    const source = new BenchSource(bare, work);
    await source.commit(files, 'initial');
    return source;
  }

  /** Writes `files`, commits everything and pushes to `branch` (main by default); keeps the new commit's sha. */
  async commit(files: Record<string, string>, message: string, branch = 'main'): Promise<void> {
    for (const [file, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(this.work, file)), { recursive: true });
      await writeFile(path.join(this.work, file), content);
    }
    const as = ['-c', 'user.name=Gantry Bench', '-c', 'user.email=bench@gantry.dev'];
    await git([...as, 'add', '--all'], { cwd: this.work });
    await git([...as, 'commit', '--quiet', '--allow-empty', '-m', message], { cwd: this.work });
    await git(['push', '--quiet', 'origin', `HEAD:${branch}`], { cwd: this.work });
    this.head = (await git(['rev-parse', 'HEAD'], { cwd: this.work })).stdout.trim();
  }
}

/** A raw-YAML service `name` of a folder of one ConfigMap (bench/ by default) on the repository's main branch. */
function benchService(source: BenchSource, name: string, namespace: string, folder = 'bench'): NewServiceBody {
  return { name, namespace, repository: source.url, git: { ref: 'main', folder }, renderer: { kind: 'raw' } };
}

function configMap(name: string, value: string): string {
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;
}

function notFound(error: unknown): undefined {
  if (error instanceof KubeApiError && error.status === 404) return undefined;
  throw error;
}

async function timedAsync<T>(action: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const started = performance.now();
  const value = await action();
  return { value, seconds: (performance.now() - started) / 1000 };
}

/** The V8 heap in use and allocated, from the server's /metrics, to tell memory in use from memory V8 keeps. */
async function heapText(server: string): Promise<string> {
  const metrics = await (await fetch(`${server}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
  return `V8 heap used ${mib(value('nodejs_heap_size_used_bytes'))} of ${mib(value('nodejs_heap_size_total_bytes'))} MiB`;
}

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(0);
}
