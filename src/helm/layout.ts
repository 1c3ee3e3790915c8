/**
 * Where pulled charts live, in kluctl's layout (pkg/helm/chart.go), both under a project's `.helm-charts` and in
 * the cache for on-demand pulls:
 *   Helm repository  `<scheme>[_<port>]_<host>/<repo path>/<chart>/<version>`   (port left out when it is the default)
 *   OCI registry     `oci[_<port>]_<host>/<path incl. chart>/<version>`
 *   git              `git_<scheme>[_<port>]_<host>/<repo path without .git>/<subDir>/<ref>`   (ref: `refs/tags/v1`,
 *                    `refs/heads/main`, or `HEAD` for the default branch and for commits, as Kluctl names them)
 * Every path part is lower-cased, as Kluctl does.
 */
import path from 'node:path';
import { isDirectory, isInside } from '../files.ts';
import { gitUrlPath, type RemoteChartSource } from './chart-config.ts';
import type { GitRef } from '../source/git-cache.ts';

/** Name of the folder pre-pulled charts are kept in. */
export const HELM_CHARTS_DIR = '.helm-charts';

/**
 * The folder holding every pulled version of the chart (a git chart's refs sit below it).
 * @throws Error when the URL is not usable or the result would leave `baseDir`.
 */
export function chartDir(source: RemoteChartSource, baseDir: string): string {
  const dir = path.join(baseDir, ...chartPathParts(source));
  if (!isInside(baseDir, dir)) throw new Error(`chart location of ${source.kind === 'git' ? source.url : source.repo} leaves ${baseDir}`);
  return dir;
}

/** The folder of the source's version: `chartDir` plus the version (or git ref name). */
export function versionDir(source: RemoteChartSource, baseDir: string): string {
  const dir = path.join(chartDir(source, baseDir), ...versionName(source).split('/'));
  if (!isInside(baseDir, dir)) throw new Error(`chart version '${versionName(source)}' leaves ${baseDir}`);
  return dir;
}

/** The version part of the layout: the chart version, or kluctl's name of the git ref. */
export function versionName(source: RemoteChartSource): string {
  return source.kind === 'git' ? gitRefName(source.ref) : source.version;
}

/** Kluctl's ChartVersion.String() of a git ref: `refs/tags/<t>`, `refs/heads/<b>`, else `HEAD`. */
export function gitRefName(ref: GitRef): string {
  if (ref.tag) return `refs/tags/${ref.tag}`;
  if (ref.branch) return `refs/heads/${ref.branch}`;
  return 'HEAD';
}

function chartPathParts(source: RemoteChartSource): string[] {
  if (source.kind === 'git') {
    const url = parseGitUrl(source.url);
    const repoPath = url.pathname.toLowerCase().replace(/\/+$/, '');
    const trimmed = path.posix.basename(repoPath) === '.git' ? repoPath : repoPath.replace(/\.git$/, '');
    const port = url.port && url.port !== DEFAULT_PORTS[url.scheme] ? `_${url.port}` : '';
    return [`git_${url.scheme}${port}_${url.hostname.toLowerCase()}`, ...slashParts(trimmed), ...slashParts(source.subDir.toLowerCase())];
  }
  const url = new URL(source.repo);
  const scheme = url.protocol.replace(/:$/, '');
  // Node leaves `port` empty for a scheme's default port; oci has none, so any port given is kept.
  const port = url.port ? `_${url.port}` : '';
  const parts = [`${scheme}${port}_${url.hostname.toLowerCase()}`, ...slashParts(url.pathname.toLowerCase())];
  return source.kind === 'oci' ? parts : [...parts, source.chartName];
}

const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443', ssh: '22', git: '22', 'git+ssh': '22', ftp: '21', rsync: '873' };

/** scheme, host, port and path of a git URL; scp-like `git@host:org/repo` is ssh. */
function parseGitUrl(url: string): { scheme: string; hostname: string; port: string; pathname: string } {
  const scp = /^[^/@:]+@([^/:]+):/.exec(url);
  if (scp) return { scheme: 'ssh', hostname: scp[1] as string, port: '', pathname: gitUrlPath(url) };
  const parsed = new URL(url);
  return {
    scheme: parsed.protocol.replace(/:$/, ''),
    hostname: parsed.hostname,
    port: parsed.port,
    pathname: decodeURIComponent(parsed.pathname),
  };
}

function slashParts(text: string): string[] {
  return text.split('/').filter(Boolean);
}

/**
 * The `.helm-charts` folder nearest to `dir`, looking upwards until `root` (kluctl's deployment item rule).
 * @returns undefined when there is none.
 */
export async function nearestHelmChartsDir(dir: string, root: string): Promise<string | undefined> {
  for (let current = dir; isInside(root, current); current = path.dirname(current)) {
    if (await isDirectory(path.join(current, HELM_CHARTS_DIR))) return path.join(current, HELM_CHARTS_DIR);
    if (current === root) break;
  }
  return undefined;
}
