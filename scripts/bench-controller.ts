/**
 * The GitOps controller half of `npm run bench`: the real `gantry controller run` process (out of cluster, as for
 * development, watching only the bench's namespace) reconciling KluctlDeployments from a real git repository served
 * by git's own smart-HTTP backend into the local cluster. Every figure has a baseline measured in the same run and is
 * reported as a ratio to it as well as in seconds or MiB.
 *
 * Workload: a one-target Kluctl project (`.kluctl.yaml` with target `bench` and a required arg `instance`, one item
 * with two ConfigMaps named after the arg, discriminator `gantry-bench-<instance>`), so any number of
 * KluctlDeployments of the one repository deploy distinct objects through `spec.args.instance`. The CLI baselines
 * deploy a local copy of the project as instance `cli`, so they never touch the controller's objects.
 *
 * - no-op reconcile: with a deployment Ready, annotate `kluctl.io/request-reconcile=<unique>` and time until
 *   status.reconcileRequestResult answers that value with an endTime (median of `runs`). The reconcile fetches the
 *   repository (a request always does), renders, finds the objects hash unchanged and runs drift detection.
 *   Baseline: a no-op `gantry deploy` of the same project and target with the CLI (median of `runs`), i.e. what a
 *   reconcile costs next to a user running the CLI.
 * - commit→applied, webhook: push a commit changing a ConfigMap value, post a signed GitHub push event to the
 *   controller's /hooks/git and time (from the end of the push) until the ConfigMap in the cluster has the new value.
 *   Baseline: `gantry deploy` with the CLI of the same change (what a user pushing and deploying by hand waits).
 * - commit→applied, polling: the same without webhook, the deployment at `spec.interval` 5s and the controller at
 *   `--git-refresh-interval 1s`; before each push a random wait of up to one interval, so the push falls anywhere
 *   in the polling cycle. Baseline: the interval (the expected figure is about half of it plus one reconcile).
 * - 100 KluctlDeployments: a fresh controller process; its RSS when idle and ready; then one deployment alone,
 *   applied and timed until Ready (Ready=True and observedGeneration == generation) and deleted again (`runs`
 *   times, median); then 100 applied at once in one request and timed until all are Ready, sampling the RSS
 *   every 200 ms; the RSS once they are all Ready and the controller idle; then all 100 deleted (`delete: true`, so
 *   the controller deletes their objects) and timed until gone, and the RSS once more, idle without deployments.
 *   Baselines: the single deployment's time (to create and to delete) and CPU seconds, and the RSS idle just before
 *   the 100 were created. The V8 heap in use (from /metrics) at the same points is printed beside the table, to tell
 *   memory still in use from memory V8 keeps.
 *   RSS is the controller's Node process (VmRSS) and, as `tree`, that plus its children (the Python Jinja2 workers
 *   and any git processes running at the moment). The controllers run, as in their Pod, under the chart's memory
 *   limit (a cgroup, scripts/bench/memory-limit.ts; noted when the machine does not allow one): Node sizes V8's heap
 *   from it, so without it the young generation alone would be 128 MiB on this 24 GiB machine.
 * - `deployments` and `fleetControllerFlags` scale the 100 up, e.g. to 1000 with Flux's vertical-scaling advice.
 * - Memory across cycles: the 100 are created and deleted again (`cycles` in all, default 3), and the controller's
 *   idle RSS after the last deletion is compared with that after the first (a leak grows it with every cycle).
 *
 * Everything created (KluctlDeployments, waiting for their deletion so their objects go; the namespaces; the
 * controller processes; the git server; temporary folders) is removed again, on failure too. The CRDs from
 * install/crds are applied (server-side, a no-op when current) and left in place: other users of the cluster
 * need them.
 */
import { createHmac } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run } from '../src/exec.ts';
import { KubeApiError, KubeClient, loadKubeConfig } from '../src/kube/client.ts';
import { Cluster } from '../src/kube/cluster.ts';
import { ensureCrdsServed } from '../src/deploy/crds.ts';
import { startController, WEBHOOK_SECRET, type RunningController } from '../test/support/controller.ts';
import { startGitServer, type GitServer } from '../test/support/git-server.ts';
import { git } from '../test/support/git-repo.ts';
import { cpuSeconds, median, RssSampler, sampleFor } from './bench/measure.ts';
import { memoryLimit, type MemoryLimit } from './bench/memory-limit.ts';
import { parseYaml } from '../src/yaml.ts';
import { REPO_ROOT } from './examples.ts';

