/**
 * Services, revisions and the agent's side of them over real HTTP, on SQLite and PostgreSQL, with a real git
 * repository as the source.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { createRepo, git, type TestRepo } from '../../test/support/git-repo.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { type FleetServer, startFleetServer } from './server.ts';
import { testServerOptions } from '../../test/support/fleet.ts';

const CONFIGMAP = (value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: "${value}"\n`;

describe.each(DATABASE_KINDS)('services on %s', (kind) => {
  let database: TestDatabase;
  let server: FleetServer;
  let cacheDir: string;
  let repo: TestRepo;
  let admin: string;
  let firstCommit: string;
  const tokens: Record<string, string> = {};
  const { log } = capturedLogger('info');

  async function call(method: string, url: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${server.url}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const type = response.headers.get('content-type') ?? '';
    const payload = type.includes('json') ? await response.json() : Buffer.from(await response.arrayBuffer());
    return { status: response.status, headers: response.headers, body: payload as any };
  }

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-services-test-'));
    repo = await createRepo({ 'apps/web/configmap.yaml': CONFIGMAP('one'), 'apps/api/README.md': 'docs only\n' });
    firstCommit = (await git(['-C', repo.remote, 'rev-parse', 'main'])).stdout.trim();
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }, { gitPollIntervalMs: 300 }));
    admin = server.adminToken!;
    for (const name of ['dev', 'prod']) tokens[name] = (await call('POST', '/v1/clusters', admin, { name })).body.deployToken;
    expect((await call('POST', '/v1/repositories', admin, { url: repo.url })).body.health).toBe('PULLABLE');
  });

  afterAll(async () => {
    await server?.close();
    await repo?.remove();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  const web = { name: 'web', namespace: 'web', git: { ref: 'main', folder: 'apps/web' } };

  /**
   * A clone of the test repository, and a folder outside it holding a ConfigMap with a marker; `push` commits all of
   * the clone to `branch`.
   */
  async function linkingClone() {
    const outside = await mkdtemp(path.join(tmpdir(), 'gantry-outside-'));
    const work = await mkdtemp(path.join(tmpdir(), 'gantry-linking-'));
    const marker = `GANTRY-LEAK-${createHash('sha256').update(outside).digest('hex').slice(0, 12)}`;
    await writeFile(path.join(outside, 'configmap.yaml'), CONFIGMAP(marker));
    await git(['clone', '--quiet', repo.remote, work]);
    const commit = ['-C', work, '-c', 'user.name=t', '-c', 'user.email=t@gantry.dev'];
    return {
      outside,
      work,
      marker,
      async push(branch: string, message: string) {
        await git([...commit, 'add', '--all']);
        await git([...commit, 'commit', '--quiet', '-m', message]);
        await git(['-C', work, 'push', '--quiet', 'origin', `HEAD:${branch}`]);
      },
      async remove() {
        await rm(outside, { recursive: true, force: true });
        await rm(work, { recursive: true, force: true });
      },
    };
  }

  test('refuses a folder that is, or lies under, a symlink out of the repository, naming the link, never packing what it points to', async () => {
    const clone = await linkingClone();
    try {
      await symlink(clone.outside, path.join(clone.work, 'apps/leak'));
      await clone.push('linked', 'link out');
      for (const folder of ['apps/leak', 'apps/leak/sub']) {
        const refused = await call('POST', '/v1/clusters/dev/services', admin, {
          ...web,
          name: 'leak',
          repository: repo.url,
          git: { ref: 'linked', folder },
        });
        expect(refused).toMatchObject({ status: 400, body: { field: 'body.git.folder' } });
        expect(refused.body.message).toContain(`through the symlink 'apps/leak' -> '${clone.outside}'`);
        expect(JSON.stringify(refused.body)).not.toContain(clone.marker);
      }
    } finally {
      await clone.remove();
    }
  });

  test('refuses a folder holding a symlink that leads outside it, naming the link; links inside are packed', async () => {
    const clone = await linkingClone();
    try {
      await symlink('configmap.yaml', path.join(clone.work, 'apps/web/same.yaml'));
      await symlink(path.join(clone.outside, 'configmap.yaml'), path.join(clone.work, 'apps/web/leak.yaml'));
      await clone.push('linked-inside', 'link out from inside the folder');
      const service = { ...web, name: 'leak-inside', repository: repo.url, git: { ref: 'linked-inside', folder: 'apps/web' } };
      const refused = await call('POST', '/v1/clusters/dev/services', admin, service);
      expect(refused).toMatchObject({ status: 400, body: { field: 'body.git.folder' } });
      expect(refused.body.message).toContain(
        `the symlink 'leak.yaml' -> '${path.join(clone.outside, 'configmap.yaml')}' leads outside the folder`,
      );
      expect(JSON.stringify(refused.body)).not.toContain(clone.marker);

      await git(['-C', clone.work, 'rm', '--quiet', 'apps/web/leak.yaml']);
      await clone.push('linked-inside', 'only the link inside');
      const created = await call('POST', '/v1/clusters/dev/services', admin, service);
      expect(created.status).toBe(201);
      expect((await call('DELETE', '/v1/clusters/dev/services/leak-inside?detach=true', admin)).status).toBe(204);
    } finally {
      await clone.remove();
    }
  });

  test("docsPath: the folder's Markdown at the current revision, to readers; a path out of the source refused; a linked folder read once", async () => {
    const clone = await linkingClone();
    try {
      await mkdir(path.join(clone.work, 'apps/web/docs/runbook'), { recursive: true });
      await writeFile(path.join(clone.work, 'apps/web/docs/README.md'), '# Web\n');
      await writeFile(path.join(clone.work, 'apps/web/docs/runbook/restart.md'), 'restart it\n');
      await writeFile(path.join(clone.work, 'apps/web/docs/notes.txt'), 'not Markdown\n');
      // A link to a folder inside: packed as a link, its files read where they are, no error.
      await symlink('runbook', path.join(clone.work, 'apps/web/docs/latest'));
      await clone.push('documented', 'docs');
      const service = { ...web, name: 'documented', repository: repo.url, git: { ref: 'documented', folder: 'apps/web' } };
      for (const docsPath of ['../api', 'docs/../../api', '/etc']) {
        const refused = await call('POST', '/v1/clusters/dev/services', admin, { ...service, docsPath });
        expect(refused, docsPath).toMatchObject({ status: 400, body: { field: 'body.docsPath' } });
      }
      expect((await call('POST', '/v1/clusters/dev/services', admin, { ...service, docsPath: 'docs' })).status).toBe(201);
      expect((await call('GET', '/v1/clusters/dev/services/documented/docs', admin)).body).toEqual({
        docsPath: 'docs',
        revision: 1,
        files: [
          { path: 'README.md', content: '# Web\n' },
          { path: 'runbook/restart.md', content: 'restart it\n' },
        ],
        truncated: false,
      });
      // Without one, no docs; null drops it (a new revision).
      const dropped = await call('PATCH', '/v1/clusters/dev/services/documented', admin, { docsPath: null });
      expect(dropped.body).not.toHaveProperty('docsPath');
      expect((await call('GET', '/v1/clusters/dev/services/documented/docs', admin)).body).toEqual({
        docsPath: null,
        revision: 2,
        files: [],
        truncated: false,
      });
      expect((await call('DELETE', '/v1/clusters/dev/services/documented?detach=true', admin)).status).toBe(204);
    } finally {
      await clone.remove();
    }
  });

  test('creates a service at revision 1 of its ref, refusing bad sources with the field named', async () => {
    const created = await call('POST', '/v1/clusters/dev/services', admin, {
      ...web,
      repository: repo.url,
      renderer: { kind: 'raw' },
      configuration: { password: 'hunter2-secret' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      cluster: 'dev',
      name: 'web',
      status: 'stale',
      configuration: ['password'],
      revision: { number: 1, commit: firstCommit, digest: expect.stringMatching(/^[0-9a-f]{64}$/), createdBy: 'admin' },
      appliedRevision: null,
    });
    expect(JSON.stringify(created.body)).not.toContain('hunter2-secret');

    const bad = (body: object) =>
      call('POST', '/v1/clusters/dev/services', admin, { ...web, name: 'other', repository: repo.url, ...body });
    expect(await bad({ git: { ref: 'no-such-branch', folder: 'apps/web' } })).toMatchObject({
      status: 400,
      body: { field: 'body.git.ref' },
    });
    expect(await bad({ git: { ref: 'main', folder: 'apps/missing' } })).toMatchObject({ status: 400, body: { field: 'body.git.folder' } });
    expect(await bad({ git: { ref: 'main', folder: '../..' } })).toMatchObject({ status: 400, body: { field: 'body.git.folder' } });
    expect(await bad({ repository: 'https://unknown.example/x.git' })).toMatchObject({ status: 400, body: { field: 'body.repository' } });
    expect(await bad({ renderer: { kind: 'raw', target: 'prod' } })).toMatchObject({ status: 400, body: { field: 'body.renderer' } });
    expect(await bad({ name: 'web' })).toMatchObject({ status: 409 });
    expect((await call('POST', '/v1/clusters/nowhere/services', admin, { ...web, repository: repo.url })).status).toBe(404);
    expect((await call('GET', '/v1/clusters/dev/services/other', admin)).status).toBe(404);
  });

  test('a change of configuration adds a revision, an identical update none; a new commit adds one by git', async () => {
    const changed = await call('PATCH', '/v1/clusters/dev/services/web', admin, { configuration: { password: 'hunter3-secret' } });
    expect(changed.body.revision).toMatchObject({ number: 2, commit: firstCommit, createdBy: 'admin' });
    expect(
      (await call('PATCH', '/v1/clusters/dev/services/web', admin, { configuration: { password: 'hunter3-secret' } })).body.revision.number,
    ).toBe(2);

    const second = await repo.commit({ 'apps/web/configmap.yaml': CONFIGMAP('two') });
    const moved = await waitFor(
      'revision 3 by git',
      async () => {
        const service = (await call('GET', '/v1/clusters/dev/services/web', admin)).body;
        return service.revision.number === 3 ? service : undefined;
      },
      20_000,
    );
    expect(moved.revision).toMatchObject({ commit: second, createdBy: 'git' });
    expect(moved.revision.digest).not.toBe(changed.body.revision.digest);
  });

  test("the diff of two revisions shows their sources' changed files, and nothing for a configuration-only change", async () => {
    const diff = await call('GET', '/v1/clusters/dev/services/web/revisions/diff?from=1&to=3', admin);
    expect(diff.body).toEqual({
      from: 1,
      to: 3,
      files: [{ path: 'configmap.yaml', change: 'changed', patch: expect.stringContaining('-  value: "one"\n+  value: "two"') }],
    });
    expect(diff.body.files[0].patch).toMatch(/^--- configmap.yaml\t#1\n\+\+\+ configmap.yaml\t#3\n@@/);
    expect((await call('GET', '/v1/clusters/dev/services/web/revisions/diff?from=1&to=2', admin)).body.files).toEqual([]);
    expect(await call('GET', '/v1/clusters/dev/services/web/revisions/diff?from=1&to=42', admin)).toMatchObject({
      status: 404,
      body: { message: 'the service has no revision 42', field: 'querystring.to' },
    });
  });

  test('rollback adds a revision with the old content and pins the service there; commits meanwhile wait until released', async () => {
    const before = (await call('GET', '/v1/clusters/dev/services/web', admin)).body;
    expect(before).toMatchObject({ pinned: null, pendingRevision: null });
    const first = (await call('GET', '/v1/clusters/dev/services/web/revisions', admin)).body.find(
      (r: { number: number }) => r.number === 1,
    );
    expect((await call('POST', '/v1/clusters/dev/services/web/release', admin)).body).toEqual({
      message: 'service web is not pinned: only a rollback pins a service',
    });
    const rolledBack = await call('POST', '/v1/clusters/dev/services/web/rollback', admin, { revision: 1 });
    expect(rolledBack.body.revision).toMatchObject({
      number: before.revision.number + 1,
      commit: firstCommit,
      digest: first.digest,
      message: 'rollback to revision 1',
    });
    // The service keeps following main; the pin holds it at the copy.
    expect(rolledBack.body).toMatchObject({ git: { ref: 'main' }, pinned: { by: expect.any(String), at: expect.any(String) } });
    const numbers = (await call('GET', '/v1/clusters/dev/services/web/revisions', admin)).body.map((r: { number: number }) => r.number);
    expect(numbers).toEqual([...numbers].sort((a, b) => b - a));
    expect((await call('POST', '/v1/clusters/dev/services/web/rollback', admin, { revision: 99 })).status).toBe(404);

    // A new commit on main is recorded as a revision that waits; the agent still gets the pinned one.
    const third = await repo.commit({ 'apps/web/configmap.yaml': CONFIGMAP('three') });
    const waiting = await waitFor('the commit recorded as waiting', async () => {
      const service = (await call('GET', '/v1/clusters/dev/services/web', admin)).body;
      const newest = (await call('GET', '/v1/clusters/dev/services/web/revisions', admin)).body[0];
      return newest.commit === third && service.pendingRevision === newest.number ? service : undefined;
    });
    expect(waiting.revision.number).toBe(rolledBack.body.revision.number);
    expect((await call('GET', '/v1/agent/services', tokens['dev']!)).body[0].revision.id).toBe(rolledBack.body.revision.id);

    // Released: the newest revision is current, and the pin is gone.
    const released = await call('POST', '/v1/clusters/dev/services/web/release', admin);
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({
      pinned: null,
      pendingRevision: null,
      revision: { number: waiting.pendingRevision, commit: third },
    });
    expect((await call('POST', '/v1/clusters/dev/services/web/release', admin)).status).toBe(409);
  });

  test("an agent sees its own cluster's services with configuration in clear, and only those", async () => {
    const dev = (await call('GET', '/v1/agent/services', tokens['dev']!)).body;
    // The rollback to revision 1 brought revision 1's configuration back.
    expect(dev).toEqual([
      expect.objectContaining({
        name: 'web',
        namespace: 'web',
        folder: 'apps/web',
        renderer: { kind: 'raw' },
        // The rollback to revision 1 brought revision 1's configuration back.
        configuration: { password: 'hunter2-secret' },
        deleting: false,
      }),
    ]);
    expect((await call('GET', '/v1/agent/services', tokens['prod']!)).body).toEqual([]);
    const id = dev[0].id as string;
    const digest = dev[0].revision.digest as string;
    expect((await call('GET', `/v1/agent/services/${id}/tarball?digest=${digest}`, tokens['prod']!)).status).toBe(403);
    expect(
      (await call('POST', `/v1/agent/services/${id}/report`, tokens['prod']!, { revisionId: 'x', components: [], errors: [] })).status,
    ).toBe(403);
    expect((await call('GET', '/v1/agent/services', admin)).status).toBe(401);
  });

  test('serves the tarball of the current digest only, with its digest to check and a 304 for a cached one', async () => {
    const [service] = (await call('GET', '/v1/agent/services', tokens['dev']!)).body;
    const url = `/v1/agent/services/${service.id}/tarball?digest=${service.revision.digest}`;
    const tarball = await call('GET', url, tokens['dev']!);
    expect(tarball.status).toBe(200);
    expect(tarball.headers.get('x-gantry-digest')).toBe(service.revision.digest);
    expect(createHash('sha256').update(tarball.body).digest('hex')).toBe(service.revision.digest);
    expect((await call('GET', url, tokens['dev']!, undefined, { 'if-none-match': `"${service.revision.digest}"` })).status).toBe(304);
    expect((await call('GET', `/v1/agent/services/${service.id}/tarball?digest=${'0'.repeat(64)}`, tokens['dev']!)).status).toBe(409);
  });

  test('reports set components and status; deleting waits for the agent; protect refuses; detach forgets', async () => {
    const [service] = (await call('GET', '/v1/agent/services', tokens['dev']!)).body;
    const component = { group: '', version: 'v1', kind: 'ConfigMap', namespace: 'web', name: 'web', state: 'RUNNING', synced: true };
    expect(
      (
        await call('POST', `/v1/agent/services/${service.id}/report`, tokens['dev']!, {
          revisionId: service.revision.id,
          components: [component],
          errors: [],
        })
      ).status,
    ).toBe(204);
    expect((await call('GET', '/v1/clusters/dev/services/web', admin)).body).toMatchObject({
      status: 'healthy',
      appliedRevision: service.revision.number,
      components: [component],
    });
    await call('POST', `/v1/agent/services/${service.id}/report`, tokens['dev']!, {
      revisionId: service.revision.id,
      components: [{ ...component, state: 'PENDING' }],
      errors: [],
    });
    expect((await call('GET', '/v1/clusters/dev/services/web', admin)).body.status).toBe('synced');

    const deleting = await call('DELETE', '/v1/clusters/dev/services/web', admin);
    expect(deleting).toMatchObject({ status: 202, body: { deleting: true } });
    expect((await call('GET', '/v1/agent/services', tokens['dev']!)).body[0].deleting).toBe(true);
    await call('POST', `/v1/agent/services/${service.id}/report`, tokens['dev']!, {
      revisionId: service.revision.id,
      components: [],
      errors: [],
    });
    expect((await call('GET', '/v1/clusters/dev/services/web', admin)).status).toBe(404);

    await call('POST', '/v1/clusters/prod/services', admin, { ...web, repository: repo.url, protect: true });
    expect((await call('DELETE', '/v1/clusters/prod/services/web', admin)).status).toBe(409);
    await call('PATCH', '/v1/clusters/prod/services/web', admin, { protect: false });
    expect((await call('DELETE', '/v1/clusters/prod/services/web?detach=true', admin)).status).toBe(204);
    expect((await call('GET', '/v1/services', admin)).body).toEqual([]);
  });
});
