/**
 * Notification sinks and routers over real HTTP on SQLite and PostgreSQL, delivering to a real receiver on
 * 127.0.0.1: a webhook sink gets the event signed with its HMAC key, a Slack sink a message; routers pick events by
 * type and filter; addresses and keys are sealed in the database and never returned; bad input names the field.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { apiCall, testServerOptions } from '../../test/support/fleet.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { startHttpServer, type TestHttpServer } from '../../test/support/http-server.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { createApiToken } from '../store/api-tokens.ts';
import { hmacSignature } from '../webhook-post.ts';
import { type FleetServer, startFleetServer } from './server.ts';

const HMAC_KEY = 'a-key-of-sixteen-or-more';

describe.each(DATABASE_KINDS)('notifications on %s', (kind) => {
  let database: TestDatabase;
  let server: FleetServer;
  let receiver: TestHttpServer;
  let cacheDir: string;
  let repo: TestRepo;
  let admin: string;
  let reader: string;
  const { log } = capturedLogger('info');

  const call = (method: string, url: string, token: string, body?: unknown) => apiCall(server, method, url, token, body);
  const delivered = (route: string) => receiver.received.filter((request) => request.path === route);

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    cacheDir = await mkdtemp(path.join(tmpdir(), 'gantry-notifications-test-'));
    repo = await createRepo({ 'web/configmap.yaml': 'kind: ConfigMap\n' });
    receiver = await startHttpServer({ '/hook': { body: 'ok' }, '/slack': { body: 'ok' } });
    server = await startFleetServer(testServerOptions({ databaseUrl: database.url, cacheDir, log }));
    admin = server.adminToken!;
    reader = await createApiToken(server.store.db, 'viewer', 'reader');
  });

  afterAll(async () => {
    await server?.close();
    await receiver?.close();
    await repo?.remove();
    await database?.drop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  test('sinks keep their address and key sealed; routers name existing sinks and valid regexes', async () => {
    const hook = await call('PUT', '/v1/notifications/sinks/hook', admin, {
      type: 'webhook',
      url: `${receiver.url}/hook`,
      hmacKey: HMAC_KEY,
    });
    expect(hook).toMatchObject({ status: 200, body: { name: 'hook', type: 'webhook' } });
    expect(JSON.stringify(hook.body)).not.toContain(receiver.url);
    await call('PUT', '/v1/notifications/sinks/slack', admin, { type: 'slack', url: `${receiver.url}/slack` });
    const listed = await call('GET', '/v1/notifications/sinks', reader);
    expect(listed.body.map((sink: { name: string }) => sink.name)).toEqual(['hook', 'slack']);
    expect(JSON.stringify(listed.body)).not.toContain(HMAC_KEY);
    const stored = await server.store.db.selectFrom('notification_sinks').select('configuration').execute();
    expect(JSON.stringify(stored)).not.toContain(receiver.url);
    expect(JSON.stringify(stored)).not.toContain(HMAC_KEY);
    expect((await call('PUT', '/v1/notifications/sinks/x', reader, { type: 'slack', url: 'https://x' })).status).toBe(403);

    expect(await call('PUT', '/v1/notifications/routers/r', admin, { events: ['cluster.create'], sinks: ['nowhere'] })).toMatchObject({
      status: 400,
      body: { field: 'body.sinks.0', message: 'notification sink nowhere not found' },
    });
    expect(
      await call('PUT', '/v1/notifications/routers/r', admin, { events: ['cluster.create'], filters: [{ regex: '(' }], sinks: ['hook'] }),
    ).toMatchObject({ status: 400, body: { field: 'body.filters.0.regex' } });
    expect(await call('PUT', '/v1/notifications/routers/r', admin, { events: ['stack.run'], sinks: ['hook'] })).toMatchObject({
      status: 400,
    });
  });

  test('events reach the sinks of the routers that take them: signed JSON to a webhook, a message to Slack and to Teams', async () => {
    await call('PUT', '/v1/notifications/sinks/teams', admin, { type: 'teams', url: `${receiver.url}/teams` });
    await call('PUT', '/v1/notifications/routers/clusters', admin, { events: ['cluster.create', 'cluster.delete'], sinks: ['hook'] });
    await call('PUT', '/v1/notifications/routers/web-only', admin, {
      events: ['service.update'],
      filters: [{ regex: '^dev/web$' }],
      sinks: ['slack', 'hook', 'teams'],
    });
    const created = await call('POST', '/v1/clusters', admin, { name: 'dev' });
    const token = created.body.deployToken;
    const [event] = await waitFor('cluster.create delivered', () => (delivered('/hook').length === 1 ? delivered('/hook') : undefined));
    expect(JSON.parse(event!.body)).toMatchObject({ type: 'cluster.create', cluster: { name: 'dev' }, message: 'cluster dev registered' });
    expect(event!.headers['x-signature']).toBe(hmacSignature(event!.body, HMAC_KEY));

    // A service turning healthy is a service.update; the other service does not pass the filter.
    await call('POST', '/v1/repositories', admin, { url: repo.url });
    for (const name of ['web', 'other'])
      await call('POST', '/v1/clusters/dev/services', admin, {
        name,
        namespace: name,
        repository: repo.url,
        git: { ref: 'main', folder: 'web' },
      });
    const services = (await call('GET', '/v1/agent/services', token)).body as Array<{ id: string; name: string; revision: { id: string } }>;
    for (const service of services) {
      const component = { group: '', version: 'v1', kind: 'ConfigMap', namespace: service.name, name: 'c', state: 'RUNNING', synced: true };
      await call('POST', `/v1/agent/services/${service.id}/report`, token, {
        revisionId: service.revision.id,
        components: [component],
        errors: [],
      });
    }
    const [slack] = await waitFor('service.update to Slack', () => (delivered('/slack').length > 0 ? delivered('/slack') : undefined));
    expect(JSON.parse(slack!.body)).toMatchObject({ text: ':large_green_circle: service dev/web: service.update' });
    const [teams] = await waitFor('service.update to Teams', () => (delivered('/teams').length > 0 ? delivered('/teams') : undefined));
    expect(JSON.parse(teams!.body)).toMatchObject({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: {
            type: 'AdaptiveCard',
            body: [
              { type: 'TextBlock', text: 'service dev/web: service.update', color: 'Good' },
              { type: 'TextBlock' },
              {
                type: 'FactSet',
                facts: [
                  { title: 'Status', value: 'healthy' },
                  { title: 'Revision', value: '1' },
                ],
              },
            ],
          },
        },
      ],
    });
    await waitFor('service.update to the webhook', () => delivered('/hook').length === 2);
    expect(JSON.parse(delivered('/hook')[1]!.body)).toMatchObject({ type: 'service.update', service: { name: 'web', status: 'healthy' } });

    // Drift the agent reports makes the service stale, and the event names the object and what happened to it.
    const web = services.find((service) => service.name === 'web')!;
    const drift = { state: 'MISSING', fields: [], managers: [] };
    const missing = { group: '', version: 'v1', kind: 'ConfigMap', namespace: 'web', name: 'c', state: 'PENDING', synced: false, drift };
    await call('POST', `/v1/agent/services/${web.id}/report`, token, { revisionId: web.revision.id, components: [missing], errors: [] });
    await waitFor('the drift event to the webhook', () => delivered('/hook').length === 3);
    expect(JSON.parse(delivered('/hook')[2]!.body)).toMatchObject({
      type: 'service.update',
      service: { name: 'web', status: 'stale' },
      message: 'web is stale at revision 1: ConfigMap web/c deleted in the cluster',
    });
    expect((await call('GET', '/v1/clusters/dev/services/web', admin)).body.components).toEqual([missing]);

    await call('DELETE', '/v1/notifications/routers/web-only', admin);
    expect((await call('DELETE', '/v1/notifications/sinks/slack', admin)).status).toBe(204);
    expect((await call('DELETE', '/v1/notifications/sinks/slack', admin)).status).toBe(404);
  });
});
