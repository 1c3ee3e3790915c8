/**
 * A push webhook makes the server fetch the repository at once: the service's new revision does not wait for the
 * next poll (here ten minutes away).
 */
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { FleetClient } from '../client/fleet-client.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { type FleetServer, startFleetServer } from './server.ts';
import { testServerOptions } from '../../test/support/fleet.ts';

const SECRET = 'webhook-s3cret';

describe('the push webhook of the fleet server', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let client: FleetClient;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-webhook-'));
    repo = await createRepo({ 'web/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  v: "1"\n' });
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'cache'), log },
        { gitPollIntervalMs: 600_000, webhookSecret: SECRET },
      ),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    await client.createCluster({ name: 'dev' });
    await client.createRepository({ url: repo.url });
    await client.createService('dev', { name: 'web', namespace: 'web', repository: repo.url, git: { ref: 'main', folder: 'web' } });
  });

  afterAll(async () => {
    await server?.close();
    await repo?.remove();
    await rm(dir, { recursive: true, force: true });
  });

  const push = (body: string, signature: string) =>
    fetch(`${server.url}/hooks/git`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${signature}` },
      body,
    });

  test('a signed push of the repository makes the new revision at once; a wrong signature is refused', async () => {
    const commit = await repo.commit({
      'web/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  v: "2"\n',
    });
    const body = JSON.stringify({ ref: 'refs/heads/main', repository: { clone_url: repo.url } });
    expect((await push(body, createHmac('sha256', 'wrong').update(body).digest('hex'))).status).toBe(401);
    expect((await client.getService('dev', 'web')).revision.number).toBe(1);

    expect((await push(body, createHmac('sha256', SECRET).update(body).digest('hex'))).status).toBe(202);
    const revision = await waitFor('the pushed commit as revision 2', async () => {
      const found = await client.getService('dev', 'web');
      return found.revision.number === 2 ? found.revision : undefined;
    });
    expect(revision).toMatchObject({ commit, createdBy: 'git' });
  });
});