export interface ControllerBenchOptions {
  /** Samples per timed measurement (medians are reported). */
  runs: number;
  kubeconfig: string;
  /** The local cluster's kubectl. */
  kubectl: string;
  /**
   * Environment of the controller and the CLI besides KUBECONFIG: PATH with the local cluster's bin folder first
   * (its python3 has Jinja2 and the other template modules; helm, kustomize, sops).
   */
  env: Record<string, string>;
  /** Receives progress lines (stderr). */
  report: (line: string) => void;
  /** How many KluctlDeployments the fleet part creates at once (default 100). */
  deployments?: number;
  /** How many times the fleet is created and deleted (default 3); the idle RSS after the last is compared to the first's. */
  cycles?: number;
  /**
   * Extra flags of the controller that runs the fleet part, e.g. Flux's vertical-scaling advice for hundreds of
   * deployments: `--concurrency 10 --kube-api-qps 500 --kube-api-burst 1000` (default none: the defaults).
   */
  fleetControllerFlags?: string[];
}

/** One line of the report: a measured figure and the baseline it is compared to. */
export interface BenchRow {
  measurement: string;
  value: number;
  /** Absent for a figure nothing comparable exists for (a latency as such). */
  baseline?: number;
  unit: 's' | 'ms' | 'MiB' | 'CPU s' | 'cores' | '/s';
  /** What the baseline is. */
  baselineIs?: string;
}

export interface ControllerBenchResult {
  title: string;
  rows: BenchRow[];
  /** Extra figures worth reading beside the table (reconcile durations as the controller reports them, etc.). */
  notes: string[];
}

const API_GROUP = 'gitops.gantry.dev';
const API = `${API_GROUP}/v1beta1`;
const CONTROLLER_NS = 'gantry-bench-controller';
const WORKLOAD_NS = 'gantry-bench-workload';
const RESULTS_NS = 'gantry-bench-results';
const TARGET = 'bench';
const POLL_INTERVAL = '5s';
const POLL_INTERVAL_S = 5;
const DEFAULT_FLEET = 100;
/** Create/delete cycles of the fleet: memory must come back to the same level after each. */
const DEFAULT_CYCLES = 3;
const NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');
const GANTRY = path.join(REPO_ROOT, 'bin/gantry.js');
const KD_PATH = `/apis/${API}/namespaces/${CONTROLLER_NS}/kluctldeployments`;
const CM_PATH = `/api/v1/namespaces/${WORKLOAD_NS}/configmaps`;

export async function benchController(options: ControllerBenchOptions): Promise<ControllerBenchResult> {
  const bench = new ControllerBench(options);
  try {
    return await bench.run();
  } finally {
    await bench.cleanUp();
  }
}

/**
 * Only the controller's commit→applied by webhook (`runs` samples, seconds), for the fleet half to compare its own
 * commit→applied with, measured in the same run on the same machine.
 */
export async function benchControllerWebhook(options: ControllerBenchOptions): Promise<number[]> {
  const bench = new ControllerBench(options);
  try {
    const { single, singleUrl } = await bench.prepare();
    return await bench.webhookSamples(single, singleUrl);
  } finally {
    await bench.cleanUp();
  }
}

class ControllerBench {
  private readonly options: ControllerBenchOptions;
  private readonly client: KubeClient;
  private readonly report: (line: string) => void;
  private scratch = '';
  private server: GitServer | undefined;
  private controller: RunningController | undefined;
  /** The chart's memory limit of the controller container, when this machine lets the bench impose it. */
  private limit: MemoryLimit | undefined;
  private readonly notes: string[] = [];

  constructor(options: ControllerBenchOptions) {
    this.options = options;
    this.report = (line) => options.report(`controller bench: ${line}`);
    this.client = new KubeClient(loadKubeConfig({ kubeconfig: options.kubeconfig }));
  }

  /** Makes the namespaces, the two repositories and their git server, and starts the first controller. */
  async prepare(): Promise<{ single: BenchRepo; singleUrl: string; fleetUrl: string }> {
    this.scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-bench-controller-'));
    this.report('applying the CRDs and creating the namespaces');
    const crds = path.join(REPO_ROOT, 'install/crds');
    const crdFiles = (await readdir(crds)).filter((file) => file.endsWith(`.${API_GROUP}.yaml`));
    await this.kubectl(['apply', '--server-side', '--force-conflicts', ...crdFiles.flatMap((file) => ['-f', path.join(crds, file)])]);
    // The cluster stays open with the bench's client, which the rest of the bench uses.
    await ensureCrdsServed(
      new Cluster(this.client),
      crdFiles.map((file) => file.replace(/\.yaml$/, '')),
      { timeoutMs: 60_000 },
    );
    for (const namespace of [CONTROLLER_NS, WORKLOAD_NS, RESULTS_NS]) {
      await this.kubectl(
        ['apply', '--server-side', '--field-manager=gantry-bench', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }),
      );
    }

    const gitRoot = path.join(this.scratch, 'git');
    await mkdir(gitRoot);
    const single = await BenchRepo.create(gitRoot, 'single', projectFiles('rev-0'));
    await BenchRepo.create(gitRoot, 'fleet', projectFiles('rev-0'));
    this.server = await startGitServer(gitRoot);
    const singleUrl = this.server.url('single.git');
    const fleetUrl = this.server.url('fleet.git');

