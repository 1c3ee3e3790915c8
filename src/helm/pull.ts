/**
 * Pulling a chart version into a folder (kluctl's Chart.Pull): Helm repository and OCI charts with `helm pull`,
 * git charts from the shared git cache (with a `.git-info.yaml` recording the commit, as Kluctl writes it). And
 * the cache of on-demand pulls for charts with `skipPrePull` (kluctl's PullCached), re-pulled once a day.
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { parseYaml, toYaml } from '../yaml.ts';
import { isFile } from '../files.ts';
import { isPlainObject } from '../values.ts';
import { usesPlainHttp } from '../source/oci-client.ts';
import { describeChart, describeVersion, type GitChartSource, type RegistryChartSource, type RemoteChartSource } from './chart-config.ts';
import { downloadChart } from './chart-download.ts';
import { runHelm, type ChartTools } from './helm-cli.ts';
import { versionDir } from './layout.ts';
import { messageOf } from '../problems.ts';

/** File a pulled git chart records its ref and commit in (kluctl's CheckoutInfo). */
export const GIT_INFO_FILE = '.git-info.yaml';

/** Charts pulled on demand are pulled again after this long, as Kluctl does. */
const CACHE_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * Replaces `destination` with the chart's files at the source's version.
 * @throws Error naming chart and version when the repository, registry or git ref does not have it.
 */
export async function pullChart(source: RemoteChartSource, destination: string, charts: ChartTools): Promise<void> {
  try {
    if (source.kind === 'git') {
      const files = await gitChartFiles(source, charts);
      await replaceFolder(destination, files.dir);
      await writeFile(path.join(destination, GIT_INFO_FILE), toYaml({ checkedOutRef: { ...source.ref }, checkedOutCommit: files.commit }));
      return;
    }
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'gantry-helm-pull-'));
    try {
      const pulled = charts.egress ? await downloadChart(source, scratch, charts.egress) : await pullWithHelm(source, scratch, charts);
      await replaceFolder(destination, pulled);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  } catch (error) {
    throw pullFailure(source, error);
  }
}

function pullFailure(source: RemoteChartSource, error: unknown): Error {
  return new Error(`pulling chart ${describeChart(source)} (${describeVersion(source)}) failed: ${messageOf(error)}`);
}

async function replaceFolder(destination: string, source: string): Promise<void> {
  await rm(destination, { recursive: true, force: true });
  await mkdir(path.dirname(destination), { recursive: true });
  await cp(source, destination, { recursive: true });
}

/** `helm pull --untar` into `scratch`; returns the chart's folder there. */
async function pullWithHelm(source: RegistryChartSource, scratch: string, charts: ChartTools): Promise<string> {
  const untarDir = path.join(scratch, 'chart');
  const home = path.join(scratch, 'home');
  let args: string[];
  if (source.kind === 'oci')
    args = [
      'pull',
      source.repo,
      '--version',
      source.version,
      ...(usesPlainHttp(new URL(source.repo).host, undefined) ? ['--plain-http'] : []),
    ];
  else if (source.credentials) {
    // The password goes through stdin into the scratch home's repository file, never onto a command line.
    const { username, password } = source.credentials;
    await runHelm(
      charts.tools,
      ['repo', 'add', 'source', source.repo, '--username', username, '--password-stdin'],
      home,
      undefined,
      password,
    );
    args = ['pull', `source/${source.chartName}`, '--version', source.version];
  } else args = ['pull', source.chartName, '--repo', source.repo, '--version', source.version];
  await runHelm(charts.tools, [...args, '--untar', '--untardir', untarDir], home);
  const [entry] = await readdir(untarDir);
  if (!entry) throw new Error('helm pull produced no chart');
  return path.join(untarDir, entry);
}

/** The folder of the chart inside the git cache's snapshot of the ref, with the commit it came from. */
async function gitChartFiles(source: GitChartSource, charts: ChartTools): Promise<{ dir: string; commit: string }> {
  const checkout = await charts.git.checkout(source.url, source.ref);
  const dir = path.join(checkout.dir, source.subDir);
  if (!(await isFile(path.join(dir, 'Chart.yaml')))) {
    throw new Error(`git repository ${source.url} has no Chart.yaml in '${source.subDir || '.'}' at commit ${checkout.commit}`);
  }
  return { dir, commit: checkout.commit };
}

/**
 * The chart's folder for a `skipPrePull` chart: git charts straight from the git cache's snapshot (already one
 * immutable folder per commit), registry charts from Gantry's chart cache, pulled when missing, of another
 * version, or older than a day. Pulls of the same chart by concurrent processes are serialized by a lock file.
 */
export async function pullCached(source: RemoteChartSource, charts: ChartTools): Promise<string> {
  if (source.kind === 'git') {
    return gitChartFiles(source, charts).then(
      (files) => files.dir,
      (error: unknown) => Promise.reject(pullFailure(source, error)),
    );
  }
  const dir = versionDir(source, charts.chartsCacheDir);
  await mkdir(path.dirname(dir), { recursive: true });
  const release = await lockfile.lock(dir, {
    realpath: false,
    retries: { retries: 600, minTimeout: 100, maxTimeout: 1000 },
    stale: 120_000,
  });
  try {
    if (await cacheNeedsPull(dir, source.version)) await pullChart(source, dir, charts);
    return dir;
  } finally {
    await release();
  }
}

async function cacheNeedsPull(dir: string, version: string): Promise<boolean> {
  const chartFile = path.join(dir, 'Chart.yaml');
  const info = await stat(chartFile).catch(() => undefined);
  if (!info || Date.now() - info.mtimeMs >= CACHE_MAX_AGE_MS) return true;
  return (await chartYamlVersion(dir)) !== version;
}

/** `version` of the chart's Chart.yaml; undefined when there is no Chart.yaml. */
export async function chartYamlVersion(dir: string): Promise<string | undefined> {
  const file = path.join(dir, 'Chart.yaml');
  if (!(await isFile(file))) return undefined;
  const chart = parseYaml(await readFile(file, 'utf8'), file);
  return isPlainObject(chart) && chart['version'] !== undefined ? String(chart['version']) : undefined;
}

/** The commit a pulled git chart records in its `.git-info.yaml`; undefined when it has none. */
export async function pulledGitCommit(dir: string): Promise<string | undefined> {
  const file = path.join(dir, GIT_INFO_FILE);
  if (!(await isFile(file))) return undefined;
  const info = parseYaml(await readFile(file, 'utf8'), file);
  return isPlainObject(info) && typeof info['checkedOutCommit'] === 'string' ? info['checkedOutCommit'] : undefined;
}
