/**
 * Comparing git repository URLs: the same repository is written many ways (https with or without credentials and
 * `.git`, `ssh://`, scp-like `git@host:org/repo`), and a push webhook must find the KluctlDeployments whose source
 * is that repository whichever way each names it. The normal form follows kluctl's repo keys
 * (lib/git/types/git_url.go Normalize): lower-case host and path, default ports dropped, no trailing `.git` or
 * slashes; here the scheme and credentials are dropped too, so an ssh URL and an https URL of one host match.
 */
import type { KluctlDeployment } from '../api/kluctl-deployment.ts';

/** Ports a URL of that scheme has when it names none (kluctl's NormalizePort, with git:// at its own 9418). */
const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443', ssh: '22', 'git+ssh': '22', 'ssh+git': '22', git: '9418' };

/** `[user@]host:path`, git's scp-like syntax: no scheme, and no slash before the first colon. */
const SCP_LIKE = /^(?:[^@/]+@)?([^/:]+):(?!\/\/)(.*)$/;

/**
 * The comparable form of a git URL: `host[:port]/path` (`/path` for file URLs and local paths), lower-case,
 * without scheme, credentials, default port, trailing `.git` or slashes.
 * Examples: `https://user:pw@GitHub.com/Org/Repo.git/`, `ssh://git@github.com:22/org/repo` and
 * `git@github.com:org/repo.git` all give `github.com/org/repo`.
 * @returns undefined for text that is no URL at all (empty, or unparsable).
 */
export function normalizeRepoUrl(url: string): string | undefined {
  const text = url.trim();
  if (text === '') return undefined;
  const location = text.includes('://') ? urlLocation(text) : scpLocation(text);
  if (!location) return undefined;
  return `${location.host}${trimRepoPath(location.path)}`.toLowerCase();
}

/**
 * The deployments whose git source (spec.source.git.url, or the deprecated spec.source.url) is one of the
 * repositories `urls` name, compared in normal form. Deployments with an OCI source or a Flux `sourceRef` never
 * match: their repository is not known from the spec.
 */
export function matchingDeployments<T extends Pick<KluctlDeployment, 'spec'>>(deployments: readonly T[], urls: readonly string[]): T[] {
  const wanted = new Set(urls.map(normalizeRepoUrl).filter((key): key is string => key !== undefined));
  return deployments.filter((deployment) => {
    const source = deployment.spec.source;
    const url = source?.git?.url ?? source?.url;
    const key = url === undefined ? undefined : normalizeRepoUrl(url);
    return key !== undefined && wanted.has(key);
  });
}

function urlLocation(text: string): { host: string; path: string } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    return undefined;
  }
  const scheme = parsed.protocol.replace(/:$/, '');
  const port = parsed.port && parsed.port !== DEFAULT_PORTS[scheme] ? `:${parsed.port}` : '';
  return { host: `${parsed.hostname}${port}`, path: parsed.pathname };
}

function scpLocation(text: string): { host: string; path: string } | undefined {
  const match = SCP_LIKE.exec(text);
  // Without a colon it is a local path, which git accepts as a repository URL too.
  if (!match) return text.startsWith('/') ? { host: '', path: text } : undefined;
  return { host: match[1] as string, path: `/${match[2] as string}` };
}

function trimRepoPath(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  // A repository folder that is itself named `.git` (e.g. `/src/project/.git`) keeps its name, as in kluctl.
  const withoutSuffix = trimmed.endsWith('/.git') ? trimmed : trimmed.replace(/\.git$/i, '');
  return withoutSuffix.replace(/\/+$/, '').replace(/^\/*/, '/').replace(/^\/$/, '');
}