    this.controller = await this.startController('1s');
    // A previous run that died may have left deployments behind; with the controller up, their finalizers can run.
    await this.deleteAllDeployments();
    this.report('deploying one KluctlDeployment');
    await this.applyDeployments([kluctlDeployment('single', singleUrl, { interval: '10m' })]);
    await this.waitAllReady(['single'], 180_000);
    return { single, singleUrl, fleetUrl };
  }

  /** Commit→applied by webhook of the deployment `prepare` made, `runs` times; seconds. */
  async webhookSamples(single: BenchRepo, singleUrl: string): Promise<number[]> {
    const webhook: number[] = [];
    for (let index = 0; index < this.options.runs; index++) {
      const value = `webhook-${index + 1}`;
      await single.commit(projectFiles(value), value);
      const started = performance.now();
      const response = await this.announcePush(singleUrl);
      if (response.status !== 202) throw new Error(`the webhook answered ${response.status}: ${await response.text()}`);
      await this.waitConfigMapValue('bench-single', value, 60_000);
      webhook.push((performance.now() - started) / 1000);
      this.report(`commit→applied by webhook ${index + 1}/${this.options.runs}: ${last(webhook).toFixed(2)} s`);
    }
    return webhook;
  }

  async run(): Promise<ControllerBenchResult> {
    const { runs } = this.options;
    const { single, singleUrl, fleetUrl } = await this.prepare();

    // 1. no-op reconcile vs. a no-op CLI deploy.
    const reconcileSamples: number[] = [];
    const reportedDurations: number[] = [];
    for (let index = 0; index < runs; index++) {
      const { seconds, reported } = await this.noopReconcile('single', index);
      reconcileSamples.push(seconds);
      reportedDurations.push(reported);
      this.report(
        `no-op reconcile ${index + 1}/${runs}: ${seconds.toFixed(2)} s (controller's own startTime→endTime ${reported.toFixed(2)} s)`,
      );
    }
    const cliProject = path.join(this.scratch, 'cli-project');
    await writeFiles(cliProject, projectFiles('cli-0'));
    this.report('no-op reconcile baseline: gantry deploy with the CLI (first deploy, then no-op deploys)');
    await this.gantryDeploy(cliProject);
    const cliNoop: number[] = [];
    for (let index = 0; index < runs; index++) {
      cliNoop.push(await timed(() => this.gantryDeploy(cliProject)));
      this.report(`CLI no-op deploy ${index + 1}/${runs}: ${last(cliNoop).toFixed(2)} s`);
    }

    // 2. commit→applied.
    const webhook = await this.webhookSamples(single, singleUrl);
    const cliChange: number[] = [];
    for (let index = 0; index < runs; index++) {
      await writeFiles(cliProject, projectFiles(`cli-${index + 1}`));
      cliChange.push(await timed(() => this.gantryDeploy(cliProject)));
      this.report(`baseline, CLI deploy of a change ${index + 1}/${runs}: ${last(cliChange).toFixed(2)} s`);
    }
    this.report(`commit→applied by polling: spec.interval ${POLL_INTERVAL}, --git-refresh-interval 1s`);
    await this.applyDeployments([kluctlDeployment('single', singleUrl, { interval: POLL_INTERVAL })]);
    await this.waitAllReady(['single'], 60_000);
    const polling: number[] = [];
    for (let index = 0; index < runs; index++) {
      await sleep(Math.random() * POLL_INTERVAL_S * 1000);
      const value = `poll-${index + 1}`;
      await single.commit(projectFiles(value), value);
      const started = performance.now();
      await this.waitConfigMapValue('bench-single', value, 60_000);
      polling.push((performance.now() - started) / 1000);
      this.report(`commit→applied by polling ${index + 1}/${runs}: ${last(polling).toFixed(2)} s`);
    }
    await this.deleteAllDeployments();
    this.report('stopping the first controller');
    await this.controller?.stop();

    // 3. 100 (or --deployments) KluctlDeployments on a fresh controller.
    const FLEET = this.options.deployments ?? DEFAULT_FLEET;
    const fleetFlags = this.options.fleetControllerFlags ?? [];
    this.controller = await this.startController('5s', fleetFlags);
    const controller = this.controller;
    await sleep(5_000);
    const freshIdle = await sampleFor(controller.pid, 3_000);
    const freshHeap = await heapOf(controller);
    this.report(`fresh controller idle: RSS ${mib(freshIdle.rss)} MiB, tree ${mib(freshIdle.treeRss)} MiB, ${heapText(freshHeap)}`);
    const soloCreate: number[] = [];
    const soloDelete: number[] = [];
    const soloCpu: number[] = [];
    for (let index = 0; index < runs; index++) {
      const cpuBefore = cpuSeconds(controller.pid);
      const started = performance.now();
      await this.applyDeployments([kluctlDeployment('solo', fleetUrl, { interval: '10m', args: { instance: 'solo' } })]);
      await this.waitAllReady(['solo'], 180_000);
      soloCreate.push((performance.now() - started) / 1000);
      soloCpu.push(cpuSeconds(controller.pid) - cpuBefore);
      soloDelete.push(await timed(() => this.deleteAllDeployments()));
      await this.expectNoConfigMaps();
      this.report(
        `one deployment alone ${index + 1}/${runs}: Ready after ${last(soloCreate).toFixed(2)} s (${last(soloCpu).toFixed(2)} CPU s), deleted in ${last(soloDelete).toFixed(2)} s`,
      );
    }
    await sleep(5_000);
    const idleBefore = await sampleFor(controller.pid, 3_000);
    const heapBefore = await heapOf(controller);
    this.report(`idle before the ${FLEET}: RSS ${mib(idleBefore.rss)} MiB, tree ${mib(idleBefore.treeRss)} MiB, ${heapText(heapBefore)}`);

    const names = Array.from({ length: FLEET }, (_, index) => `fleet-${String(index).padStart(String(FLEET - 1).length, '0')}`);
    const sampler = new RssSampler(controller.pid, 200);
    const cpuBefore = cpuSeconds(controller.pid);
    const started = performance.now();
    await this.applyDeployments(names.map((name) => kluctlDeployment(name, fleetUrl, { interval: '10m', args: { instance: name } })));
    await this.waitAllReady(names, 20 * 60_000, (ready) =>
      this.report(
        `${ready}/${FLEET} Ready after ${((performance.now() - started) / 1000).toFixed(0)} s, RSS ${mib(sampler.current.rss)} MiB (tree ${mib(sampler.current.treeRss)} MiB)`,
      ),
    );
    const fleetCreate = (performance.now() - started) / 1000;
    const fleetCpu = cpuSeconds(controller.pid) - cpuBefore;
    const peak = sampler.stop();
    this.report(
      `${FLEET} Ready after ${fleetCreate.toFixed(2)} s, ${fleetCpu.toFixed(1)} CPU s; peak RSS ${mib(peak.rss)} MiB, tree ${mib(peak.treeRss)} MiB`,
    );
    await this.expectConfigMaps(2 * FLEET);
    await sleep(10_000);
    const idleAfter = await sampleFor(controller.pid, 3_000);
    const heapAfter = await heapOf(controller);
    this.report(`idle with ${FLEET} Ready: RSS ${mib(idleAfter.rss)} MiB, tree ${mib(idleAfter.treeRss)} MiB, ${heapText(heapAfter)}`);
    this.report(`deleting the ${FLEET} (delete: true)`);
    const fleetDelete = await timed(() => this.deleteAllDeployments());
    await this.expectNoConfigMaps();
    this.report(`${FLEET} deleted, with their objects, in ${fleetDelete.toFixed(2)} s`);
    await sleep(10_000);
    const idleDeleted = await sampleFor(controller.pid, 3_000);
    const heapDeleted = await heapOf(controller);
    this.report(
      `idle after deleting the ${FLEET}: RSS ${mib(idleDeleted.rss)} MiB, tree ${mib(idleDeleted.treeRss)} MiB, ${heapText(heapDeleted)}`,
    );

    const cycles = this.options.cycles ?? DEFAULT_CYCLES;
    let idleCycled = idleDeleted;
    for (let cycle = 2; cycle <= cycles; cycle++) {
      await this.applyDeployments(names.map((name) => kluctlDeployment(name, fleetUrl, { interval: '10m', args: { instance: name } })));
      await this.waitAllReady(names, 20 * 60_000);
      await this.deleteAllDeployments();
      await this.expectNoConfigMaps();
      await sleep(10_000);
      idleCycled = await sampleFor(controller.pid, 3_000);
      this.report(
        `create/delete cycle ${cycle}/${cycles} of the ${FLEET}: idle after deleting RSS ${mib(idleCycled.rss)} MiB, tree ${mib(idleCycled.treeRss)} MiB, ${heapText(await heapOf(controller))}`,
      );
    }

    this.notes.push(
      `no-op reconcile as the controller reports it (reconcileRequestResult endTime - startTime): median ${median(reportedDurations).toFixed(2)} s`,
      `fresh controller idle (before any deployment): RSS ${mib(freshIdle.rss)} MiB, tree ${mib(freshIdle.treeRss)} MiB`,
      `controller memory from /metrics (no forced GC): fresh ${heapText(freshHeap)}; idle before the ${FLEET} ${heapText(heapBefore)}; idle with ${FLEET} Ready ${heapText(heapAfter)}; after deleting them ${heapText(heapDeleted)}`,
      `controller CPU for ${FLEET} deployments: ${fleetCpu.toFixed(1)} CPU s in ${fleetCreate.toFixed(1)} s wall (${os.availableParallelism()} cores), ${fleetFlags.length > 0 ? fleetFlags.join(' ') : 'default flags (--concurrency 4, --kube-api-qps 50)'}`,
    );
    const mibOf = (bytes: number) => bytes / 1024 / 1024;
    const rows: BenchRow[] = [
      {
        measurement: 'no-op reconcile',
        value: median(reconcileSamples),
        baseline: median(cliNoop),
        unit: 's',
        baselineIs: 'no-op gantry deploy (CLI)',
      },
      {
        measurement: 'commit→applied, webhook',
        value: median(webhook),
        baseline: median(cliChange),
        unit: 's',
        baselineIs: 'gantry deploy of the change (CLI)',
      },
      {
        measurement: `commit→applied, polling ${POLL_INTERVAL}`,
        value: median(polling),
        baseline: POLL_INTERVAL_S,
        unit: 's',
        baselineIs: 'spec.interval',
      },
      {
        measurement: `${FLEET} deployments until Ready`,
        value: fleetCreate,
        baseline: median(soloCreate),
        unit: 's',
        baselineIs: 'one deployment alone',
      },
      {
        measurement: `${FLEET} deployments, CPU`,
        value: fleetCpu,
        baseline: median(soloCpu),
        unit: 'CPU s',
        baselineIs: 'one deployment alone',
      },
      {
        measurement: `${FLEET} deployments deleted`,
        value: fleetDelete,
        baseline: median(soloDelete),
        unit: 's',
        baselineIs: 'one deployment alone',
      },
      {
        measurement: `RSS peak, ${FLEET} deploying`,
        value: mibOf(peak.rss),
        baseline: mibOf(idleBefore.rss),
        unit: 'MiB',
        baselineIs: 'idle RSS before',
      },
      {
        measurement: `RSS idle, ${FLEET} Ready`,
        value: mibOf(idleAfter.rss),
        baseline: mibOf(idleBefore.rss),
        unit: 'MiB',
        baselineIs: 'idle RSS before',
      },
      {
        measurement: `tree RSS peak, ${FLEET}`,
        value: mibOf(peak.treeRss),
        baseline: mibOf(idleBefore.treeRss),
        unit: 'MiB',
        baselineIs: 'idle tree RSS before',
      },
      {
        measurement: `tree RSS idle, ${FLEET} Ready`,
        value: mibOf(idleAfter.treeRss),
        baseline: mibOf(idleBefore.treeRss),
        unit: 'MiB',
        baselineIs: 'idle tree RSS before',
      },
      {
        measurement: `RSS idle, ${FLEET} deleted`,
        value: mibOf(idleDeleted.rss),
        baseline: mibOf(idleBefore.rss),
        unit: 'MiB',
        baselineIs: 'idle RSS before',
      },
      {
        measurement: `RSS idle, ${cycles} cycles of ${FLEET}`,
        value: mibOf(idleCycled.rss),
        baseline: mibOf(idleDeleted.rss),
        unit: 'MiB',
        baselineIs: 'after the first cycle',
      },
    ];
    return { title: `gantry controller run, ${TARGET} project of two ConfigMaps; median of ${runs} run(s)`, rows, notes: this.notes };
  }

  /** Removes everything the bench created; never throws (it runs in a finally). */
  async cleanUp(): Promise<void> {
    const step = async (what: string, action: () => Promise<unknown>) => {
      try {
        await action();
      } catch (error) {
        this.report(`cleanup: ${what} failed: ${(error as Error).message.split('\n')[0]}`);
      }
    };
    this.report('cleaning up');
    if (this.controller?.running()) await step('deleting the KluctlDeployments', () => this.deleteAllDeployments());
    await step('stopping the controller', async () => {
      if (this.controller?.running() === false) return;
      await this.controller?.stop();
    });
    // Without a controller, finalizers of deployments left over would block the namespace's deletion forever.
    await step('removing leftover finalizers', async () => {
      const left = await this.listDeployments();
      for (const item of left) {
        await this.client.request('PATCH', `${KD_PATH}/${item.metadata.name}`, {
          body: { metadata: { finalizers: null } },
          contentType: 'application/merge-patch+json',
        });
      }
    });
    await step('deleting the namespaces', () =>
      this.kubectl(['delete', 'namespace', CONTROLLER_NS, WORKLOAD_NS, RESULTS_NS, '--ignore-not-found', '--wait=true', '--timeout=5m']),
    );
    await step('stopping the git server', async () => this.server?.close());
    await step('removing the cgroup', async () => this.limit?.remove());
    if (this.scratch) await step('removing the temporary folder', () => rm(this.scratch, { recursive: true, force: true }));
  }

  private async startController(gitRefreshInterval: string, flags: string[] = []): Promise<RunningController> {
    this.report(`starting gantry controller run (--git-refresh-interval ${gitRefreshInterval} ${flags.join(' ')})`);
    const controller = await startController(
      ['--namespace', CONTROLLER_NS, '--command-result-namespace', RESULTS_NS, '--git-refresh-interval', gitRefreshInterval, ...flags],
      this.options.env,
      undefined,
      { launcher: (await this.memoryLimit())?.launcher },
    );
    this.report(`controller pid ${controller.pid} ready`);
    return controller;
  }

  /**
   * The controller container's memory limit from the chart's values (controller.resources.limits.memory), as a
   * cgroup the controller runs in, so Node sizes its heap as it does in the cluster; undefined, with a note, where
   * the bench may not make one (then the controller runs unconstrained and its RSS is higher than in a Pod).
   */
  private async memoryLimit(): Promise<MemoryLimit | undefined> {
    if (this.limit) return this.limit;
    const file = path.join(REPO_ROOT, 'charts/gantry/values.yaml');
    const values = parseYaml(await readFile(file, 'utf8'), file) as {
      controller: { resources: { limits: { memory: string } } };
    };
    const quantity = values.controller.resources.limits.memory;
    const limit = await memoryLimit(`gantry-bench-controller-${process.pid}`, bytesOf(quantity));
    if ('unavailable' in limit) {
      this.notes.push(`controller without the chart's memory limit (${quantity}): ${limit.unavailable}`);
      this.report(`not imposing the chart's memory limit: ${limit.unavailable}`);
      return undefined;
    }
    this.notes.push(`controller in a cgroup with the chart's memory limit, ${quantity}, as in its Pod`);
    this.limit = limit;
    return limit;
  }

  /** Requests a reconcile and waits for its answer; returns the seconds seen here and those the controller reports. */
  private async noopReconcile(name: string, index: number): Promise<{ seconds: number; reported: number }> {
    const before = await this.getDeployment(name);
    const request = `bench-${Date.now()}-${index}`;
    const started = performance.now();
    await this.client.request('PATCH', `${KD_PATH}/${name}`, {
      body: { metadata: { annotations: { 'kluctl.io/request-reconcile': request } } },
      contentType: 'application/merge-patch+json',
    });
    const deployment = await this.poll(
      async () => {
        const current = await this.getDeployment(name);
        const result = current?.status?.reconcileRequestResult;
        return result?.request?.requestValue === request && result.endTime ? current : undefined;
      },
      120_000,
      `the answer to reconcile request ${request} of ${name}`,
    );
    const seconds = (performance.now() - started) / 1000;
    const result = deployment.status.reconcileRequestResult;
    if (deployment.status.lastDeployResult?.id !== before?.status?.lastDeployResult?.id)
      throw new Error(`the reconcile of ${name} deployed again: not a no-op`);
    if (result.commandError) throw new Error(`the reconcile of ${name} failed: ${result.commandError}`);
    return { seconds, reported: (Date.parse(result.endTime) - Date.parse(result.startTime)) / 1000 };
  }

  /** Posts a GitHub push event for `url`, signed with the controller's webhook secret. */
  private async announcePush(url: string): Promise<Response> {
    return announceGithubPush(this.controller!.webhookUrl, url, WEBHOOK_SECRET);
  }

  private async gantryDeploy(projectDir: string): Promise<void> {
    const context = (await this.kubectl(['config', 'current-context'])).trim();
    await run(
      NODE,
      [GANTRY, 'deploy', '-t', TARGET, '--project-dir', projectDir, '-a', 'instance=cli', '--context', context, '-o', 'json'],
      { env: { ...this.options.env, KUBECONFIG: this.options.kubeconfig } },
    );
  }

  private async applyDeployments(objects: Array<Record<string, unknown>>): Promise<void> {
    const list = { apiVersion: 'v1', kind: 'List', items: objects };
    await this.kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=gantry-bench', '-f', '-'], JSON.stringify(list));
  }

  /** Waits until every named deployment is Ready for its current generation. */
  private async waitAllReady(names: string[], timeoutMs: number, progress?: (ready: number) => void): Promise<void> {
    let lastReport = performance.now();
    await this.poll(
      async () => {
        const items = await this.listDeployments();
        const mine = items.filter((item) => names.includes(item.metadata.name));
        const failed = mine.find(hasFailed);
        if (failed)
          throw new FatalError(
            `${failed.metadata.name} failed: ${JSON.stringify(readyOf(failed))}\ncontroller log:\n${await logTail(this.controller)}`,
          );
        const ready = mine.filter(isReady).length;
        if (progress && performance.now() - lastReport >= 5_000) {
          lastReport = performance.now();
          progress(ready);
        }
        return ready === names.length;
      },
      timeoutMs,
      async () => {
        const items = await this.listDeployments().catch(() => []);
        const notReady = items.filter((item) => names.includes(item.metadata.name) && !isReady(item));
        return `${names.length} deployment(s) Ready; not yet: ${notReady
          .slice(0, 3)
          .map((item) => `${item.metadata.name} ${JSON.stringify(readyOf(item))}`)
          .join(', ')}`;
      },
      names.length > 100 ? 2_000 : names.length > 1 ? 1_000 : 20,
    );
  }

  private async waitConfigMapValue(name: string, value: string, timeoutMs: number): Promise<void> {
    await this.poll(
      async () => {
        const configMap = await this.client.request<{ data?: Record<string, string> }>('GET', `${CM_PATH}/${name}`).catch(notFound);
        return configMap?.data?.['value'] === value;
      },
      timeoutMs,
      `ConfigMap ${WORKLOAD_NS}/${name} value=${value}`,
    );
  }

  private async expectConfigMaps(count: number): Promise<void> {
    const found = await this.benchConfigMaps();
    if (found !== count) throw new Error(`expected ${count} bench ConfigMaps in ${WORKLOAD_NS}, found ${found}`);
  }

  private async expectNoConfigMaps(): Promise<void> {
    await this.poll(async () => (await this.benchConfigMaps()) === 0, 60_000, `the bench ConfigMaps of the deleted deployments to be gone`);
  }

  /** ConfigMaps the controller deployed (the CLI's instance excluded). */
  private async benchConfigMaps(): Promise<number> {
    const list = await this.client.request<{ items: Array<{ metadata: { name: string } }> }>('GET', CM_PATH);
    return list.items.filter((item) => item.metadata.name.startsWith('bench-') && !item.metadata.name.startsWith('bench-cli')).length;
  }

  /** Deletes every KluctlDeployment of the bench namespace and waits until they (and so their objects) are gone. */
  /**
   * Deletes every KluctlDeployment of the bench in one request (deletecollection, so a thousand cost the client
   * nothing) and waits until they are gone, i.e. until the controller has deleted their objects and removed its
   * finalizers.
   */
  private async deleteAllDeployments(): Promise<void> {
    await this.client.request('DELETE', KD_PATH);
    await this.poll(
      async () => (await this.countDeployments()) === 0,
      10 * 60_000,
      async () => `the KluctlDeployments to be deleted (${await this.countDeployments().catch(() => '?')} left)`,
      250,
    );
  }

  private async getDeployment(name: string): Promise<Record<string, any> | undefined> {
    return this.client.request<Record<string, any>>('GET', `${KD_PATH}/${name}`).catch(notFound);
  }

  /** How many KluctlDeployments exist, from a list of at most one (so polling it costs the API server little). */
  private async countDeployments(): Promise<number> {
    const list = await this.client.request<{ items: unknown[]; metadata?: { remainingItemCount?: number } }>('GET', KD_PATH, {
      query: { limit: '1' },
    });
    return list.items.length + (list.metadata?.remainingItemCount ?? 0);
  }

  private async listDeployments(): Promise<Array<Record<string, any>>> {
    return (await this.client.request<{ items: Array<Record<string, any>> }>('GET', KD_PATH)).items;
  }

  private async kubectl(args: string[], input?: string): Promise<string> {
    return (await run(this.options.kubectl, args, { env: { KUBECONFIG: this.options.kubeconfig }, input })).stdout;
  }

  /**
   * Calls `check` every `everyMs` until it returns something truthy.
   * @throws Error naming what was awaited (with the controller's last log lines) after `timeoutMs`.
   */
  private async poll<T>(
    check: () => Promise<T | undefined | false | null>,
    timeoutMs: number,
    describe: string | (() => Promise<string>),
    everyMs = 20,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let lastError: unknown;
    for (;;) {
      try {
        const value = await check();
        if (value) return value;
      } catch (error) {
        if (error instanceof FatalError) throw error;
        lastError = error;
      }
      if (this.controller && !this.controller.running()) throw new Error(`the controller exited:\n${await logTail(this.controller)}`);
      if (Date.now() > deadline) {
        const what = typeof describe === 'string' ? describe : await describe();
        const cause = lastError ? ` (last error: ${(lastError as Error).message})` : '';
        throw new Error(
          `timed out after ${timeoutMs / 1000} s waiting for ${what}${cause}\ncontroller log:\n${await logTail(this.controller)}`,
        );
      }
      await sleep(everyMs);
    }
  }
}

