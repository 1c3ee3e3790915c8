/**
 * The versions a chart source offers (kluctl's Chart.QueryVersions): the entries of a Helm repository's
 * index.yaml, the tags of an OCI repository, the tags of a git repository.
 */
import { fetch, type Dispatcher, type Response } from 'undici';
import { basicAuth, usesPlainHttp } from '../source/oci-client.ts';
import { parseYaml } from '../yaml.ts';
import { isPlainObject } from '../values.ts';
import type { GitCache } from '../source/git-cache.ts';
import type { RemoteChartSource } from './chart-config.ts';

const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Every version string the source has (git: every tag name), unfiltered.
 * @param egress what Helm repositories and OCI registries are reached through (default: undici's global dispatcher).
 * @throws Error naming the repository when it can not be read or does not have the chart.
 */
export async function availableVersions(source: RemoteChartSource, git: GitCache, egress?: Dispatcher): Promise<string[]> {
  switch (source.kind) {
    case 'helm-repo':
      return (await helmRepoEntries(source.repo, source.chartName, source.credentials, egress)).flatMap((entry) =>
        entry['version'] === undefined ? [] : [String(entry['version'])],
      );
    case 'oci':
      return ociTags(source.repo, egress);
    case 'git':
      return git.remoteTags(source.url);
  }
}

/**
 * The chart's entries of the repository's index.yaml (each with `version` and `urls`).
 * @throws Error naming the repository when it can not be read or does not have the chart.
 */
export async function helmRepoEntries(
  repo: string,
  chartName: string,
  credentials: { username: string; password: string } | undefined,
  egress: Dispatcher | undefined,
): Promise<Array<Record<string, unknown>>> {
  const url = `${repo}/index.yaml`;
  const response = await request(url, basicAuthorization(credentials), egress);
  if (!response.ok) throw new Error(`Helm repository ${repo}: ${url} answered ${response.status} ${response.statusText}`);
  const index = parseYaml(await response.text(), url);
  const entries = isPlainObject(index) && isPlainObject(index['entries']) ? index['entries'][chartName] : undefined;
  if (!Array.isArray(entries) || entries.length === 0) throw new Error(`Helm repository ${repo} has no chart '${chartName}'`);
  return entries.filter(isPlainObject);
}

/** The Authorization header of HTTP basic credentials, if any. */
export function basicAuthorization(credentials: { username: string; password: string } | undefined): string | undefined {
  return credentials && basicAuth(credentials.username, credentials.password);
}

/**
 * Tags of an OCI repository through the registry API, with an anonymous token when the registry asks for one
 * (the Docker token flow public registries use). Helm stores `+` of a version as `_` in tags; it is turned back.
 */
async function ociTags(repo: string, egress: Dispatcher | undefined): Promise<string[]> {
  const { host, pathname } = new URL(repo);
  const base = `${usesPlainHttp(host, undefined) ? 'http' : 'https'}://${host}`;
  const tags: string[] = [];
  let next: string | undefined = `${base}/v2${pathname}/tags/list`;
  let authorization: string | undefined;
  while (next) {
    let response = await request(next, authorization, egress);
    if (response.status === 401 && !authorization) {
      authorization = await anonymousToken(response.headers.get('www-authenticate'), repo, egress);
      response = await request(next, authorization, egress);
    }
    if (!response.ok) throw new Error(`OCI registry ${repo}: listing tags answered ${response.status} ${response.statusText}`);
    const body = (await response.json()) as { tags?: string[] | null };
    tags.push(...(body.tags ?? []).map((tag) => tag.replaceAll('_', '+')));
    const link = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
    next = link ? new URL(link, base).toString() : undefined;
  }
  return tags;
}

async function anonymousToken(challenge: string | null, repo: string, egress: Dispatcher | undefined): Promise<string> {
  const params = Object.fromEntries([...(challenge ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((match) => [match[1], match[2]]));
  if (!challenge?.startsWith('Bearer') || !params['realm'])
    throw new Error(`OCI registry ${repo} requires credentials, which this version of Gantry does not pass`);
  const url = new URL(params['realm']);
  for (const key of ['service', 'scope']) if (params[key]) url.searchParams.set(key, params[key]);
  const response = await request(url.toString(), undefined, egress);
  if (!response.ok) throw new Error(`OCI registry ${repo}: token request answered ${response.status} ${response.statusText}`);
  const body = (await response.json()) as { token?: string; access_token?: string };
  return `Bearer ${body.token ?? body.access_token ?? ''}`;
}

/**
 * GET `url` through `egress` (redirects followed as fetch follows them).
 * @throws Error naming the URL and the cause (the refusal of a connection the egress does not allow) when it cannot be
 *   reached.
 */
export async function request(url: string, authorization: string | undefined, egress: Dispatcher | undefined): Promise<Response> {
  try {
    return await fetch(url, {
      headers: authorization ? { authorization } : {},
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      ...(egress ? { dispatcher: egress } : {}),
    });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message;
    throw new Error(`${url} could not be reached: ${cause ?? (error as Error).message}`);
  }
}
