/**
 * A Helm chart as a fleet service end to end: a real Helm repository on 127.0.0.1, a real server (SQLite) in this
 * process, the `gantry service` commands a user types, and the agent applying the chart into the local cluster with
 * the engine from the server's tarball alone (the chart pre-pulled in it). Changing values is a new revision that
 * reaches the cluster; values reach Helm verbatim (`{{ }}` is not Jinja2's).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { AgentOptions } from '../../src/agent/agent-state.ts';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { configMapTemplate, startChartRepository, type ChartRepository, type TestChart } from '../support/chart-server.ts';
import { gantry, kubectl, kubectlJson } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { pushedAgentOptions, serviceSettled, testServerOptions } from '../support/fleet.ts';

const NAMESPACE = `fleet-helm-${randomBytes(3).toString('hex')}`;
const chart = (version: string): TestChart => ({
  name: 'greeting',
  version,
  files: { 'templates/cm.yaml': configMapTemplate('{{ .Release.Name }}-greeting') },
});

describe('a helm service applied by the fleet agent', () => {
  let dir: string;
  let server: FleetServer;
  let charts: ChartRepository;
  let engine: Engine;
  let agent: RunningAgent;
  let agentOptions: () => AgentOptions;
  let client: FleetClient;
  let cliEnv: Record<string, string>;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-fleet-helm-'));
    charts = await startChartRepository();
    await charts.publish(chart('1.0.0'), chart('1.1.0'));
    server = await startFleetServer(
      testServerOptions({ databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'server-cache'), log }),
    );
    client = new FleetClient({ server: server.url, token: server.adminToken! });
    cliEnv = { GANTRY_SERVER: server.url, GANTRY_TOKEN: server.adminToken!, XDG_CONFIG_HOME: path.join(dir, 'config') };
    const { deployToken } = await client.createCluster({ name: 'local' });
    engine = new Engine(testConfig());
    agentOptions = () =>
      pushedAgentOptions({
        server: server.url,
        token: deployToken,
        engine,
        kubeConfig: loadKubeConfig({}),
        dataDir: path.join(dir, 'agent'),
        log,
      });
    agent = startAgent(agentOptions());
    await waitFor('the push channel', () => server.channels.connected() === 1);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine?.close();
    await server?.close();
    await charts?.close();
    await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=false']);
    await rm(dir, { recursive: true, force: true });
  });

  const healthyAt = (revision: number) => serviceSettled(client, 'local', 'hello', revision);

  const configMapData = async () =>
    (await kubectlJson<{ data: Record<string, string> }>(['get', 'configmap', 'hello-greeting', '-n', NAMESPACE])).data;

  test('gantry service create --helm-url … applies the newest chart in range, with the values given', async () => {
    const valuesFile = path.join(dir, 'values.yaml');
    await writeFile(valuesFile, 'value: from-file\nother: kept\n');
    const created = await gantry(
      [
        ...['service', 'create', 'hello', '--cluster', 'local', '--namespace', NAMESPACE],
        ...['--helm-url', charts.url, '--chart', 'greeting', '--chart-version', '~1.0'],
        ...['--values-file', valuesFile, '--set', 'value={{ .Release.Name }} one'],
      ],
      { env: cliEnv },
    );
    expect(created, created.stderr).toMatchObject({ code: 0 });
    expect(created.stdout).toMatch(/chart: +greeting 1\.0\.0 \(~1\.0\) from http:\/\/127\.0\.0\.1:\d+\/charts, release hello/);
    const healthy = await healthyAt(1);
    expect(healthy.components.map((c) => `${c.kind}/${c.name}:${c.state}`)).toEqual(['ConfigMap/hello-greeting:RUNNING']);
    expect(await configMapData()).toEqual({ chartVersion: '1.0.0', value: '{{ .Release.Name }} one' });
  });

  test('changing values (and the version) makes a new revision that reaches the cluster, the chart repository gone', async () => {
    // The agent is away while the server resolves and pulls; then the repository goes: the agent renders from the
    // tarball alone.
    await agent.stop();
    const updated = await gantry(
      ['service', 'update', 'hello', '--cluster', 'local', '--chart-version', '1.1.0', '--set', 'value=two', '-o', 'json'],
      { env: cliEnv },
    );
    expect(updated, updated.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(updated.stdout)).toMatchObject({ helm: { version: '1.1.0', values: { value: 'two' } }, revision: { number: 2 } });
    await charts.close();
    agent = startAgent(agentOptions());
    await healthyAt(2);
    expect(await configMapData()).toEqual({ chartVersion: '1.1.0', value: 'two' });

    const revisions = await gantry(['service', 'revisions', 'hello', '--cluster', 'local'], { env: cliEnv });
    expect(revisions.stdout).toMatch(/^2 +greeting 1\.1\.0 /m);
    expect(revisions.stdout).toMatch(/^1 +greeting 1\.0\.0 /m);
  });
});