/** Posts a GitHub push event of branch main of repository `url` to `hook`, signed with `secret`. */
export async function announceGithubPush(hook: string, url: string, secret: string): Promise<Response> {
  const body = JSON.stringify({ ref: 'refs/heads/main', repository: { clone_url: url, html_url: url } });
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  return fetch(hook, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signature },
  });
}

/** The bench's Kluctl project; `value` is the data of ConfigMap bench-<instance>. */
function projectFiles(value: string): Record<string, string> {
  return {
    '.kluctl.yaml': [
      'discriminator: gantry-bench-{{ args.instance }}',
      'args:',
      '  - name: instance',
      'targets:',
      `  - name: ${TARGET}`,
      '',
    ].join('\n'),
    'deployment.yaml': 'deployments:\n  - path: app\n',
    'app/configmaps.yaml': [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: bench-{{ args.instance }}',
      `  namespace: ${WORKLOAD_NS}`,
      'data:',
      `  value: "${value}"`,
      '---',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: bench-{{ args.instance }}-static',
      `  namespace: ${WORKLOAD_NS}`,
      'data:',
      '  instance: "{{ args.instance }}"',
      '',
    ].join('\n'),
  };
}

function kluctlDeployment(name: string, url: string, spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: API,
    kind: 'KluctlDeployment',
    metadata: { name, namespace: CONTROLLER_NS },
    spec: {
      interval: '10m',
      timeout: '2m',
      source: { git: { url } },
      target: TARGET,
      context: 'default',
      prune: true,
      delete: true,
      args: { instance: name },
      ...spec,
    },
  };
}

