/**
 * Helm charts as service sources over real HTTP, on SQLite and PostgreSQL: a real Helm repository on 127.0.0.1
 * (charts packaged by helm), a real git repository for valuesFiles, the real helm binary pulling. Checks the 400s
 * naming the field, version ranges resolved (and followed on the poll), revisions of values changes, rollback
 * pinning the chart version, and the tarball: a Kluctl project with the chart pre-pulled.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extract } from 'tar';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import {
  configMapTemplate,
  startChartRepository,
  startOciRegistry,
  type ChartRepository,
  type OciRegistry,
  type TestChart,
} from '../../test/support/chart-server.ts';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../../test/support/databases.ts';
import { testServerOptions } from '../../test/support/fleet.ts';
import { createRepo, type TestRepo } from '../../test/support/git-repo.ts';
import { capturedLogger, waitFor } from '../controller/test-support.ts';
import { parseYaml } from '../yaml.ts';
import { type FleetServer, startFleetServer } from './server.ts';

const chart = (version: string): TestChart => ({ name: 'hello', version, files: { 'templates/cm.yaml': configMapTemplate('hello') } });

describe.each(DATABASE_KINDS)('helm services on %s', (kind) => {
  let database: TestDatabase;
  let server: FleetServer;
  let charts: ChartRepository;
  let registry: OciRegistry;
  let repo: TestRepo;
  let scratch: string;
  let admin: string;
  let agentToken: string;
  const { log } = capturedLogger('info');

  async function call(method: string, url: string, token: string, body?: unknown) {
    const response = await fetch(`${server.url}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const type = response.headers.get('content-type') ?? '';
    return {
      status: response.status,
      body: (type.includes('json') ? await response.json() : Buffer.from(await response.arrayBuffer())) as any,
    };
  }

  /** The files of the service's current tarball, as the agent downloads it. */
  async function tarballFiles(name: string): Promise<string> {
    const listed = (await call('GET', '/v1/agent/services', agentToken)).body as Array<{
      id: string;
      name: string;
      revision: { digest: string };
    }>;
    const service = listed.find((s) => s.name === name)!;
    const tarball = await call('GET', `/v1/agent/services/${service.id}/tarball?digest=${service.revision.digest}`, agentToken);
    const dir = await mkdtemp(path.join(scratch, 'tarball-'));
    await writeFile(path.join(dir, 'source.tar.gz'), tarball.body);
    await extract({ file: path.join(dir, 'source.tar.gz'), cwd: dir });
    return dir;
  }

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    scratch = await mkdtemp(path.join(tmpdir(), 'gantry-helm-services-test-'));
    [charts, registry] = await Promise.all([startChartRepository(), startOciRegistry()]);
    await charts.publish(chart('1.0.0'), chart('1.1.0'), chart('2.0.0-rc.1'));
    await registry.push(chart('0.1.0'), 'charts');
    await registry.push(chart('0.2.0'), 'charts');
    repo = await createRepo({ 'values/base.yaml': 'value: from-git\nreplicas: 2\n' });
    server = await startFleetServer(
      testServerOptions({ databaseUrl: database.url, cacheDir: path.join(scratch, 'cache'), log }, { gitPollIntervalMs: 300 }),
    );
    admin = server.adminToken!;
    agentToken = (await call('POST', '/v1/clusters', admin, { name: 'dev' })).body.deployToken;
    expect((await call('POST', '/v1/repositories', admin, { url: repo.url })).body.health).toBe('PULLABLE');
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await Promise.all([charts?.close(), registry?.close()]);
    await repo?.remove();
    await database?.drop();
    await rm(scratch, { recursive: true, force: true });
  });

  const helm = () => ({ url: charts.url, chart: 'hello', version: '1.0.0' });
  const create = (body: object) => call('POST', '/v1/clusters/dev/services', admin, { name: 'bad', namespace: 'web', ...body });

  test('refuses bad helm sources with the field named', async () => {
    const cases: Array<[object, string]> = [
      [{ helm: helm(), renderer: { kind: 'raw' } }, 'body.renderer'],
      [{ repository: repo.url, git: { ref: 'main', folder: '' }, renderer: { kind: 'helm' } }, 'body.helm'],
      [{ helm: { ...helm(), valuesFiles: ['values/base.yaml'] } }, 'body.helm.valuesFiles'],
      [{ helm: helm(), repository: repo.url, git: { ref: 'main', folder: '' } }, 'body.git'],
      [{ git: { ref: 'main', folder: '' } }, 'body.repository'],
      [{}, 'body.git'],
      [{ helm: { ...helm(), url: 'ftp://charts.example' } }, 'body.helm.url'],
      [{ helm: { ...helm(), url: 'http://127.0.0.1:1/charts' } }, 'body.helm.url'],
      [{ helm: { ...helm(), chart: 'nope' } }, 'body.helm.chart'],
      [{ helm: { ...helm(), version: '9.9.9' } }, 'body.helm.version'],
      [{ helm: { ...helm(), version: '^^1' } }, 'body.helm.version'],
      [
        { helm: { ...helm(), valuesFiles: ['values/missing.yaml'] }, repository: repo.url, git: { ref: 'main', folder: '' } },
        'body.helm.valuesFiles.0',
      ],
      [
        { helm: { ...helm(), valuesFiles: ['../../etc/passwd'] }, repository: repo.url, git: { ref: 'main', folder: 'values' } },
        'body.helm.valuesFiles.0',
      ],
    ];
    for (const [body, field] of cases) {
      const answer = await create(body);
      expect({ body, answer: answer.body, status: answer.status }).toMatchObject({ status: 400, answer: { field } });
    }
    expect((await call('GET', '/v1/services', admin)).body).toEqual([]);
  });

  test('resolves a version range to the newest release, packs a Kluctl project around the pulled chart', async () => {
    const created = await create({ name: 'hello', helm: { ...helm(), version: '^1.0', values: { value: 'one' } } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      repository: null,
      git: null,
      helm: { url: charts.url, chart: 'hello', version: '^1.0', values: { value: 'one' }, release: 'hello' },
      renderer: { kind: 'helm' },
      revision: { number: 1, commit: null, chartVersion: '1.1.0', digest: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    const agentView = (await call('GET', '/v1/agent/services', agentToken)).body;
    expect(agentView).toEqual([expect.objectContaining({ name: 'hello', folder: '', renderer: { kind: 'helm' } })]);

    const dir = await tarballFiles('hello');
    expect(parseYaml(await readFile(path.join(dir, 'deployment.yaml'), 'utf8'), 'd')).toEqual({
      deployments: [{ path: 'hello' }],
      overrideNamespace: 'web',
    });
    expect(parseYaml(await readFile(path.join(dir, 'hello/helm-chart.yaml'), 'utf8'), 'c')).toEqual({
      helmChart: { repo: charts.url, chartName: 'hello', chartVersion: '1.1.0', releaseName: 'hello', namespace: 'web' },
    });
    expect(parseYaml(await readFile(path.join(dir, 'hello/helm-values.yaml'), 'utf8'), 'v')).toEqual({ value: 'one' });
    const port = new URL(charts.url).port;
    expect(await readFile(path.join(dir, `.helm-charts/http_${port}_127.0.0.1/charts/hello/1.1.0/Chart.yaml`), 'utf8')).toContain(
      'version: 1.1.0',
    );
  });

  test("ignoreHooks and ignoreCrds (Plural's) reach the chart's helm-chart.yaml as skipHooks and skipCRDs; false is no change", async () => {
    const created = await create({ name: 'bare', helm: { ...helm(), ignoreHooks: true, ignoreCrds: true } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ helm: { ignoreHooks: true, ignoreCrds: true } });
    const dir = await tarballFiles('bare');
    expect(parseYaml(await readFile(path.join(dir, 'bare/helm-chart.yaml'), 'utf8'), 'c')).toMatchObject({
      helmChart: { releaseName: 'bare', skipCRDs: true, skipHooks: true },
    });
    // Both false are the defaults: stored as absent, as specs made before these fields are.
    const plain = await create({ name: 'plain', helm: { ...helm(), ignoreHooks: false, ignoreCrds: false } });
    expect(plain.body.helm).not.toHaveProperty('ignoreHooks');
    expect(plain.body.helm).not.toHaveProperty('ignoreCrds');
    for (const name of ['bare', 'plain'])
      expect((await call('DELETE', `/v1/clusters/dev/services/${name}?detach=true`, admin)).status).toBe(204);
  });

  test('a chart repository behind basic auth: refused without credentials, pulled with those registered for its URL', async () => {
    const guarded = await startChartRepository({ username: 'charts', password: 'hunter2-secret' });
    onTestFinished(() => guarded.close());
    await guarded.publish(chart('2.0.0'));
    const source = { url: guarded.url, chart: 'hello', version: '2.0.0' };
    expect(await create({ name: 'guarded', helm: source })).toMatchObject({ status: 400, body: { field: 'body.helm.url' } });

    const registered = await call('PUT', '/v1/helmrepositories', admin, {
      url: `${guarded.url}/`,
      username: 'charts',
      password: 'hunter2-secret',
    });
    expect(registered).toMatchObject({ status: 200, body: { url: guarded.url } });
    expect(JSON.stringify((await call('GET', '/v1/helmrepositories', admin)).body)).not.toContain('hunter2');
    const stored = await server.store.db.selectFrom('helm_repositories').select('credentials').execute();
    expect(JSON.stringify(stored)).not.toContain('hunter2');

    const created = await create({ name: 'guarded', helm: source });
    expect(created).toMatchObject({ status: 201, body: { revision: { chartVersion: '2.0.0' } } });
    const dir = await tarballFiles('guarded');
    const port = new URL(guarded.url).port;
    expect(await readFile(path.join(dir, `.helm-charts/http_${port}_127.0.0.1/charts/hello/2.0.0/Chart.yaml`), 'utf8')).toContain(
      'version: 2.0.0',
    );
    expect((await call('DELETE', `/v1/clusters/dev/services/guarded?detach=true`, admin)).status).toBe(204);
    expect((await call('DELETE', `/v1/helmrepositories/${registered.body.id}`, admin)).status).toBe(204);
  });

  test('an OCI chart: the registry path and the chart name, its tags as versions', async () => {
    const created = await create({ name: 'oci', helm: { url: `${registry.url}/charts`, chart: 'hello', version: '>=0.1 <1' } });
    expect(created.body).toMatchObject({ revision: { chartVersion: '0.2.0' } });
    const dir = await tarballFiles('oci');
    expect(parseYaml(await readFile(path.join(dir, 'oci/helm-chart.yaml'), 'utf8'), 'c')).toEqual({
      helmChart: { repo: `${registry.url}/charts/hello`, chartVersion: '0.2.0', releaseName: 'oci', namespace: 'web' },
    });
    const port = new URL(registry.url.replace('oci://', 'http://')).port;
    expect(await readFile(path.join(dir, `.helm-charts/oci_${port}_127.0.0.1/charts/hello/0.2.0/Chart.yaml`), 'utf8')).toContain(
      'version: 0.2.0',
    );
    expect(await create({ name: 'oci', helm: { url: `${registry.url}/charts`, chart: 'nope', version: '0.1.0' } })).toMatchObject({
      status: 400,
      body: { field: 'body.helm.chart' },
    });
    expect((await call('DELETE', '/v1/clusters/dev/services/oci?detach=true', admin)).status).toBe(204);
  });

  test('a new release in range becomes a revision by helm; values changes make revisions, identical ones none', async () => {
    await charts.publish(chart('1.2.0'));
    const moved = await waitFor(
      'revision 2 by helm',
      async () => {
        const service = (await call('GET', '/v1/clusters/dev/services/hello', admin)).body;
        return service.revision.number === 2 ? service : undefined;
      },
      20_000,
    );
    expect(moved.revision).toMatchObject({ chartVersion: '1.2.0', createdBy: 'helm' });

    const changed = await call('PATCH', '/v1/clusters/dev/services/hello', admin, { helm: { values: { value: 'two' } } });
    expect(changed.body.revision).toMatchObject({ number: 3, chartVersion: '1.2.0', createdBy: 'admin' });
    expect(changed.body.revision.digest).not.toBe(moved.revision.digest);
    expect(changed.body.helm).toMatchObject({ version: '^1.0', values: { value: 'two' } });
    const again = await call('PATCH', '/v1/clusters/dev/services/hello', admin, { helm: { values: { value: 'two' } } });
    expect(again.body.revision.number).toBe(3);
    expect((await call('PATCH', '/v1/clusters/dev/services/hello', admin, { renderer: { kind: 'kustomize' } })).body).toMatchObject({
      field: 'body.renderer',
    });
  });

  test("rollback pins the service at the old revision's chart version; a newer version waits for the release", async () => {
    const first = (await call('GET', '/v1/clusters/dev/services/hello/revisions', admin)).body.find(
      (r: { number: number }) => r.number === 1,
    );
    const rolledBack = await call('POST', '/v1/clusters/dev/services/hello/rollback', admin, { revision: 1 });
    expect(rolledBack.body).toMatchObject({
      helm: { values: { value: 'one' } },
      // The content is revision 1's (its chart version and digest); the spec is the source as declared, so the
      // service follows its range again once released, even after a rollback to this rollback.
      revision: { number: 4, chartVersion: '1.1.0', digest: first.digest, helm: { version: '^1.0' } },
      pinned: { by: expect.any(String) },
    });
    // The version range still resolves to 1.2.0: that revision is recorded, and waits.
    const waiting = await waitFor(
      '1.2.0 recorded as waiting',
      async () => {
        const service = (await call('GET', '/v1/clusters/dev/services/hello', admin)).body;
        return service.pendingRevision !== null ? service : undefined;
      },
      20_000,
    );
    expect(waiting.revision).toMatchObject({ number: 4, chartVersion: '1.1.0' });
    const newest = (await call('GET', '/v1/clusters/dev/services/hello/revisions', admin)).body[0];
    expect(newest).toMatchObject({ number: waiting.pendingRevision, chartVersion: '1.2.0' });
    const released = await call('POST', '/v1/clusters/dev/services/hello/release', admin);
    expect(released.body).toMatchObject({ pinned: null, revision: { number: 5, chartVersion: '1.2.0' } });
  });

  test('secret values: sealed in the database and the tarball never sees them, keys only to readers, in clear to the agent', async () => {
    const secret = { auth: { password: 'hunter9-secret' } };
    expect(
      await create({ name: 'no-chart', repository: repo.url, git: { ref: 'main', folder: 'values' }, secretValues: secret }),
    ).toMatchObject({
      status: 400,
      body: { field: 'body.secretValues' },
    });
    const created = await create({ name: 'sealed', helm: { ...helm(), values: { value: 'plain' } }, secretValues: secret });
    expect(created).toMatchObject({ status: 201, body: { secretValues: ['auth'], helm: { values: { value: 'plain' } } } });
    expect(JSON.stringify(created.body)).not.toContain('hunter9');
    const rows = await server.store.db.selectFrom('services').select(['spec', 'secret_values']).execute();
    const revisions = await server.store.db.selectFrom('revisions').select(['spec', 'secret_values']).execute();
    expect(JSON.stringify([rows, revisions])).not.toContain('hunter9');
    expect(await readFile(path.join(await tarballFiles('sealed'), 'sealed/helm-values.yaml'), 'utf8')).not.toContain('hunter9');
    const listed = (await call('GET', '/v1/agent/services', agentToken)).body as Array<{ name: string; secretValues: unknown }>;
    expect(listed.find((service) => service.name === 'sealed')?.secretValues).toEqual(secret);

    const same = await call('PATCH', '/v1/clusters/dev/services/sealed', admin, { secretValues: secret });
    expect(same.body.revision.number).toBe(1);
    const changed = await call('PATCH', '/v1/clusters/dev/services/sealed', admin, { secretValues: { auth: { password: 'other' } } });
    expect(changed.body.revision.number).toBe(2);
    const dropped = await call('PATCH', '/v1/clusters/dev/services/sealed', admin, { secretValues: {} });
    expect(dropped.body).toMatchObject({ secretValues: [], revision: { number: 3 } });
    const rolledBack = await call('POST', '/v1/clusters/dev/services/sealed/rollback', admin, { revision: 1 });
    expect(rolledBack.body).toMatchObject({ secretValues: ['auth'], revision: { number: 4 } });
    const again = (await call('GET', '/v1/agent/services', agentToken)).body as Array<{ name: string; secretValues: unknown }>;
    expect(again.find((service) => service.name === 'sealed')?.secretValues).toEqual(secret);
    expect((await call('DELETE', '/v1/clusters/dev/services/sealed?detach=true', admin)).status).toBe(204);
  });

  test('valuesFiles come from the git folder under values; a commit to them is a revision by git', async () => {
    const created = await create({
      name: 'from-git',
      repository: repo.url,
      git: { ref: 'main', folder: 'values' },
      helm: { ...helm(), valuesFiles: ['base.yaml'], values: { replicas: 3 }, release: 'greeter' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ repository: { url: repo.url }, git: { folder: 'values' }, revision: { chartVersion: '1.0.0' } });
    const dir = await tarballFiles('from-git');
    expect(parseYaml(await readFile(path.join(dir, 'greeter/helm-values.yaml'), 'utf8'), 'v')).toEqual({ value: 'from-git', replicas: 3 });

    const commit = await repo.commit({ 'values/base.yaml': 'value: changed\n' });
    const moved = await waitFor(
      'revision 2 by git',
      async () => {
        const service = (await call('GET', '/v1/clusters/dev/services/from-git', admin)).body;
        return service.revision.number === 2 ? service : undefined;
      },
      20_000,
    );
    expect(moved.revision).toMatchObject({ commit, createdBy: 'git', chartVersion: '1.0.0' });
    const after = await tarballFiles('from-git');
    expect(parseYaml(await readFile(path.join(after, 'greeter/helm-values.yaml'), 'utf8'), 'v')).toEqual({ value: 'changed', replicas: 3 });
  });

  test('an update moves a service between helm and git, null dropping the other source', async () => {
    expect((await call('PATCH', '/v1/clusters/dev/services/from-git', admin, { git: null })).body).toMatchObject({
      field: 'body.helm.valuesFiles',
    });
    const toGit = await call('PATCH', '/v1/clusters/dev/services/hello', admin, {
      helm: null,
      repository: repo.url,
      git: { ref: 'main', folder: 'values' },
    });
    expect(toGit.body).toMatchObject({ helm: null, git: { ref: 'main', folder: 'values' }, renderer: { kind: 'auto' } });
    expect(toGit.body.revision).toMatchObject({ number: 6, chartVersion: null, commit: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const toHelm = await call('PATCH', '/v1/clusters/dev/services/hello', admin, { git: null, helm: helm() });
    expect(toHelm.body).toMatchObject({ repository: null, git: null, renderer: { kind: 'helm' }, revision: { number: 7, commit: null } });
  });

  test('a global service template may be a helm source; its copies are helm services', async () => {
    const bad = await call('POST', '/v1/globalservices', admin, {
      name: 'cm',
      tags: {},
      template: { name: 'cm', namespace: 'cm', helm: { ...helm(), chart: 'nope' } },
    });
    expect(bad).toMatchObject({ status: 400, body: { field: 'body.template.helm.chart' } });
    const created = await call('POST', '/v1/globalservices', admin, {
      name: 'cm',
      tags: {},
      template: { name: 'cm', namespace: 'cm', helm: helm() },
    });
    expect(created.body).toMatchObject({
      template: { repository: null, git: null, helm: { chart: 'hello', release: 'cm' }, renderer: { kind: 'helm' } },
    });
    expect((await call('GET', '/v1/clusters/dev/services/cm', admin)).body).toMatchObject({
      helm: { chart: 'hello' },
      revision: { chartVersion: '1.0.0', createdBy: 'globalservice/cm' },
    });
  });
});
