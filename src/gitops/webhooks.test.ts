import { createHmac } from 'node:crypto';
import { fastify, type FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../logger.ts';
import { pushedRepositoryUrls, registerWebhookRoutes, verifySignature, WEBHOOK_PATH } from './webhooks.ts';

const SECRET = 'webhook-test-secret';

/** Trimmed push payloads with the repository fields each forge sends (from their webhook docs). */
const GITHUB_PUSH = {
  ref: 'refs/heads/main',
  repository: {
    full_name: 'org/app',
    html_url: 'https://github.com/org/app',
    url: 'https://github.com/org/app',
    git_url: 'git://github.com/org/app.git',
    ssh_url: 'git@github.com:org/app.git',
    clone_url: 'https://github.com/org/app.git',
    svn_url: 'https://github.com/org/app',
  },
};
const GITLAB_PUSH = {
  object_kind: 'push',
  ref: 'refs/heads/main',
  project: {
    web_url: 'https://gitlab.example.com/group/app',
    git_ssh_url: 'git@gitlab.example.com:group/app.git',
    git_http_url: 'https://gitlab.example.com/group/app.git',
  },
  repository: { url: 'git@gitlab.example.com:group/app.git', homepage: 'https://gitlab.example.com/group/app' },
};
const GITEA_PUSH = {
  ref: 'refs/tags/v1.2.0',
  repository: {
    html_url: 'http://gitea.local:3000/org/app',
    ssh_url: 'ssh://git@gitea.local:2222/org/app.git',
    clone_url: 'http://gitea.local:3000/org/app.git',
  },
};

const hmac = (body: string, secret = SECRET) => createHmac('sha256', secret).update(body).digest('hex');

describe('verifySignature', () => {
  const body = Buffer.from(JSON.stringify(GITHUB_PUSH));
  it('accepts GitHub sha256= signatures of the raw body and rejects wrong or missing ones', () => {
    expect(verifySignature('github', { 'x-hub-signature-256': `sha256=${hmac(body.toString())}` }, body, SECRET)).toBe(true);
    expect(verifySignature('github', { 'x-hub-signature-256': `sha256=${hmac(body.toString(), 'other')}` }, body, SECRET)).toBe(false);
    expect(verifySignature('github', { 'x-hub-signature-256': hmac(body.toString()) }, body, SECRET)).toBe(false);
    expect(verifySignature('github', { 'x-hub-signature-256': `sha256=${hmac(`${body.toString()} `)}` }, body, SECRET)).toBe(false);
    expect(verifySignature('github', {}, body, SECRET)).toBe(false);
  });

  it('accepts Gitea hex signatures and rejects wrong or missing ones', () => {
    expect(verifySignature('gitea', { 'x-gitea-signature': hmac(body.toString()) }, body, SECRET)).toBe(true);
    expect(verifySignature('gitea', { 'x-gitea-signature': hmac(body.toString(), 'other') }, body, SECRET)).toBe(false);
    expect(verifySignature('gitea', { 'x-gitea-signature': '' }, body, SECRET)).toBe(false);
    expect(verifySignature('gitea', {}, body, SECRET)).toBe(false);
  });

  it('accepts the GitLab token equal to the secret only', () => {
    expect(verifySignature('gitlab', { 'x-gitlab-token': SECRET }, body, SECRET)).toBe(true);
    expect(verifySignature('gitlab', { 'x-gitlab-token': `${SECRET}x` }, body, SECRET)).toBe(false);
    expect(verifySignature('gitlab', { 'x-gitlab-token': SECRET.slice(0, -1) }, body, SECRET)).toBe(false);
    expect(verifySignature('gitlab', {}, body, SECRET)).toBe(false);
  });
});

describe('pushedRepositoryUrls', () => {
  it('collects every URL of the repository of each forge', () => {
    expect(pushedRepositoryUrls(GITHUB_PUSH).sort()).toEqual([
      'git://github.com/org/app.git',
      'git@github.com:org/app.git',
      'https://github.com/org/app',
      'https://github.com/org/app.git',
    ]);
    expect(pushedRepositoryUrls(GITLAB_PUSH).sort()).toEqual([
      'git@gitlab.example.com:group/app.git',
      'https://gitlab.example.com/group/app',
      'https://gitlab.example.com/group/app.git',
    ]);
    expect(pushedRepositoryUrls(GITEA_PUSH).sort()).toEqual([
      'http://gitea.local:3000/org/app',
      'http://gitea.local:3000/org/app.git',
      'ssh://git@gitea.local:2222/org/app.git',
    ]);
    expect(pushedRepositoryUrls({ zen: 'ping' })).toEqual([]);
  });
});

describe('POST /hooks/git', () => {
  let server: FastifyInstance;
  let pushes: Array<{ urls: string[]; ref: string | undefined }>;

  beforeEach(async () => {
    pushes = [];
    server = fastify();
    server.post('/other', async (request) => ({ parsed: request.body }));
    await registerWebhookRoutes(server, { secret: SECRET, onPush: (urls, ref) => void pushes.push({ urls, ref }) });
    await server.ready();
  });
  afterEach(async () => {
    await server.close();
  });

  const post = (headers: Record<string, string>, body: string) =>
    server.inject({ method: 'POST', url: WEBHOOK_PATH, headers: { 'content-type': 'application/json', ...headers }, payload: body });

  it('accepts a signed GitHub push (202) and hands over its URLs and ref', async () => {
    const body = JSON.stringify(GITHUB_PUSH);
    const response = await post({ 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${hmac(body)}` }, body);
    expect(response.statusCode).toBe(202);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pushes).toEqual([{ urls: pushedRepositoryUrls(GITHUB_PUSH), ref: 'refs/heads/main' }]);
  });

  it('checks the signature over the exact bytes received, not re-serialized JSON', async () => {
    const body = JSON.stringify(GITHUB_PUSH, null, 4);
    const good = await post({ 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${hmac(body)}` }, body);
    expect(good.statusCode).toBe(202);
    const reformatted = await post(
      { 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${hmac(JSON.stringify(GITHUB_PUSH))}` },
      body,
    );
    expect(reformatted.statusCode).toBe(401);
  });

  it('reads GitHub form-encoded payloads', async () => {
    const body = new URLSearchParams({ payload: JSON.stringify(GITHUB_PUSH) }).toString();
    const response = await post(
      { 'content-type': 'application/x-www-form-urlencoded', 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${hmac(body)}` },
      body,
    );
    expect(response.statusCode).toBe(202);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pushes[0]?.urls).toContain('git@github.com:org/app.git');
  });

  it('rejects bad and missing signatures with 401 and triggers nothing', async () => {
    const body = JSON.stringify(GITHUB_PUSH);
    expect((await post({ 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${hmac(body, 'wrong')}` }, body)).statusCode).toBe(401);
    expect((await post({ 'x-github-event': 'push' }, body)).statusCode).toBe(401);
    expect((await post({ 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': 'wrong' }, JSON.stringify(GITLAB_PUSH))).statusCode).toBe(401);
    expect((await post({ 'x-gitea-event': 'push', 'x-gitea-signature': hmac('{}') }, JSON.stringify(GITEA_PUSH))).statusCode).toBe(401);
    expect((await post({ 'x-github-event': 'ping' }, '{"zen":"x"}')).statusCode).toBe(401);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pushes).toEqual([]);
  });

  it('accepts GitLab pushes and tag pushes with the right token', async () => {
    const body = JSON.stringify(GITLAB_PUSH);
    expect((await post({ 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRET }, body)).statusCode).toBe(202);
    expect((await post({ 'x-gitlab-event': 'Tag Push Hook', 'x-gitlab-token': SECRET }, body)).statusCode).toBe(202);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pushes).toHaveLength(2);
    expect(pushes[0]?.urls).toContain('https://gitlab.example.com/group/app.git');
  });

  it('accepts Gitea pushes (which also carry X-GitHub-Event but no GitHub signature)', async () => {
    const body = JSON.stringify(GITEA_PUSH);
    const response = await post({ 'x-gitea-event': 'push', 'x-github-event': 'push', 'x-gitea-signature': hmac(body) }, body);
    expect(response.statusCode).toBe(202);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pushes).toEqual([{ urls: pushedRepositoryUrls(GITEA_PUSH), ref: 'refs/tags/v1.2.0' }]);
  });

  it('answers other signed events (GitHub ping, GitLab issues) with 204 and triggers nothing', async () => {
    const ping = '{"zen":"Keep it logically awesome."}';
    expect((await post({ 'x-github-event': 'ping', 'x-hub-signature-256': `sha256=${hmac(ping)}` }, ping)).statusCode).toBe(204);
    expect((await post({ 'x-gitlab-event': 'Issue Hook', 'x-gitlab-token': SECRET }, '{}')).statusCode).toBe(204);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pushes).toEqual([]);
  });

  it('answers 400 to requests from no known forge and to signed pushes that are no JSON', async () => {
    expect((await post({}, '{}')).statusCode).toBe(400);
    expect((await post({ 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${hmac('not json')}` }, 'not json')).statusCode).toBe(
      400,
    );
  });

  it("leaves JSON parsing of the server's other routes alone", async () => {
    const response = await server.inject({
      method: 'POST',
      url: '/other',
      headers: { 'content-type': 'application/json' },
      payload: '{"a":1}',
    });
    expect(response.json()).toEqual({ parsed: { a: 1 } });
  });

  it('logs, and does not fail the request, when onPush throws', async () => {
    const lines: string[] = [];
    const failing = fastify({ loggerInstance: createLogger({ destination: { write: (line: string) => void lines.push(line) } }) });
    await registerWebhookRoutes(failing, {
      secret: SECRET,
      onPush: () => {
        throw new Error('queue closed');
      },
    });
    const body = JSON.stringify(GITHUB_PUSH);
    const response = await failing.inject({
      method: 'POST',
      url: WEBHOOK_PATH,
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${hmac(body)}` },
      payload: body,
    });
    expect(response.statusCode).toBe(202);
    await new Promise((resolve) => setImmediate(resolve));
    const failure = lines
      .map((line) => JSON.parse(line) as { msg: string; err?: { message: string } })
      .find((entry) => entry.msg === 'handling a git push failed');
    expect(failure?.err?.message).toBe('queue closed');
    await failing.close();
  });

  it('refuses an empty secret', async () => {
    await expect(registerWebhookRoutes(fastify(), { secret: '', onPush: () => undefined })).rejects.toThrow(/non-empty secret/);
  });
});