function readyOf(deployment: Record<string, any>): { status: string; reason: string; message: string } | undefined {
  return (deployment.status?.conditions ?? []).find((condition: { type: string }) => condition.type === 'Ready');
}

function isReady(deployment: Record<string, any>): boolean {
  return readyOf(deployment)?.status === 'True' && deployment.status?.observedGeneration === deployment.metadata.generation;
}

/** Ready=False for the current generation: the reconcile of this spec failed (the bench waits no longer). */
function hasFailed(deployment: Record<string, any>): boolean {
  return readyOf(deployment)?.status === 'False' && deployment.status?.observedGeneration === deployment.metadata.generation;
}

/** A failure `poll` passes on at once instead of retrying. */
class FatalError extends Error {}

/** A bare repository below the git server's root and a work tree to commit into. */
class BenchRepo {
  private readonly work: string;

  private constructor(work: string) {
    this.work = work;
  }

  static async create(root: string, name: string, files: Record<string, string>): Promise<BenchRepo> {
    const remote = path.join(root, `${name}.git`);
    const work = path.join(root, `${name}-work`);
    await git(['init', '--quiet', '--bare', '--initial-branch=main', remote]);
    await git(['init', '--quiet', '--initial-branch=main', work]);
    await git(['remote', 'add', 'origin', remote], { cwd: work });
    const repo = new BenchRepo(work);
    await repo.commit(files, 'initial');
    return repo;
  }

