/**
 * The deployment operator end to end: the fleet's CRDs in the local (management) cluster, a server (SQLite) and the
 * operator in this process, agents on the two workload clusters. Plural's seed example drives it through kubectl
 * alone; a cluster made with the API is adopted read-only; references wait; bad input is a condition.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { startOperator, type RunningOperator } from '../../src/operator/operator.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { SecretBox } from '../../src/crypto/secret-box.ts';
import { parseYamlDocuments, toYaml } from '../../src/yaml.ts';
import { gantry, kubectl, kubectlJson } from '../support/cli.ts';
import { sharedFixture } from '../../scripts/examples.ts';
import { testConfig } from '../support/engine.ts';
import { apiCall, pushedAgentOptions, testServerOptions, userToken } from '../support/fleet.ts';
import { installGitRepositoryCrd, installHelmRepositoryCrd } from '../support/flux.ts';
import { configMapTemplate, startChartRepository } from '../support/chart-server.ts';
import { createRepo, type TestRepo } from '../support/git-repo.ts';
import { startGitServer } from '../support/git-server.ts';
import { startHttpServer } from '../support/http-server.ts';
import { hmacSignature } from '../../src/webhook-post.ts';
import { kubectlJsonOn, kubectlOn, WORKLOAD_CLUSTERS, type WorkloadCluster, workloadKubeConfig } from '../support/workload-clusters.ts';

const SEED = sharedFixture('plural/pipeline-example.yaml');
const suffix = randomBytes(3).toString('hex');
const NS = `fleet-operator-${suffix}`;
const APP_NS = `upgrade-plan-${suffix}`;
const [DEV, PROD] = WORKLOAD_CLUSTERS;
/** A user a ServiceDeployment's read binding names (Gantry's user names may be e-mail addresses, as Plural's userEmail). */
const READER = `reader-${suffix}@example.com`;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface Resource {
  metadata: { name: string; finalizers?: string[] };
  status?: { id?: string; readonly?: boolean; conditions?: Condition[]; components?: Array<{ kind: string; name: string; state: string }> };
}

