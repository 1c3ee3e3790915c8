/**
 * A registry chart downloaded by Gantry itself, through a given undici dispatcher, instead of by `helm pull`: the
 * fleet server checks every connection it makes for a user's chart (server/outbound.ts), which a helm process's
 * connections escape. Done as Helm does it:
 * - a Helm repository (helm's repo.FindChartInRepoURL and ChartDownloader): the version's first URL in index.yaml,
 *   relative to the repository URL, with the repository's credentials sent only to the repository's own origin
 *   (Helm's default without --pass-credentials);
 * - an OCI registry (helm's registry client): the manifest of the version's tag (`+` written `_`), and its layer of
 *   the Helm chart media type.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { extract } from 'tar';
import type { Dispatcher } from 'undici';
import { OciClient, parseOciUrl } from '../source/oci-client.ts';
import type { RegistryChartSource } from './chart-config.ts';
import { basicAuthorization, helmRepoEntries, request } from './versions.ts';

/** The media type of a chart's archive in an OCI registry (helm's registry.ChartLayerMediaType). */
const CHART_LAYER_MEDIA_TYPE = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';

/**
 * Downloads the chart `source` names through `egress` and unpacks it into `scratch`.
 * @returns the chart's folder.
 * @throws Error naming the repository or the URL when the version is not there, or cannot be fetched or unpacked.
 */
export async function downloadChart(source: RegistryChartSource, scratch: string, egress: Dispatcher): Promise<string> {
  const archive = path.join(scratch, 'chart.tgz');
  const where = source.kind === 'oci' ? await fromRegistry(source, archive, egress) : await fromRepository(source, archive, egress);
  return await unpackChart(archive, path.join(scratch, 'chart'), where);
}

/** Writes the archive of a Helm repository's chart to `archive`; returns its URL. */
async function fromRepository(source: RegistryChartSource, archive: string, egress: Dispatcher): Promise<string> {
  const entries = await helmRepoEntries(source.repo, source.chartName, source.credentials, egress);
  const urls = entries.find((entry) => String(entry['version']) === source.version)?.['urls'];
  const first: unknown = Array.isArray(urls) ? urls[0] : undefined;
  if (typeof first !== 'string')
    throw new Error(`Helm repository ${source.repo} lists no URL of version ${source.version} of chart '${source.chartName}'`);
  const url = new URL(first, `${source.repo}/`);
  const sameOrigin = url.origin === new URL(source.repo).origin;
  const response = await request(url.href, sameOrigin ? basicAuthorization(source.credentials) : undefined, egress);
  if (!response.ok || !response.body) throw new Error(`${url.href} answered ${response.status} ${response.statusText}`);
  await pipeline(Readable.fromWeb(response.body as ReadableStream), createWriteStream(archive));
  return url.href;
}

/** Writes the chart layer of an OCI registry's chart to `archive`; returns its oci:// reference. */
async function fromRegistry(source: RegistryChartSource, archive: string, egress: Dispatcher): Promise<string> {
  const tag = source.version.replaceAll('+', '_');
  const client = new OciClient(parseOciUrl(`${source.repo}:${tag}`), undefined, 'pull', undefined, egress);
  try {
    const { manifest } = await client.manifest(tag);
    const layer = manifest.layers.find((candidate) => candidate.mediaType === CHART_LAYER_MEDIA_TYPE);
    if (!layer) throw new Error(`${source.repo}:${tag} holds no Helm chart (no layer of ${CHART_LAYER_MEDIA_TYPE})`);
    await client.downloadBlob(layer.digest, archive);
    return `${source.repo}:${tag}`;
  } finally {
    await client.close();
  }
}

/**
 * Unpacks a chart archive into `dir`: only files and folders (a chart archive holds nothing else: helm package
 * follows links). @returns the chart's folder. @throws Error naming `where` when it is no chart archive.
 */
async function unpackChart(archive: string, dir: string, where: string): Promise<string> {
  await mkdir(dir);
  await extract({
    file: archive,
    cwd: dir,
    strict: true,
    filter: (_path, entry) => 'type' in entry && (entry.type === 'File' || entry.type === 'Directory'),
  }).catch((error: Error) => {
    throw new Error(`${where} is not a chart archive: ${error.message}`);
  });
  const [folder] = await readdir(dir);
  if (!folder) throw new Error(`${where} holds no chart`);
  return path.join(dir, folder);
}