  /** Writes `files`, commits and pushes them. */
  async commit(files: Record<string, string>, message: string): Promise<void> {
    await writeFiles(this.work, files);
    const as = ['-c', 'user.name=Gantry Bench', '-c', 'user.email=bench@gantry.dev'];
    await git([...as, 'add', '--all'], { cwd: this.work });
    await git([...as, 'commit', '--quiet', '--allow-empty', '-m', message], { cwd: this.work });
    await git(['push', '--quiet', 'origin', 'HEAD:main'], { cwd: this.work });
  }
}

/** The V8 heap in use and allocated, and memory outside it (Buffers), from prom-client's default metrics. */
async function heapOf(controller: RunningController): Promise<Heap> {
  const metrics = await (await fetch(controller.metricsUrl)).text();
  const value = (name: string) => {
    const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics);
    if (!match) throw new Error(`${controller.metricsUrl} has no ${name}`);
    return Number(match[1]);
  };
  return {
    used: value('nodejs_heap_size_used_bytes'),
    total: value('nodejs_heap_size_total_bytes'),
    external: value('nodejs_external_memory_bytes'),
  };
}

/** The end of the controller's log, for error messages. */
async function logTail(controller: RunningController | undefined): Promise<string> {
  return ((await controller?.log().catch(() => '')) ?? '').slice(-4000);
}

interface Heap {
  used: number;
  total: number;
  external: number;
}

function heapText(heap: Heap): string {
  return `heap used ${mib(heap.used)} of ${mib(heap.total)} MiB, external ${mib(heap.external)} MiB`;
}

async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), content);
  }
}

function notFound(error: unknown): undefined {
  if (error instanceof KubeApiError && error.status === 404) return undefined;
  throw error;
}

/** Bytes of a Kubernetes memory quantity in Mi or Gi, as the chart's values write them. */
function bytesOf(quantity: string): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!match) throw new Error(`unexpected memory quantity '${quantity}' in charts/gantry/values.yaml (want Mi or Gi)`);
  return Number(match[1]) * 1024 ** (match[2] === 'Gi' ? 3 : 2);
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return (performance.now() - started) / 1000;
}

function last(values: number[]): number {
  return values[values.length - 1] ?? Number.NaN;
}

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(0);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