describe('the deployment operator', () => {
  let dir: string;
  let server: FleetServer;
  let repo: TestRepo;
  let engine: Engine;
  let client: FleetClient;
  let operator: RunningOperator;
  const agents: RunningAgent[] = [];
  const { log } = capturedLogger('info');

  const get = (kind: string, name: string) => kubectlJson<Resource>(['get', `${kind}.deployments.gantry.dev`, name, '-n', NS]);
  const conditionOf = async (kind: string, name: string, type: string) =>
    (await get(kind, name).catch(() => undefined))?.status?.conditions?.find((c) => c.type === type);
  /** The resource's Synchronized=False condition, once it has one. */
  const notSynchronized = (kind: string, name: string) =>
    waitFor(`${kind} ${name} not synchronized`, async () => {
      const condition = await conditionOf(kind, name, 'Synchronized');
      return condition?.status === 'False' ? condition : undefined;
    });
  /** A ServiceDeployment in NS of a service in APP_NS on the k3s-test cluster. */
  const serviceDeployment = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: 'deployments.gantry.dev/v1alpha1',
    kind: 'ServiceDeployment',
    metadata: { name, namespace: NS },
    spec: { namespace: APP_NS, clusterRef: { name: 'k3s-test' }, ...spec },
  });
  const apply = (manifests: unknown[]) => kubectl(['apply', '-f', '-'], manifests.map((m) => toYaml(m)).join('---\n'));

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-operator-'));
    repo = await createRepo({
      'test-apps/k3s/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upgrade-plan\ndata:\n  version: "1"\n',
      // Plural's docsPath: Markdown beside the manifests, never applied.
      'test-apps/k3s/docs/README.md': '# Upgrade plan\n\nOne ConfigMap.\n',
      'test-apps/k3s/docs/runbook/restart.md': '# Restart\n\n`kubectl rollout restart`\n',
      'test-apps/kluctl-elsewhere/deployment.yaml': 'deployments:\n  - path: cm\n',
      'test-apps/kluctl-elsewhere/cm/configmap.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: placed\n  namespace: somewhere-else\ndata:\n  x: "1"\n',
      'test-apps/elsewhere/configmap.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: placed\n  namespace: somewhere-else\ndata:\n  x: "1"\n',
      'test-apps/normalized/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: normalized\ndata:\n  a: "1"\n  b: "2"\n',
      'test-apps/normalized/rule.yaml.liquid':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rule\ndata:\n  text: "{{ $labels.instance }}"\n',
      // Plural's sources and renderers, and charts from git.
      'test-apps/multi/root.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: multi-root\ndata:\n  x: "1"\n',
      'test-apps/multi/values/prod.yaml': 'value: prod\n',
      'test-apps/shared/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  x: "1"\n',
      'charts/hello/Chart.yaml': 'apiVersion: v2\nname: hello\nversion: 0.1.0\n',
      'charts/hello/values.yaml': 'value: default\n',
      'charts/hello/templates/cm.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-hello\ndata:\n  value: {{ .Values.value | quote }}\n',
      'test-apps/regional/configmap.yaml.liquid':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: regional\ndata:\n  region: "{{ contexts.shared.region }}"\n  cluster: "{{ cluster.handle }}"\n',
    });
    await gantry(['operator', 'install-crds']).then((run) =>
      expect(run.stderr).toContain('applied servicedeployments.deployments.gantry.dev'),
    );
    await kubectl(['create', 'namespace', NS]);
    // Before the operator starts: it watches Flux sources only when the cluster serves them.
    await installGitRepositoryCrd();
    await installHelmRepositoryCrd();
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log },
        { box: new SecretBox(randomBytes(32)), gitPollIntervalMs: 300 },
      ),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    // As an agent's engine runs: the watched cache of its objects finds drift within seconds.
    engine = new Engine(testConfig({ watchDiscriminated: true }));
    operator = await startOperator({
      kubeConfig: loadKubeConfig({}),
      client,
      workers: 2,
      statusIntervalMs: 1_000,
      metricsAddress: { host: '127.0.0.1', port: 0 },
      probeAddress: { host: '127.0.0.1', port: 0 },
      log,
    });
  });

  afterAll(async () => {
    await operator?.stop();
    // With the operator gone, finalizers of resources whose services wait for an agent that never comes are let go.
    for (const kind of [
      'pipelines',
      'notificationrouters',
      'notificationsinks',
      'globalservices',
      'servicecontexts',
      'servicedeployments',
      'clusters',
    ]) {
      const names = await kubectl(['get', `${kind}.deployments.gantry.dev`, '-n', NS, '-o', 'name']).catch(() => '');
      for (const name of names.split('\n').filter(Boolean)) await dropFinalizers([name, '-n', NS]);
    }
    await dropFinalizers([`gitrepositories.deployments.gantry.dev/console-${suffix}`]);
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
    await kubectl(['delete', 'gitrepositories.deployments.gantry.dev', `console-${suffix}`, '--ignore-not-found', '--wait=false']);
    for (const agent of agents) await agent.stop();
    for (const cluster of WORKLOAD_CLUSTERS)
      await kubectlOn(cluster, ['delete', 'namespace', APP_NS, NS, '--ignore-not-found', '--wait=false']);
    await engine?.close();
    await server?.close();
    await repo?.remove();
    await rm(dir, { recursive: true, force: true });
  });

  const dropFinalizers = (target: string[]) =>
    kubectl(['patch', ...target, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']).catch(() => undefined);

  const startAgentOf = async (cluster: WorkloadCluster, token: string) => {
    agents.push(
      startAgent(
        pushedAgentOptions({
          server: server.url,
          token,
          engine,
          kubeConfig: workloadKubeConfig(cluster),
          dataDir: path.join(dir, `agent-${cluster}`),
          log: log.child({ agent: cluster }),
        }),
      ),
    );
  };

  test("Plural's seed example, with only the apiVersion changed, deploys onto two clusters and reports status back", async () => {
    // The seed's clusters: one declared here (the operator makes it), one registered with the API first (adopted).
    const { deployToken: prodToken } = await client.createCluster({ name: `k3s-prod-${suffix}`, handle: `k3s-prod-${suffix}` });
    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'GitRepository',
        metadata: { name: `console-${suffix}` },
        spec: { url: repo.url },
      },
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'Cluster',
        metadata: { name: 'k3s-test', namespace: NS },
        spec: { tags: { env: 'dev' } },
      },
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'Cluster',
        metadata: { name: 'k3s-prod', namespace: NS },
        spec: { handle: `k3s-prod-${suffix}` },
      },
    ]);
    // The seed's ServiceDeployments: apiVersion changed, and the names of what they point at (repository, namespace).
    const seed = parseYamlDocuments(await readFile(SEED, 'utf8'), SEED) as Array<Record<string, any>>;
    const services = seed
      .filter((doc) => doc['kind'] === 'ServiceDeployment')
      .map((doc) => {
        const copy = structuredClone(doc);
        copy['apiVersion'] = 'deployments.gantry.dev/v1alpha1';
        copy['metadata'].namespace = NS;
        copy['spec'].namespace = APP_NS;
        copy['spec'].repositoryRef = { ...copy['spec'].repositoryRef, name: `console-${suffix}`, namespace: NS };
        copy['spec'].clusterRef = { ...copy['spec'].clusterRef, namespace: NS };
        copy['spec'].git.ref = 'main';
        return copy;
      });
    expect(services.map((s) => s['metadata'].name)).toEqual(['upgrade-plan-dev', 'upgrade-plan-prod']);
    // The seed's criteria copy dev's `version` secret. Dev has one, so approving the gate makes prod a revision
    // whenever it runs: both track main, and a promotion that would change nothing makes none.
    services[0]!['spec'].configuration = { version: '2' };
    await apply(services);

    const prod = await waitFor('the prod Cluster adopted', async () => {
      const resource = await get('cluster', 'k3s-prod');
      return resource.status?.readonly ? resource : undefined;
    });
    expect(prod.metadata.finalizers ?? []).not.toContain('deployments.gantry.dev/finalizer');
    expect(prod.status?.conditions?.find((c) => c.type === 'Readonly')).toMatchObject({ status: 'True', reason: 'Adopted' });

    // The dev cluster was made by its resource: its agent's token is in the Secret beside it.
    const secret = await waitFor('the deploy token Secret', () =>
      kubectlJson<{ data: { token: string } }>(['get', 'secret', 'k3s-test-deploy-token', '-n', NS]).catch(() => undefined),
    );
    await startAgentOf(DEV, Buffer.from(secret.data.token, 'base64').toString());
    await startAgentOf(PROD, prodToken);

    for (const [name, cluster] of [
      ['upgrade-plan-dev', DEV],
      ['upgrade-plan-prod', PROD],
    ] as const) {
      await waitFor(`${name} Ready`, async () => (await conditionOf('servicedeployment', name, 'Ready'))?.status === 'True', 90_000);
      const resource = await get('servicedeployment', name);
      expect(resource.status?.components).toEqual([expect.objectContaining({ kind: 'ConfigMap', name: 'upgrade-plan', state: 'RUNNING' })]);
      const map = await kubectlJsonOn<{ data: Record<string, string> }>(cluster, ['get', 'configmap', 'upgrade-plan', '-n', APP_NS]);
      expect(map.data['version']).toBe('1');
    }
    // spec.name names the service on its cluster; without it, the resource's name does.
    expect((await client.listServices(`k3s-prod-${suffix}`)).map((s) => s.name)).toEqual(['upgrade-plan']);
    expect((await client.listServices('k3s-test')).map((s) => s.name)).toEqual(['upgrade-plan-dev']);
    await waitFor('the dev Cluster healthy', async () => (await conditionOf('cluster', 'k3s-test', 'Ready'))?.status === 'True', 90_000);
  });

  test("the seed's Pipeline syncs with its serviceRefs made to resolve; approving its gate gives prod dev's commit", async () => {
    const seed = parseYamlDocuments(await readFile(SEED, 'utf8'), SEED) as Array<Record<string, any>>;
    const pipeline = structuredClone(seed.find((doc) => doc['kind'] === 'Pipeline')!);
    pipeline['apiVersion'] = 'deployments.gantry.dev/v1alpha1';
    pipeline['metadata'].namespace = NS;
    // The seed's serviceRefs name `upgrade-plan` in namespaces upgrade-plan-dev and upgrade-plan-prod; its
    // ServiceDeployments are upgrade-plan-dev and upgrade-plan-prod, here in NS.
    const [dev, prod] = pipeline['spec'].stages.map((stage: any) => stage.services[0]);
    dev.serviceRef = { name: 'upgrade-plan-dev', namespace: NS };
    prod.serviceRef = { name: 'upgrade-plan-prod', namespace: NS };
    prod.criteria.serviceRef = { name: 'upgrade-plan-dev', namespace: NS };
    await apply([pipeline]);
    const pending = await waitFor('the approval gate pending', async () => {
      const resource = (await kubectlJson(['get', 'pipeline.deployments.gantry.dev', 'k3s-upgrade', '-n', NS])) as {
        status?: { gates?: Array<{ name: string; state: string }> };
      };
      return resource.status?.gates?.[0]?.state === 'PENDING' ? resource.status.gates : undefined;
    });
    expect(pending).toEqual([{ edge: 'dev → prod', name: 'approval-gate', state: 'PENDING' }]);
    const synced = await client.getPipeline('k3s-upgrade');
    expect(synced.stages.map((stage) => stage.services.map((s) => `${s.cluster}/${s.name}`))).toEqual([
      ['k3s-test/upgrade-plan-dev'],
      [`k3s-prod-${suffix}/upgrade-plan`],
    ]);

    const devCommit = (await client.getService('k3s-test', 'upgrade-plan-dev')).revision.commit;
    await client.decideGate('k3s-upgrade', { from: 'dev', to: 'prod' }, 'approval-gate', 'approve');
    const promoted = await client.getService(`k3s-prod-${suffix}`, 'upgrade-plan');
    expect(promoted.git?.ref).toBe(devCommit);
    expect(promoted.revision.createdBy).toBe('pipeline/k3s-upgrade');

    // Gantry's extensions in the same resource: a HEALTH gate with a timeout, and a stage's rollout.
    const rollout = { waves: [{ name: 'canary', clusters: [`k3s-prod-${suffix}`] }], soak: '1m', onFailure: 'rollback' };
    pipeline['spec'].stages[1].rollout = rollout;
    pipeline['spec'].edges[0].gates.push({ name: 'soaked', type: 'HEALTH', timeout: '2h', spec: { health: { soak: '5m' } } });
    await apply([pipeline]);
    const extended = await waitFor('the HEALTH gate and the rollout on the server', async () => {
      const found = await client.getPipeline('k3s-upgrade');
      return found.edges[0]!.gates.some((gate) => gate.name === 'soaked') && found.stages[1]!.rollout ? found : undefined;
    });
    expect(extended.stages[1]!.rollout).toEqual(rollout);
    expect(extended.edges[0]!.gates.find((gate) => gate.name === 'soaked')).toMatchObject({ type: 'HEALTH', timeout: '2h' });
    await kubectl(['delete', 'pipeline.deployments.gantry.dev', 'k3s-upgrade', '-n', NS, '--wait=true', '--timeout=30s']);
    expect(await client.listPipelines()).toEqual([]);
  });

  test('a spec change reaches the cluster; deleting the resource deletes the service and its objects', async () => {
    await kubectl([
      'patch',
      'servicedeployment.deployments.gantry.dev',
      'upgrade-plan-dev',
      '-n',
      NS,
      '--type=merge',
      '-p',
      '{"spec":{"configuration":{"x":"1"}}}',
    ]);
    await waitFor('a second revision', async () => (await client.getService('k3s-test', 'upgrade-plan-dev')).revision.number === 2);
    await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', 'upgrade-plan-dev', '-n', NS, '--wait=true', '--timeout=90s']);
    expect((await client.listServices('k3s-test')).map((s) => s.name)).toEqual([]);
    const left = await kubectlJsonOn<{ items: unknown[] }>(DEV, [
      'get',
      'configmaps',
      '-n',
      APP_NS,
      '--field-selector',
      'metadata.name=upgrade-plan',
    ]);
    expect(left.items).toEqual([]);
  });

  test("a Flux GitRepository as repositoryRef: waited for, then its url, spec.ref and secretRef are the service's source", async () => {
    // Flux takes http(s) and ssh URLs only: the test repository over smart HTTP, behind basic auth.
    const gitServer = await startGitServer(path.dirname(repo.remote), { username: 'flux', password: `pw-${suffix}` });
    onTestFinished(() => gitServer.close());
    await kubectl([
      'create',
      'secret',
      'generic',
      'flux-auth',
      '-n',
      NS,
      '--from-literal=username=flux',
      `--from-literal=password=pw-${suffix}`,
    ]);
    await apply([
      serviceDeployment('from-flux', {
        repositoryRef: { apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'GitRepository', name: 'app-source' },
        git: { folder: 'test-apps/k3s' },
      }),
    ]);
    const waiting = await notSynchronized('servicedeployment', 'from-flux');
    expect(waiting).toMatchObject({ reason: 'Waiting', message: `Flux GitRepository ${NS}/app-source (spec.repositoryRef) not found` });

    await apply([
      {
        apiVersion: 'source.toolkit.fluxcd.io/v1',
        kind: 'GitRepository',
        metadata: { name: 'app-source', namespace: NS },
        spec: { url: gitServer.url('remote.git'), interval: '1m', ref: { name: 'refs/heads/main' }, secretRef: { name: 'flux-auth' } },
      },
    ]);
    await waitFor('from-flux Ready', async () => (await conditionOf('servicedeployment', 'from-flux', 'Ready'))?.status === 'True', 90_000);
    const service = await client.getService('k3s-test', 'from-flux');
    expect(service.git).toEqual({ ref: 'main', folder: 'test-apps/k3s' });
    expect(service.repository?.url).toBe(gitServer.url('remote.git'));
    const map = await kubectlJsonOn<{ data: Record<string, string> }>(DEV, ['get', 'configmap', 'upgrade-plan', '-n', APP_NS]);
    expect(map.data['version']).toBe('1');
    await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', 'from-flux', '-n', NS, '--wait=true', '--timeout=90s']);
  });

  test('a ServiceContext reaches the services binding it; a GlobalService copies a ServiceDeployment to every cluster of its tags', async () => {
    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'GlobalService',
        metadata: { name: 'regional', namespace: NS },
        spec: {
          tags: { env: 'dev' },
          serviceRef: { name: 'regional-template' },
          // Plural's ignoreClusters: prod's handle, which env=dev leaves out anyway.
          ignoreClusters: [`k3s-prod-${suffix}`],
          rollout: { waves: [{ name: 'canary', clusters: ['k3s-test'] }], soak: '0', onFailure: 'pause' },
        },
      },
    ]);
    // The referenced ServiceDeployment is not there yet: the GlobalService waits for it.
    const waiting = await notSynchronized('globalservice', 'regional');
    expect(waiting).toMatchObject({ reason: 'Waiting', message: `ServiceDeployment ${NS}/regional-template (spec.serviceRef) not found` });

    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'ServiceContext',
        metadata: { name: 'shared', namespace: NS },
        spec: { configuration: { region: 'eu-west' } },
      },
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'ServiceDeployment',
        metadata: { name: 'regional-template', namespace: NS },
        spec: {
          namespace: APP_NS,
          // The template runs on prod; the global service copies it (same name) to the dev clusters.
          clusterRef: { name: 'k3s-prod' },
          repositoryRef: { name: `console-${suffix}` },
          git: { ref: 'main', folder: 'test-apps/regional' },
          contexts: ['shared'],
        },
      },
    ]);
    await waitFor('regional Ready', async () => (await conditionOf('globalservice', 'regional', 'Ready'))?.status === 'True', 90_000);
    const global = await client.getGlobalService('regional');
    // Only k3s-test has env=dev; the template's context binding came along.
    expect(global.services.map((service) => service.cluster)).toEqual(['k3s-test']);
    expect(global.template.contexts).toEqual(['shared']);
    expect(global.ignoreClusters).toEqual([`k3s-prod-${suffix}`]);
    // Gantry's rollout extension reaches the server as written; a misspelt field of it is refused by the schema.
    expect(global.rollout).toEqual({ waves: [{ name: 'canary', clusters: ['k3s-test'] }], soak: '0', onFailure: 'pause' });
    const typo = await kubectl(
      ['apply', '--dry-run=server', '-f', '-'],
      JSON.stringify({
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'GlobalService',
        metadata: { name: 'regional', namespace: NS },
        spec: { tags: { env: 'dev' }, serviceRef: { name: 'regional-template' }, rollout: { waves: [], sok: '1m', onFailure: 'pause' } },
      }),
    ).catch((error: { stderr?: string }) => error.stderr ?? String(error));
    expect(typo).toMatch(/spec\.rollout\.sok/);
    const map = await kubectlJsonOn<{ data: Record<string, string> }>(DEV, ['get', 'configmap', 'regional', '-n', APP_NS]);
    expect(map.data).toEqual({ region: 'eu-west', cluster: 'k3s-test' });
    expect((await get('globalservice', 'regional')).status).toMatchObject({ services: [{ cluster: 'k3s-test', status: 'healthy' }] });
    expect((await client.getContext('shared')).configuration).toEqual({ region: 'eu-west' });

    // Deleting the GlobalService removes its copies; the context, still bound by the template, stays until that goes.
    await kubectl(['delete', 'globalservice.deployments.gantry.dev', 'regional', '-n', NS, '--wait=true', '--timeout=90s']);
    await expect(client.getGlobalService('regional')).rejects.toThrow();
    await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', 'regional-template', '-n', NS, '--wait=true', '--timeout=90s']);
    await kubectl(['delete', 'servicecontext.deployments.gantry.dev', 'shared', '-n', NS, '--wait=true', '--timeout=30s']);
    await expect(client.getContext('shared')).rejects.toThrow();
  });

  test('a service context made with the API is adopted read-only and outlives its resource', async () => {
    await client.setContext(`made-by-hand-${suffix}`, { configuration: { owner: 'someone' } });
    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'ServiceContext',
        metadata: { name: 'adopted', namespace: NS },
        spec: { name: `made-by-hand-${suffix}`, configuration: { owner: 'the operator' } },
      },
    ]);
    const adopted = await waitFor('the context adopted', async () => {
      const resource = await get('servicecontext', 'adopted');
      return resource.status?.readonly ? resource : undefined;
    });
    expect(adopted.status?.conditions?.find((c) => c.type === 'Readonly')).toMatchObject({ status: 'True', reason: 'Adopted' });
    expect((await client.getContext(`made-by-hand-${suffix}`)).configuration).toEqual({ owner: 'someone' });
    await kubectl(['delete', 'servicecontext.deployments.gantry.dev', 'adopted', '-n', NS, '--wait=true', '--timeout=30s']);
    expect((await client.getContext(`made-by-hand-${suffix}`)).configuration).toEqual({ owner: 'someone' });
    await client.deleteContext(`made-by-hand-${suffix}`);
  });

  test('a Flux HelmRepository as helm.repository gives the chart repository, waited for like any reference', async () => {
    const charts = await startChartRepository();
    onTestFinished(() => charts.close());
    await charts.publish({
      name: 'greeting',
      version: '1.0.0',
      files: { 'templates/cm.yaml': configMapTemplate('{{ .Release.Name }}-greeting') },
    });
    await apply([
      serviceDeployment('greeting', {
        helm: { repository: { name: 'charts' }, chart: 'greeting', version: '1.0.0' },
      }),
    ]);
    const waiting = await notSynchronized('servicedeployment', 'greeting');
    expect(waiting).toMatchObject({ reason: 'Waiting', message: `Flux HelmRepository ${NS}/charts (spec.helm.repository) not found` });
    await apply([
      {
        apiVersion: 'source.toolkit.fluxcd.io/v1',
        kind: 'HelmRepository',
        metadata: { name: 'charts', namespace: NS },
        spec: { url: charts.url, interval: '10m' },
      },
    ]);
    await waitFor('greeting Ready', async () => (await conditionOf('servicedeployment', 'greeting', 'Ready'))?.status === 'True', 90_000);
    expect((await client.getService('k3s-test', 'greeting')).helm).toMatchObject({ url: charts.url, chart: 'greeting', version: '1.0.0' });
    await kubectlOn(DEV, ['get', 'configmap', 'greeting-greeting', '-n', APP_NS]);
    await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', 'greeting', '-n', NS, '--wait=true', '--timeout=90s']);
  });

  test("a HelmRepository's credentials let the server pull the charts at its URL; the password stays sealed", async () => {
    const guarded = await startChartRepository({ username: 'charts', password: `pw-${suffix}` });
    onTestFinished(() => guarded.close());
    await guarded.publish({
      name: 'guarded',
      version: '1.0.0',
      files: { 'templates/cm.yaml': configMapTemplate('{{ .Release.Name }}-cm') },
    });
    await kubectl(['create', 'secret', 'generic', 'chart-auth', '-n', NS, `--from-literal=password=pw-${suffix}`]);
    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'HelmRepository',
        metadata: { name: 'guarded', namespace: NS },
        spec: { url: guarded.url, provider: 'BASIC', auth: { basic: { username: 'charts', passwordSecretRef: { name: 'chart-auth' } } } },
      },
    ]);
    await waitFor('the HelmRepository synced', async () => (await conditionOf('helmrepository', 'guarded', 'Ready'))?.status === 'True');
    expect(await client.listHelmRepositories()).toEqual([expect.objectContaining({ url: guarded.url, authenticated: true })]);
    expect(JSON.stringify(await get('helmrepository', 'guarded'))).not.toContain(`pw-${suffix}`);
    await apply([serviceDeployment('guarded', { helm: { url: guarded.url, chart: 'guarded', version: '1.0.0' } })]);
    await waitFor('guarded Ready', async () => (await conditionOf('servicedeployment', 'guarded', 'Ready'))?.status === 'True', 90_000);
    await kubectlOn(DEV, ['get', 'configmap', 'guarded-cm', '-n', APP_NS]);
    await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', 'guarded', '-n', NS, '--wait=true', '--timeout=90s']);
    await kubectl(['delete', 'helmrepository.deployments.gantry.dev', 'guarded', '-n', NS, '--wait=true', '--timeout=30s']);
    expect(await client.listHelmRepositories()).toEqual([]);
  });

  test("helm.valuesFrom's Secret and valuesConfigMapRef reach the chart under `values`, sealed; a change of the Secret resyncs", async () => {
    const charts = await startChartRepository();
    onTestFinished(() => charts.close());
    const template = [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: {{ .Release.Name }}-values',
      'data:',
      '  password: {{ .Values.auth.password | quote }}',
      '  region: {{ .Values.region | quote }}',
      '  value: {{ .Values.value | quote }}',
      '',
    ].join('\n');
    await charts.publish({ name: 'valued', version: '1.0.0', files: { 'templates/cm.yaml': template } });
    const secretValues = (password: string) =>
      kubectl(
        ['apply', '-f', '-'],
        toYaml({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'chart-values', namespace: NS },
          stringData: { 'auth.yaml': `auth:\n  password: ${password}\n`, 'value.yaml': 'value: from-secret\n' },
        }),
      );
    await secretValues(`pw1-${suffix}`);
    await kubectl(['create', 'configmap', 'chart-defaults', '-n', NS, '--from-literal=values.yaml=region: eu\nvalue: from-configmap\n']);
    await apply([
      serviceDeployment('valued', {
        helm: {
          url: charts.url,
          chart: 'valued',
          version: '1.0.0',
          values: { value: 'inline' },
          valuesFrom: { name: 'chart-values' },
          valuesConfigMapRef: { name: 'chart-defaults', key: 'values.yaml' },
        },
      }),
    ]);
    const applied = (password: string) =>
      waitFor(
        `the chart's ConfigMap with password ${password}`,
        async () => {
          const cm = await kubectlJsonOn<{ data: Record<string, string> }>(DEV, ['get', 'configmap', 'valued-values', '-n', APP_NS]).catch(
            () => undefined,
          );
          return cm?.data.password === password ? cm.data : undefined;
        },
        90_000,
      );
    // `values` over the Secret's, the Secret's over the ConfigMap's (Plural's order).
    expect(await applied(`pw1-${suffix}`)).toEqual({ password: `pw1-${suffix}`, region: 'eu', value: 'inline' });
    const service = await client.getService('k3s-test', 'valued');
    expect(service.secretValues).toEqual(['auth', 'region', 'value']);
    expect(JSON.stringify([service, await get('servicedeployment', 'valued')])).not.toContain(`pw1-${suffix}`);

    await secretValues(`pw2-${suffix}`);
    expect((await applied(`pw2-${suffix}`)).value).toBe('inline');
    await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', 'valued', '-n', NS, '--wait=true', '--timeout=90s']);
  });

  test('templated: false takes *.liquid files as they are; a diffNormalizer with backfill leaves a field to whoever changed it', async () => {
    const resource = (configuration: Record<string, string>) =>
      serviceDeployment('normalized', {
        repositoryRef: { name: `console-${suffix}` },
        git: { ref: 'main', folder: 'test-apps/normalized' },
        templated: false,
        configuration,
        syncConfig: { diffNormalizers: [{ kind: 'ConfigMap', name: 'normalized', backfill: true, jsonPointers: ['/data/b'] }] },
      });
    const appliedAt = (revision: number) =>
      waitFor(`normalized applied at revision ${revision}`, async () => {
        const service = await client.getService('k3s-test', 'normalized').catch(() => undefined);
        return service?.appliedRevision === revision && service.status === 'healthy';
      });
    const data = async (name: string) =>
      (await kubectlJsonOn<{ data: Record<string, string> }>(DEV, ['get', 'configmap', name, '-n', APP_NS])).data;
    await apply([resource({})]);
    await appliedAt(1);
    expect(await data('rule')).toEqual({ text: '{{ $labels.instance }}' });
    expect(await data('normalized')).toEqual({ a: '1', b: '2' });

    // Another field manager changes both fields; the next revision repairs a, and keeps b as the cluster has it.
    await kubectlOn(DEV, [
      'patch',
      'configmap',
      'normalized',
      '-n',
      APP_NS,
      '--type=merge',
      '-p',
      '{"data":{"a":"drifted","b":"changed"}}',
    ]);
    await apply([resource({ touch: '1' })]);
    await appliedAt(2);
    expect(await data('normalized')).toEqual({ a: '1', b: 'changed' });
    await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', 'normalized', '-n', NS, '--wait=true', '--timeout=90s']);
  });

  test('a NotificationRouter sends the events of its ServiceDeployment to a NotificationSink, signed; a sink without its url is refused', async () => {
    const notified = (configuration: Record<string, string>) =>
      serviceDeployment('notified', {
        repositoryRef: { name: `console-${suffix}` },
        git: { ref: 'main', folder: 'test-apps/k3s' },
        configuration,
      });
    const receiver = await startHttpServer({ '/hook': { body: 'ok' } });
    onTestFinished(() => receiver.close());
    await kubectl([
      'create',
      'secret',
      'generic',
      'hook',
      '-n',
      NS,
      `--from-literal=url=${receiver.url}/hook`,
      '--from-literal=hmacKey=sixteen-chars-key!',
    ]);
    await kubectl(['create', 'secret', 'generic', 'no-url', '-n', NS, '--from-literal=hmacKey=sixteen-chars-key!']);
    const sink = (name: string, secret: string) => ({
      apiVersion: 'deployments.gantry.dev/v1alpha1',
      kind: 'NotificationSink',
      metadata: { name, namespace: NS },
      spec: { type: 'WEBHOOK', secretRef: { name: secret } },
    });
    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'NotificationRouter',
        metadata: { name: 'deploys', namespace: NS },
        spec: { events: ['service.update'], filters: [{ serviceRef: { name: 'notified' } }], sinks: [{ name: 'hook' }] },
      },
      sink('hook', 'hook'),
      sink('broken', 'no-url'),
      notified({}),
    ]);
    const broken = await notSynchronized('notificationsink', 'broken');
    expect(broken).toMatchObject({ reason: 'InvalidSpec', message: 'Secret no-url (spec.secretRef) needs the key url' });
    // The router syncs once the service it filters on has an id: the service's first events may come before that and
    // go nowhere. A change once the router is in makes the events this test waits for.
    await waitFor('the router synced', async () => (await conditionOf('notificationrouter', 'deploys', 'Synchronized'))?.status === 'True');
    await apply([notified({ touch: '1' })]);
    const healthy = await waitFor(
      'service.update (healthy) delivered',
      () => receiver.received.find((request) => JSON.parse(request.body).service?.status === 'healthy'),
      45_000,
    );
    expect(JSON.parse(healthy.body)).toMatchObject({
      type: 'service.update',
      cluster: { name: 'k3s-test' },
      service: { name: 'notified' },
    });
    expect(healthy.headers['x-signature']).toBe(hmacSignature(healthy.body, 'sixteen-chars-key!'));
    // The server keeps the address sealed: readers of the API and the resource's status never see it.
    expect(JSON.stringify(await client.listSinks())).not.toContain(receiver.url);
    expect(JSON.stringify(await get('notificationsink', 'hook'))).not.toContain(receiver.url);
    await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', 'notified', '-n', NS, '--wait=true', '--timeout=90s']);
  });

  test("Plural's sources and renderers, and charts from git (alone, or beside the service's folder holding valuesFiles), deploy", async () => {
    const source = { repositoryRef: { name: `console-${suffix}` } };
    await apply([
      serviceDeployment('multi', {
        ...source,
        git: { ref: 'main', folder: 'test-apps/multi' },
        sources: [{ path: 'shared', ...source, git: { ref: 'main', folder: 'test-apps/shared' } }],
        renderers: [
          { path: '.', type: 'RAW' },
          { path: 'shared', type: 'AUTO' },
        ],
      }),
      serviceDeployment('gitchart', {
        helm: { ...source, git: { ref: 'main', folder: 'charts/hello' }, values: { value: 'given' }, release: 'greeter' },
      }),
      serviceDeployment('gitchart-values', {
        ...source,
        git: { ref: 'main', folder: 'test-apps/multi' },
        helm: { ...source, git: { ref: 'main', folder: 'charts/hello' }, valuesFiles: ['values/prod.yaml'] },
      }),
    ]);
    for (const name of ['multi', 'gitchart', 'gitchart-values']) {
      await waitFor(
        `${name} healthy`,
        async () => (await client.getService('k3s-test', name).catch(() => undefined))?.status === 'healthy',
      );
      expect(await conditionOf('ServiceDeployment', name, 'Supported')).toMatchObject({ status: 'True', reason: 'AllFieldsSupported' });
    }
    const data = async (name: string) =>
      (await kubectlJsonOn<{ data: Record<string, string> }>(DEV, ['get', 'configmap', name, '-n', APP_NS])).data;
    expect(await data('multi-root')).toEqual({ x: '1' });
    expect(await data('shared')).toEqual({ x: '1' });
    expect(await data('greeter-hello')).toEqual({ value: 'given' });
    // The service's own folder holds the values files; its manifests are not rendered (Plural's helm+git).
    expect(await data('gitchart-values-hello')).toEqual({ value: 'prod' });
    const withValues = await client.getService('k3s-test', 'gitchart-values');
    expect(withValues.components.map((c) => c.name)).toEqual(['gitchart-values-hello']);
    expect(withValues.sources?.map((s) => `${s.path} ${s.git.folder}`)).toEqual(['.chart charts/hello']);
    for (const name of ['multi', 'gitchart', 'gitchart-values'])
      await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', name, '-n', NS, '--wait=true', '--timeout=90s']);
    expect(await kubectlOn(DEV, ['get', 'configmap', 'shared', '-n', APP_NS, '--ignore-not-found', '-o', 'name'])).toBe('');
  });

  test("syncConfig: the service's namespace made with its labels, every object enforced into it; no namespace made when told not to", async () => {
    const placed = `placed-${suffix}`;
    const notMade = `not-made-${suffix}`;
    // A Kluctl project keeps its objects' namespaces (raw folders are put into the service's anyway).
    const service = (name: string, namespace: string, folder: string, syncConfig: Record<string, unknown>) => ({
      apiVersion: 'deployments.gantry.dev/v1alpha1',
      kind: 'ServiceDeployment',
      metadata: { name, namespace: NS },
      spec: {
        namespace,
        clusterRef: { name: 'k3s-test' },
        repositoryRef: { name: `console-${suffix}` },
        git: { ref: 'main', folder },
        syncConfig,
      },
    });
    await apply([
      service('enforced', placed, 'test-apps/kluctl-elsewhere', {
        enforceNamespace: true,
        labels: { team: 'payments' },
        annotations: { owner: 'ops' },
      }),
      service('no-namespace', notMade, 'test-apps/elsewhere', { createNamespace: false }),
    ]);
    await waitFor('enforced Ready', async () => (await conditionOf('servicedeployment', 'enforced', 'Ready'))?.status === 'True', 90_000);
    await kubectlOn(DEV, ['get', 'configmap', 'placed', '-n', placed]);
    const namespace = await kubectlJsonOn<{ metadata: { labels: Record<string, string>; annotations: Record<string, string> } }>(DEV, [
      'get',
      'namespace',
      placed,
    ]);
    expect(namespace.metadata.labels).toMatchObject({ team: 'payments' });
    expect(namespace.metadata.annotations).toMatchObject({ owner: 'ops' });
    const failed = await waitFor('no-namespace failed', async () => {
      const ready = await conditionOf('servicedeployment', 'no-namespace', 'Ready');
      return ready?.reason === 'Failed' ? ready : undefined;
    });
    expect(failed.message).toContain(`namespaces "${notMade}" not found`);
    await kubectl([
      'delete',
      'servicedeployment.deployments.gantry.dev',
      'enforced',
      'no-namespace',
      '-n',
      NS,
      '--wait=true',
      '--timeout=90s',
    ]);
    await kubectlOn(DEV, ['delete', 'namespace', placed, '--wait=false']);
  });

  test("Plural's fields: cluster by handle, the resource's namespace, version on the revisions, reconciliation as the agent's drift detection; unsupported ones named, and one that changes what is deployed sends nothing", async () => {
    // Plural's shape: no clusterRef but the handle, no namespace (the resource's), and fields Gantry does not act on.
    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'ServiceDeployment',
        metadata: { name: 'by-handle', namespace: NS },
        spec: {
          cluster: 'k3s-test',
          repositoryRef: { name: `console-${suffix}` },
          git: { ref: 'main', folder: 'test-apps/k3s' },
          version: '1.4.2',
          docsPath: 'docs/',
          bindings: { read: [{ userEmail: READER }], write: [{ id: 'a-console-id' }] },
          reconciliation: { driftDetection: false, interval: '45m' },
        },
      },
    ]);
    await waitFor('by-handle Ready', async () => (await conditionOf('servicedeployment', 'by-handle', 'Ready'))?.status === 'True', 90_000);
    const service = await client.getService('k3s-test', 'by-handle');
    expect(service).toMatchObject({ namespace: NS, version: '1.4.2', syncConfig: { selfHeal: false, resyncInterval: '45m' } });
    expect((await client.listRevisions('k3s-test', 'by-handle')).map((revision) => revision.version)).toEqual(['1.4.2']);
    expect(await conditionOf('servicedeployment', 'by-handle', 'Synchronized')).toMatchObject({ status: 'True' });
    const supported = await conditionOf('servicedeployment', 'by-handle', 'Supported');
    expect(supported).toMatchObject({ status: 'False', reason: 'UnsupportedFields' });
    expect(supported?.message).toBe(
      "not acted on: spec.bindings.write[0]: names no user (userEmail) or group (groupName): ids of Plural's console name nobody here",
    );
    // The read binding: a reader of this service on its cluster, and of nothing else.
    const bindings = await client.listRoleBindings();
    expect(bindings.find((binding) => binding.name === `operator.servicedeployment.${NS}.by-handle.read`)).toMatchObject({
      role: 'reader',
      subjects: [{ kind: 'user', name: READER }],
      scope: { clusters: ['k3s-test'], services: ['by-handle'] },
    });
    const readerToken = await userToken(server, READER, 'reader', { pipelines: ['none'] });
    expect((await apiCall(server, 'GET', '/v1/clusters/k3s-test/services/by-handle', readerToken)).status).toBe(200);
    // docsPath: the Markdown below it, at the current revision, for whoever reads the service.
    expect((await apiCall(server, 'GET', '/v1/clusters/k3s-test/services/by-handle/docs', readerToken)).body).toEqual({
      docsPath: 'docs/',
      revision: 1,
      files: [
        { path: 'README.md', content: '# Upgrade plan\n\nOne ConfigMap.\n' },
        { path: 'runbook/restart.md', content: '# Restart\n\n`kubectl rollout restart`\n' },
      ],
      truncated: false,
    });
    expect((await apiCall(server, 'PATCH', '/v1/clusters/k3s-test/services/by-handle', readerToken, { version: '9' })).status).toBe(403);
    expect((await apiCall(server, 'GET', `/v1/clusters/k3s-prod-${suffix}`, readerToken)).status).toBe(403);
    expect(await conditionOf('cluster', 'k3s-test', 'Supported')).toMatchObject({ status: 'True', reason: 'AllFieldsSupported' });
    // Bindings on an adopted Cluster grant nothing: whoever wrote the resource did not make the cluster.
    await kubectl([
      'patch',
      'cluster.deployments.gantry.dev',
      'k3s-prod',
      '-n',
      NS,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { bindings: { write: [{ userEmail: READER }] } } }),
    ]);
    const adopted = await waitFor('the adopted cluster names its bindings', async () => {
      const condition = await conditionOf('cluster', 'k3s-prod', 'Supported');
      return condition?.status === 'False' ? condition : undefined;
    });
    expect(adopted.message).toBe('not acted on: spec.bindings: not applied: the server object is adopted, not made by this resource');
    expect((await client.listRoleBindings()).map((binding) => binding.name)).not.toContain(`operator.cluster.${NS}.k3s-prod.write`);

    // driftDetection false: a deleted object is reported as drift and left deleted.
    await kubectlOn(DEV, ['delete', 'configmap', 'upgrade-plan', '-n', NS]);
    await waitFor('the drift reported', async () =>
      (await get('servicedeployment', 'by-handle')).status?.components?.some(
        (c) => c.name === 'upgrade-plan' && (c as { drift?: { state: string } }).drift?.state === 'MISSING',
      ),
    );
    expect(await kubectlOn(DEV, ['get', 'configmap', 'upgrade-plan', '-n', NS, '--ignore-not-found', '-o', 'name'])).toBe('');

    // A new version is a new revision; the drift stays unrepaired until then, and that revision applies it again.
    await kubectl([
      'patch',
      'servicedeployment.deployments.gantry.dev',
      'by-handle',
      '-n',
      NS,
      '--type=merge',
      '-p',
      '{"spec":{"version":"1.4.3"}}',
    ]);
    await waitFor('revision 2 applied', async () => (await client.getService('k3s-test', 'by-handle')).appliedRevision === 2, 90_000);
    expect((await client.listRevisions('k3s-test', 'by-handle')).map((revision) => revision.version)).toEqual(['1.4.3', '1.4.2']);
    expect(await kubectlOn(DEV, ['get', 'configmap', 'upgrade-plan', '-n', NS, '-o', 'name'])).toBe('configmap/upgrade-plan');

    // A Lua values script would change the chart's values: nothing is sent, the condition says why.
    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'ServiceDeployment',
        metadata: { name: 'lua-values', namespace: NS },
        spec: {
          cluster: 'k3s-test',
          namespace: APP_NS,
          helm: { url: 'https://charts.invalid', chart: 'app', version: '1.0.0', luaScript: 'values = {replicas = 3}' },
        },
      },
    ]);
    const blocked = await notSynchronized('servicedeployment', 'lua-values');
    expect(blocked).toMatchObject({ reason: 'UnsupportedField' });
    expect(blocked.message).toBe(
      'spec.helm.luaScript: Gantry runs no Lua: give the values in helm.values or helm.valuesFiles; nothing is sent until it is removed',
    );
    await expect(client.getService('k3s-test', 'lua-values')).rejects.toThrow();
    expect((await get('servicedeployment', 'lua-values')).metadata.finalizers ?? []).toEqual([]);

    // Both a handle and a clusterRef: which one is meant is not guessed.
    await apply([
      serviceDeployment('two-clusters', {
        cluster: 'k3s-test',
        repositoryRef: { name: `console-${suffix}` },
        git: { ref: 'main', folder: 'test-apps/k3s' },
      }),
    ]);
    expect(await notSynchronized('servicedeployment', 'two-clusters')).toMatchObject({
      reason: 'InvalidSpec',
      message: 'give spec.cluster (a handle) or spec.clusterRef, not both',
    });

    for (const name of ['by-handle', 'lua-values', 'two-clusters'])
      await kubectl(['delete', 'servicedeployment.deployments.gantry.dev', name, '-n', NS, '--wait=true', '--timeout=90s']);
    await expect(client.getService('k3s-test', 'by-handle')).rejects.toThrow();
    // Its role bindings went with it.
    expect((await client.listRoleBindings()).map((binding) => binding.name).filter((name) => name.startsWith('operator.'))).toEqual([]);
  });

  test('serves metrics of every kind and probes that are ready once the watches listed', async () => {
    await operator.waitForSync();
    expect((await fetch(`http://127.0.0.1:${operator.probePort}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${operator.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/controller_runtime_reconcile_total\{controller="servicedeployment",result="success"\} [1-9]/);
    expect(metrics).toContain('controller="notificationrouter"');
  });

  test('deleting an adopted Cluster resource leaves the server cluster as it is', async () => {
    await kubectl(['delete', 'cluster.deployments.gantry.dev', 'k3s-prod', '-n', NS, '--wait=true', '--timeout=30s']);
    expect((await client.getCluster(`k3s-prod-${suffix}`)).name).toBe(`k3s-prod-${suffix}`);
  });

  test('bad input: a missing cluster waits, a Secret without its keys and a spec the server refuses are conditions naming them', async () => {
    const service = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: 'deployments.gantry.dev/v1alpha1',
      kind: 'ServiceDeployment',
      metadata: { name, namespace: NS },
      spec: {
        namespace: APP_NS,
        clusterRef: { name: 'k3s-test' },
        repositoryRef: { name: `console-${suffix}` },
        git: { ref: 'main', folder: 'test-apps/k3s' },
        ...spec,
      },
    });
    await apply([
      service('no-cluster', { clusterRef: { name: 'nowhere' } }),
      service('bad-ref', { git: { ref: 'no-such-branch', folder: 'test-apps/k3s' } }),
      service('no-secret', { configurationRef: { name: 'missing' } }),
      service('secret-chart', {
        helm: { repositoryRef: { name: `console-${suffix}` }, git: { ref: 'main', folder: 'charts/hello' }, valuesFrom: { name: 'x' } },
      }),
      service('pathless', {
        sources: [{ repositoryRef: { name: `console-${suffix}` }, git: { ref: 'main', folder: 'test-apps/shared' } }],
      }),
      service('bad-values', { renderers: [{ path: '.', type: 'HELM', helm: { values: '- a list' } }] }),
    ]);
    const synchronized = (name: string) => notSynchronized('servicedeployment', name);
    // A Secret's values would be stored in clear in a chart from git's renderer: refused, never sent.
    expect(await synchronized('secret-chart')).toMatchObject({
      reason: 'InvalidSpec',
      message: expect.stringContaining('spec.helm.valuesFrom'),
    });
    expect(await synchronized('pathless')).toMatchObject({
      reason: 'InvalidSpec',
      message: expect.stringContaining('spec.sources[0].path'),
    });
    expect(await synchronized('bad-values')).toMatchObject({
      reason: 'InvalidSpec',
      message: expect.stringContaining('spec.renderers[0].helm.values'),
    });
    expect(await synchronized('no-cluster')).toMatchObject({
      reason: 'Waiting',
      message: `Cluster ${NS}/nowhere (spec.clusterRef) not found`,
    });
    expect(await synchronized('no-secret')).toMatchObject({
      reason: 'Waiting',
      message: `Secret ${NS}/missing (spec.configurationRef) not found`,
    });
    const refused = await synchronized('bad-ref');
    expect(refused.reason).toBe('Refused');
    expect(refused.message).toContain('no-such-branch');
    expect(refused.message).toContain('body.git.ref');
    expect((await client.listServices('k3s-test')).map((s) => s.name)).toEqual([]);

    await kubectl(['create', 'secret', 'generic', 'creds', '-n', NS, '--from-literal=user=someone']);
    await apply([
      {
        apiVersion: 'deployments.gantry.dev/v1alpha1',
        kind: 'GitRepository',
        metadata: { name: `private-${suffix}` },
        spec: { url: 'https://git.invalid/private.git', credentialsRef: { name: 'creds', namespace: NS } },
      },
    ]);
    const credentials = await waitFor('the GitRepository not synchronized', async () => {
      const resource = await kubectlJson<Resource>(['get', 'gitrepositories.deployments.gantry.dev', `private-${suffix}`]);
      return resource.status?.conditions?.find((c) => c.type === 'Synchronized' && c.status === 'False');
    });
    expect(credentials).toMatchObject({
      reason: 'InvalidSpec',
      message: 'Secret creds (spec.credentialsRef) needs keys username and password, or privateKey',
    });
    await kubectl(['delete', 'gitrepositories.deployments.gantry.dev', `private-${suffix}`, '--wait=false']);

    // The referent arriving later is taken up without anything else being done.
    await apply([
      { apiVersion: 'deployments.gantry.dev/v1alpha1', kind: 'Cluster', metadata: { name: 'nowhere', namespace: NS }, spec: {} },
    ]);
    await waitFor(
      'no-cluster synchronized',
      async () => (await conditionOf('servicedeployment', 'no-cluster', 'Synchronized'))?.status === 'True',
    );
    // The API refuses what the CRD schema does not: the API server names the field.
    const invalid = await kubectl(['apply', '-f', '-'], toYaml(service('invalid', { namespace: 42 }))).catch(
      (error: Error) => error.message,
    );
    expect(invalid).toContain('spec.namespace');
  });
});
