/**
 * The git webhook receiver: `POST /hooks/git` takes push events of GitHub, GitLab and Gitea (Forgejo sends Gitea's
 * headers too), checks that they come from someone who knows the shared secret, and hands the pushed repository's
 * URLs to `onPush`, which reconciles the KluctlDeployments of that repository at once instead of at their next
 * interval. Each forge authenticates differently (their webhook docs):
 * - GitHub: `X-GitHub-Event`, `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`;
 * - GitLab: `X-Gitlab-Event`, `X-Gitlab-Token: <the secret itself>`;
 * - Gitea: `X-Gitea-Event`, `X-Gitea-Signature: <hex HMAC-SHA256 of the raw body>`.
 * Answers: 401 for a missing or wrong signature, 202 for a push, 204 for any other event (GitHub's ping, issues…),
 * 400 for a request no forge sent or a push whose body is no JSON.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyTypeProvider,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';

export const WEBHOOK_PATH = '/hooks/git';

/** GitHub caps webhook payloads at 25 MB; a push of many commits is large. */
const BODY_LIMIT_BYTES = 25 * 1024 * 1024;

export type GitProvider = 'github' | 'gitlab' | 'gitea';

type Headers = Record<string, string | string[] | undefined>;

export interface WebhookOptions {
  /** The shared secret configured in the forge's webhook (GitLab calls it the secret token). Must not be empty. */
  secret: string;
  /**
   * Called (not awaited) for each authenticated push with every URL the payload gives for the repository
   * (clone, ssh, web) and the pushed ref (`refs/heads/main`, `refs/tags/v1`), when the payload names one.
   * Errors it throws or rejects with are logged with the request's logger.
   */
  onPush(urls: string[], ref: string | undefined): void | Promise<void>;
}

/**
 * Adds `POST /hooks/git` to `server`, in a plugin scope of its own whose content-type parser keeps the raw body
 * (the HMAC is over the exact bytes sent), so the server's other routes keep fastify's JSON parsing. Call it
 * before the server listens.
 * @throws Error when the secret is empty (an open receiver would let anyone trigger reconciles).
 */
export async function registerWebhookRoutes<Log extends FastifyBaseLogger, Provider extends FastifyTypeProvider>(
  server: FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Log, Provider>,
  options: WebhookOptions,
): Promise<void> {
  if (options.secret === '') throw new Error('the git webhook receiver needs a non-empty secret');
  await server.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT_BYTES }, (_request, body, done) => done(null, body));
    scope.post(WEBHOOK_PATH, async (request, reply) => {
      const answer = handleWebhook(request.headers, request.body, request.log, options);
      return reply.code(answer.status).send(answer.body);
    });
  });
}

/** Which forge sent the request and its event name, from the event headers; undefined for none of them. */
export function detectProvider(headers: Headers): { provider: GitProvider; event: string } | undefined {
  // Gitea also sends X-GitHub-Event (and Gogs') for compatibility, so its own header is looked at first.
  const gitea = header(headers, 'x-gitea-event');
  if (gitea !== undefined) return { provider: 'gitea', event: gitea };
  const gitlab = header(headers, 'x-gitlab-event');
  if (gitlab !== undefined) return { provider: 'gitlab', event: gitlab };
  const github = header(headers, 'x-github-event');
  if (github !== undefined) return { provider: 'github', event: github };
  return undefined;
}

/**
 * Whether the request carries a valid signature (GitHub, Gitea) or token (GitLab) for `secret`; comparisons take
 * the same time whatever the received value is. A missing header is invalid.
 */
export function verifySignature(provider: GitProvider, headers: Headers, body: Buffer, secret: string): boolean {
  switch (provider) {
    case 'github': {
      const received = header(headers, 'x-hub-signature-256');
      return received !== undefined && sameText(received.trim(), `sha256=${hmacHex(secret, body)}`);
    }
    case 'gitea': {
      const received = header(headers, 'x-gitea-signature');
      return received !== undefined && sameText(received.trim().toLowerCase(), hmacHex(secret, body));
    }
    case 'gitlab': {
      const received = header(headers, 'x-gitlab-token');
      return received !== undefined && sameText(received, secret);
    }
  }
}

/** Whether the event is a push (GitLab reports tag pushes as an event of their own). */
export function isPushEvent(provider: GitProvider, event: string): boolean {
  return provider === 'gitlab' ? event === 'Push Hook' || event === 'Tag Push Hook' : event === 'push';
}

/** Fields of `repository` (GitHub, Gitea, GitLab) and `project` (GitLab) that hold a URL of the repository. */
const URL_FIELDS = [
  'clone_url',
  'ssh_url',
  'git_url',
  'html_url',
  'svn_url',
  'url',
  'git_http_url',
  'git_ssh_url',
  'http_url',
  'web_url',
  'homepage',
];

/** Every distinct URL of the pushed repository in a push payload of any of the three forges. */
export function pushedRepositoryUrls(payload: unknown): string[] {
  const urls = new Set<string>();
  for (const key of ['repository', 'project']) {
    const holder = isRecord(payload) ? payload[key] : undefined;
    if (!isRecord(holder)) continue;
    for (const field of URL_FIELDS) {
      const value = holder[field];
      if (typeof value === 'string' && value !== '') urls.add(value);
    }
  }
  return [...urls];
}

/** The answer to one webhook request; starts onPush for an authenticated push. */
function handleWebhook(
  headers: Headers,
  rawBody: unknown,
  log: FastifyBaseLogger,
  options: WebhookOptions,
): { status: number; body?: Record<string, unknown> } {
  const detected = detectProvider(headers);
  if (!detected)
    return {
      status: 400,
      body: { error: 'not a GitHub, GitLab or Gitea webhook (no X-GitHub-Event, X-Gitlab-Event or X-Gitea-Event header)' },
    };
  const body = Buffer.isBuffer(rawBody) ? rawBody : Buffer.alloc(0);
  if (!verifySignature(detected.provider, headers, body, options.secret)) {
    log.warn({ provider: detected.provider, event: detected.event }, 'git webhook with a missing or wrong signature');
    return { status: 401, body: { error: `missing or invalid ${detected.provider} webhook signature` } };
  }
  if (!isPushEvent(detected.provider, detected.event)) return { status: 204 };
  const payload = parsePayload(body, header(headers, 'content-type'));
  if (payload === undefined) return { status: 400, body: { error: 'the push payload is not JSON' } };
  const urls = pushedRepositoryUrls(payload);
  const ref = isRecord(payload) && typeof payload['ref'] === 'string' ? payload['ref'] : undefined;
  log.info({ provider: detected.provider, urls, ref }, 'git push received');
  Promise.resolve()
    .then(() => options.onPush(urls, ref))
    .catch((error: unknown) => log.error({ err: error, urls, ref }, 'handling a git push failed'));
  return { status: 202, body: { accepted: true, repositoryUrls: urls } };
}

/** JSON bodies, and GitHub's and Gitea's form encoding (`payload=<JSON>`). */
function parsePayload(body: Buffer, contentType: string | undefined): unknown {
  const text = body.toString('utf8');
  const json = contentType?.includes('application/x-www-form-urlencoded') ? new URLSearchParams(text).get('payload') : text;
  if (json === null) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

function hmacHex(secret: string, body: Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** Constant-time equality of two texts of any length: their SHA-256 digests are compared. */
function sameText(received: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(received), digest(expected));
}

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
