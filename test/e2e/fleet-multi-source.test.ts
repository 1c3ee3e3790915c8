/**
 * Plural's multi-source services end to end: a service's own git folder plus extra sources from another repository
 * (`sources`), each folder rendered its own way (`renderers`: raw, kustomize, a local chart with valuesFiles and
 * values), applied by a real agent into the local cluster from the server's one tarball; a commit to an extra
 * source's repository moves the service; a rollback pins every source's commit; and the hostile cases: a source
 * packed through a symlink of the service's folder, an overlapping path, a values file outside the source.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { type ApiService, FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { gantry, kubectl, kubectlJson } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { pushedAgentOptions, serviceSettled, testServerOptions } from '../support/fleet.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';

const NAMESPACE = `fleet-multi-${randomBytes(3).toString('hex')}`;
const configMap = (name: string, value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  value: "${value}"\n`;

describe('a service of several sources, each folder rendered its own way', () => {
  let dir: string;
  let server: FleetServer;
  let engine: Engine;
  let agent: RunningAgent;
  let client: FleetClient;
  let app: TestRepo;
  let shared: TestRepo;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-fleet-multi-'));
    app = await createRepo({ 'app/root.yaml': configMap('app-root', 'one'), 'app/values/prod.yaml': 'value: from-app\n' });
    shared = await createRepo({
      'base/kustomization.yaml': 'resources: [cm.yaml]\nnamePrefix: kust-\n',
      'base/cm.yaml': configMap('base', 'one'),
      'charts/greet/Chart.yaml': 'apiVersion: v2\nname: greet\nversion: 0.1.0\n',
      'charts/greet/values.yaml': 'value: default\nextra: none\n',
      'charts/greet/values-prod.yaml': 'value: prod\n',
      'charts/greet/templates/cm.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-greet\ndata:\n  value: {{ .Values.value | quote }}\n  extra: {{ .Values.extra | quote }}\n',
    });
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { gitPollIntervalMs: 300 },
      ),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    for (const repo of [app, shared]) await client.createRepository({ url: repo.url });
    const { deployToken } = await client.createCluster({ name: 'local' });
    engine = new Engine(testConfig());
    agent = startAgent(
      pushedAgentOptions({
        server: server.url,
        token: deployToken,
        engine,
        kubeConfig: loadKubeConfig({}),
        dataDir: path.join(dir, 'agent'),
        log,
      }),
    );
    await waitFor('the push channel', () => server.channels.connected() === 1);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine?.close();
    await server?.close();
    await app?.remove();
    await shared?.remove();
    await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=false']);
    await rm(dir, { recursive: true, force: true });
  });

  const settled = (name: string, revision: number, status: ApiService['status'] = 'healthy') =>
    serviceSettled(client, 'local', name, revision, status);

  const data = async (name: string) =>
    (await kubectlJson<{ data: Record<string, string> }>(['get', 'configmap', name, '-n', NAMESPACE])).data;

  const body = () => ({
    name: 'multi',
    namespace: NAMESPACE,
    repository: app.url,
    git: { ref: 'main', folder: 'app' },
    sources: [
      { path: 'base', repository: shared.url, git: { ref: 'main', folder: 'base' } },
      { path: 'charts/greet', repository: shared.url, git: { ref: 'main', folder: 'charts/greet' } },
    ],
    renderers: [
      { path: '.', kind: 'raw' as const },
      { path: 'base', kind: 'kustomize' as const },
      {
        path: 'charts/greet',
        kind: 'helm' as const,
        helm: { valuesFiles: ['values-prod.yaml', '../../values/prod.yaml'], values: { extra: '{{ kept }}' }, release: 'hi' },
      },
    ],
  });

  test('the combined folder is applied: raw at the root, kustomize in base, the chart with valuesFiles and values', async () => {
    const created = await client.createService('local', body());
    expect(created.revision.sourceCommits).toHaveLength(2);
    expect(created.sources?.map((source) => `${source.path} ${source.repository.url}`)).toEqual([
      `base ${shared.url}`,
      `charts/greet ${shared.url}`,
    ]);
    const healthy = await settled('multi', 1);
    expect(healthy.components.map((c) => `${c.kind}/${c.name}`).sort()).toEqual([
      'ConfigMap/app-root',
      'ConfigMap/hi-greet',
      'ConfigMap/kust-base',
    ]);
    // valuesFiles in order (the chart's, then the service's own folder's, reached from the chart), values over them,
    // `{{ }}` reaching Helm as data.
    expect(await data('hi-greet')).toEqual({ value: 'from-app', extra: '{{ kept }}' });

    const env = { GANTRY_SERVER: server.url, GANTRY_TOKEN: server.adminToken!, XDG_CONFIG_HOME: path.join(dir, 'config') };
    const shown = await gantry(['service', 'get', 'multi', '--cluster', 'local'], { env });
    expect(shown, shown.stderr).toMatchObject({ code: 0 });
    expect(shown.stdout).toMatch(/^source: +file:\/\/\S+ main base at base \([0-9a-f]{12}\)$/m);
    expect(shown.stdout).toMatch(/^renderers: +\. raw, base kustomize, charts\/greet helm \(release hi\)$/m);
  });

  test("a commit to an extra source's repository moves the service; rollback pins every source's commit", async () => {
    const before = await client.getService('local', 'multi');
    await shared.commit({ 'base/cm.yaml': configMap('base', 'two') });
    await settled('multi', 2);
    expect(await data('kust-base')).toEqual({ value: 'two' });
    const moved = await client.getService('local', 'multi');
    expect(moved.revision.createdBy).toBe('git');
    expect(moved.revision.sourceCommits![0]).not.toBe(before.revision.sourceCommits![0]);

    // The rollback's tarball is rebuilt from the pinned commits when this replica lost it.
    for (const file of await readdir(path.join(dir, 'server-cache', 'fleet', 'tarballs')).catch(() => [])) {
      await rm(path.join(dir, 'server-cache', 'tarballs', file), { force: true });
    }
    const rolledBack = await client.rollbackService('local', 'multi', 1);
    expect(rolledBack.revision).toMatchObject({ number: 3, digest: before.revision.digest, sourceCommits: before.revision.sourceCommits });
    await settled('multi', 3);
    expect(await data('kust-base')).toEqual({ value: 'one' });
  });

  test('hostile sources are refused with the field named, and nothing is packed through a link', async () => {
    const outside = await mkdtemp(path.join(tmpdir(), 'gantry-outside-'));
    try {
      await app.commit({ 'linked/base': { symlink: outside }, 'linked/root.yaml': configMap('linked', 'x') });
      const through = {
        ...body(),
        name: 'through',
        git: { ref: 'main', folder: 'linked' },
        sources: [{ ...body().sources[0]!, path: 'base/inner' }],
      };
      await expect(client.createService('local', through)).rejects.toThrow(
        /path: 'base' leads outside the combined source through the symlink 'base'/,
      );
      expect(await readdir(outside)).toEqual([]);

      const overlapping = { ...body(), name: 'overlap', sources: [body().sources[0]!, { ...body().sources[1]!, path: 'base/chart' }] };
      await expect(client.createService('local', overlapping)).rejects.toThrow(/path "base\/chart" overlaps sources\[0\]'s "base"/);
      const taken = { ...body(), name: 'taken', sources: [{ ...body().sources[0]!, path: 'root.yaml' }] };
      await expect(client.createService('local', taken)).rejects.toThrow(/path "root.yaml" is taken by the service's folder/);
      const upward = { ...body(), name: 'upward', sources: [{ ...body().sources[0]!, path: '../up' }] };
      await expect(client.createService('local', upward)).rejects.toThrow(/sources\/0\/path|sources\.0\.path/);
      await expect(client.deleteRepository(shared.url)).rejects.toThrow(/409|in use|repository/i);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  test('a values file outside the source fails the render at the agent, naming it, and nothing of the service is applied', async () => {
    const escaping = body();
    escaping.name = 'escaping';
    escaping.renderers = [
      { path: '.', kind: 'raw' },
      {
        path: 'charts/greet',
        kind: 'helm',
        helm: { valuesFiles: ['../../../../../../../../etc/hostname'], values: { extra: 'x' }, release: 'esc' },
      },
    ];
    await client.createService('local', escaping);
    const failed = await settled('escaping', 1, 'failed').catch(async () => await client.getService('local', 'escaping'));
    expect(failed.status).toBe('failed');
    expect(failed.errors.map((error) => error.message).join('\n')).toMatch(/values file.*outside the source/);
    expect(failed.components).toEqual([]);
  });
});
