/**
 * A Helm repository's chart downloaded by Gantry itself, through a given undici dispatcher, instead of by `helm pull`:
 * the fleet server checks every connection it makes for a user's chart (server/outbound.ts), which a helm process's
 * connections escape. Done as Helm does it (helm's repo.FindChartInRepoURL and ChartDownloader): the version's first
 * URL in index.yaml, relative to the repository URL, with the repository's credentials sent only to the
 * repository's own origin (Helm's default without --pass-credentials).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { extract } from 'tar';
import type { Dispatcher } from 'undici';
import type { RegistryChartSource } from './chart-config.ts';
import { basicAuthorization, helmRepoEntries, request } from './versions.ts';

/**
 * Downloads the chart `source` names (a `helm-repo` one) through `egress` and unpacks it into `scratch`. Only files
 * and folders are unpacked: a chart archive holds nothing else (helm package follows links).
 * @returns the chart's folder.
 * @throws Error naming the repository or the URL when the version is not listed, or cannot be fetched or unpacked.
 */
export async function downloadChart(source: RegistryChartSource, scratch: string, egress: Dispatcher): Promise<string> {
  const entries = await helmRepoEntries(source.repo, source.chartName, source.credentials, egress);
  const urls = entries.find((entry) => String(entry['version']) === source.version)?.['urls'];
  const first: unknown = Array.isArray(urls) ? urls[0] : undefined;
  if (typeof first !== 'string')
    throw new Error(`Helm repository ${source.repo} lists no URL of version ${source.version} of chart '${source.chartName}'`);
  const url = new URL(first, `${source.repo}/`);
  const sameOrigin = url.origin === new URL(source.repo).origin;
  const response = await request(url.href, sameOrigin ? basicAuthorization(source.credentials) : undefined, egress);
  if (!response.ok || !response.body) throw new Error(`${url.href} answered ${response.status} ${response.statusText}`);
  const archive = path.join(scratch, 'chart.tgz');
  await pipeline(Readable.fromWeb(response.body as ReadableStream), createWriteStream(archive));
  const untarDir = path.join(scratch, 'chart');
  await mkdir(untarDir);
  await extract({
    file: archive,
    cwd: untarDir,
    strict: true,
    filter: (_path, entry) => 'type' in entry && (entry.type === 'File' || entry.type === 'Directory'),
  }).catch((error: Error) => {
    throw new Error(`${url.href} is not a chart archive: ${error.message}`);
  });
  const [folder] = await readdir(untarDir);
  if (!folder) throw new Error(`${url.href} holds no chart`);
  return path.join(untarDir, folder);
}
