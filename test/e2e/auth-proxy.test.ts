/**
 * The auth proxy end to end: a server (SQLite) in this process, the two workload clusters with their agents, and
 * the real kubectl reaching them through `gantry cluster kubeconfig` as users of the server: a reader lists pods and
 * follows a watch, is refused Secrets and writes by the cluster's RBAC (impersonated, whatever headers they send),
 * a user bound to dev only cannot reach prod, and a response larger than the tunnel's window arrives whole.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SecretBox } from '../../src/crypto/secret-box.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';
import { type RunningAgent, startAgent } from '../../src/agent/agent.ts';
import { FleetClient } from '../../src/client/fleet-client.ts';
import { capturedLogger, waitFor } from '../../src/controller/test-support.ts';
import { Engine } from '../../src/engine.ts';
import { type FleetServer, startFleetServer } from '../../src/server/server.ts';
import { startWebUi } from '../../src/webui/server.ts';
import { clusterLayout } from '../../scripts/cluster/layout.ts';
import { gantry } from '../support/cli.ts';
import { testConfig } from '../support/engine.ts';
import { REPO_ROOT } from '../support/fixtures.ts';
import { createNetworkNamespace } from '../support/network-namespace.ts';
import { apiCall, userToken as userTokenOf, pushedAgentOptions, testServerOptions } from '../support/fleet.ts';
import { startTlsFront, type TlsFront } from '../support/tls-front.ts';
import { kubectlOn, WORKLOAD_CLUSTERS, workloadKubeConfig } from '../support/workload-clusters.ts';

const [DEV, PROD] = WORKLOAD_CLUSTERS;

const PAGE_HTML = '<!doctype html><script>fetch("/v1/me/tokens", { method: "POST" })</script>';
/** What the hostile page sends besides its HTML; none of it may reach the browser. */
const PAGE_HEADERS: Record<string, string> = {
  'set-cookie': 'gantry_session=chosen-by-the-pod; Path=/',
  'clear-site-data': '"cookies"',
  refresh: '0; url=https://evil.example/',
  link: '<https://evil.example/style.css>; rel=stylesheet',
  'access-control-allow-origin': '*',
  'access-control-allow-credentials': 'true',
  'content-security-policy': 'script-src *',
  'service-worker-allowed': '/',
  'www-authenticate': 'Basic realm="gantry"',
  'x-frame-options': 'ALLOWALL',
};
const PAGE_ONLY_HEADERS = Object.keys(PAGE_HEADERS).filter((name) => name !== 'content-security-policy');

/** The hostile page's server, run by Node inside the network namespace: one line per request, the port first. */
const PAGE_SERVER = `
const page = require('node:http').createServer((request, response) => {
  process.stdout.write('request\\n');
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...JSON.parse(process.env.PAGE_HEADERS) });
  response.end(process.env.PAGE_HTML);
});
page.listen(0, process.env.PAGE_ADDRESS, () => process.stdout.write('port ' + page.address().port + '\\n'));
`;

/**
 * The hostile page, served in a network namespace of the test's own (support/network-namespace.ts): the API server
 * proxies to pod IPs, never to loopback ones, and a test reaches no address it did not make.
 */
async function servePage(): Promise<{ address: string; port: number; requests(): number; close(): Promise<void> }> {
  const namespace = await createNetworkNamespace();
  const server = namespace.spawn(path.join(REPO_ROOT, 'node_modules/.bin/node'), ['--input-type=commonjs', '-e', PAGE_SERVER], {
    PAGE_ADDRESS: namespace.address,
    PAGE_HTML,
    PAGE_HEADERS: JSON.stringify(PAGE_HEADERS),
  });
  const exited = once(server, 'exit');
  let requests = 0;
  let port = 0;
  const listening = Promise.withResolvers<void>();
  createInterface({ input: server.stdout! }).on('line', (line) => {
    if (line === 'request') requests++;
    else if (line.startsWith('port ')) ((port = Number(line.slice(5))), listening.resolve());
  });
  void exited.then(() => listening.reject(new Error('the page server exited before listening')));
  await listening.promise;
  return {
    address: namespace.address,
    port,
    requests: () => requests,
    async close() {
      server.kill();
      await exited;
      await namespace.remove();
    },
  };
}
const NS = `proxy-${randomBytes(3).toString('hex')}`;
const KUBECTL = path.join(clusterLayout().bin, 'kubectl');

describe('the auth proxy', () => {
  let dir: string;
  let server: FleetServer;
  /** TLS in front of the server, as an ingress: kubectl sends credentials only over TLS. */
  let front: TlsFront;
  let engine: Engine;
  const agents: RunningAgent[] = [];
  /** kubeconfig files per user and cluster, written by `gantry cluster kubeconfig`. */
  const kubeconfigs: Record<string, string> = {};
  let devonly: string;
  let rick: string;
  const { log } = capturedLogger('info');

  const userToken = (name: string, role: string, scope: unknown) => userTokenOf(server, name, role, scope, 'kubectl');

  async function writeKubeconfig(user: string, token: string, cluster: string): Promise<string> {
    const file = path.join(dir, `${user}-${cluster}.kubeconfig`);
    const run = await gantry(['cluster', 'kubeconfig', cluster, '--file', file, '--certificate-authority', front.caFile], {
      env: userEnv(token),
    });
    expect(run).toMatchObject({ code: 0, stderr: expect.stringContaining('wrote') });
    return file;
  }

  /** The CLI as the user, through the TLS front (its CA trusted as NODE_EXTRA_CA_CERTS). */
  const userEnv = (token: string) => ({ GANTRY_SERVER: front.url, GANTRY_TOKEN: token, NODE_EXTRA_CA_CERTS: front.caFile });

  const kubectlAs = (kubeconfig: string, args: readonly string[]) =>
    execa(KUBECTL, ['--kubeconfig', kubeconfig, ...args], { reject: false, env: { KUBECONFIG: '' } });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-proxy-'));
    server = await startFleetServer(
      testServerOptions(
        { databaseUrl: path.join(dir, 'gantry.db'), cacheDir: path.join(dir, 'cache'), log },
        { gitPollIntervalMs: 60_000 },
      ),
    );
    front = await startTlsFront(server.url, dir);
    const client = new FleetClient({ server: server.url, token: server.adminToken! });
    engine = new Engine(testConfig());
    for (const cluster of WORKLOAD_CLUSTERS) {
      const { deployToken } = await client.createCluster({ name: cluster, tags: { env: cluster } });
      const options = { server: server.url, token: deployToken, engine, kubeConfig: workloadKubeConfig(cluster) };
      agents.push(
        startAgent(pushedAgentOptions({ ...options, dataDir: path.join(dir, `agent-${cluster}`), log: log.child({ agent: cluster }) })),
      );
    }
    for (const cluster of WORKLOAD_CLUSTERS) {
      await kubectlOn(cluster, ['create', 'namespace', NS]);
      await kubectlOn(cluster, ['create', 'configmap', 'greeting', '-n', NS, '--from-literal=hello=world']);
      await kubectlOn(cluster, ['create', 'secret', 'generic', 'password', '-n', NS, '--from-literal=password=hunter2-proxy']);
      await kubectlOn(cluster, ['create', 'deployment', 'web', '-n', NS, '--image=registry.invalid/web:1']);
    }
    rick = await userToken('rick', 'reader', 'all');
    kubeconfigs['rick'] = await writeKubeconfig('rick', rick, DEV);
    devonly = await userToken('devonly', 'reader', { clusters: [DEV] });
    kubeconfigs['devonly-dev'] = await writeKubeconfig('devonly', devonly, DEV);
    // The agents hold their tunnels once their push channels are up.
    await waitFor('both agents connected', async () => server.channels.connected() === 2 || undefined, 30_000);
  });

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    await front?.close();
    await server?.close();
    await engine?.close();
    for (const cluster of WORKLOAD_CLUSTERS) await kubectlOn(cluster, ['delete', 'namespace', NS, '--wait=false']).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  test('kubectl through `gantry cluster kubeconfig` lists the pods of a workload cluster', async () => {
    await waitFor(
      'the Deployment’s pod',
      async () => (await kubectlOn(DEV, ['get', 'pods', '-n', NS, '-o', 'name'])).trim() || undefined,
      30_000,
    );
    const pods = await kubectlAs(kubeconfigs['rick']!, [
      'get',
      'pods',
      '-A',
      '-o',
      'custom-columns=NS:.metadata.namespace,NAME:.metadata.name',
    ]);
    expect(pods).toMatchObject({ exitCode: 0 });
    expect(pods.stdout).toMatch(new RegExp(`^${NS}\\s+web-`, 'm'));
  });

  test('kubectl follows a watch through the tunnel; stopping it closes the tunnel stream', async () => {
    const watcher = spawn(KUBECTL, ['--kubeconfig', kubeconfigs['rick']!, 'get', 'configmaps', '-n', NS, '-w', '-o', 'name'], {
      env: { ...process.env, KUBECONFIG: '' },
    });
    const lines = createInterface({ input: watcher.stdout });
    const seen: string[] = [];
    lines.on('line', (line) => seen.push(line));
    try {
      await waitFor('the initial list', async () => seen.includes('configmap/greeting') || undefined, 20_000);
      await kubectlOn(DEV, ['create', 'configmap', 'arrived-later', '-n', NS]);
      await waitFor('the watch event', async () => seen.includes('configmap/arrived-later') || undefined, 20_000);
      expect(server.channels.tunnel(await clusterId(DEV))!.size).toBeGreaterThan(0);
    } finally {
      watcher.kill('SIGTERM');
      await once(watcher, 'exit');
    }
    await waitFor('the tunnel stream closed', async () => server.channels.tunnel(await clusterId(DEV))!.size === 0 || undefined, 10_000);
  });

  test("the cluster's RBAC decides as the impersonated reader: no Secrets, no writes, whatever headers are sent", async () => {
    const secrets = await kubectlAs(kubeconfigs['rick']!, ['get', 'secrets', '-n', NS]);
    expect(secrets.exitCode).not.toBe(0);
    expect(secrets.stderr).toContain('User "rick" cannot list resource "secrets"');
    // The command results' namespace is the exception: its Secrets are KluctlDeployments' obfuscated results.
    expect(await kubectlAs(kubeconfigs['rick']!, ['get', 'secrets', '-n', 'gantry-results'])).toMatchObject({ exitCode: 0 });
    const deleted = await kubectlAs(kubeconfigs['rick']!, ['delete', 'configmap', 'greeting', '-n', NS]);
    expect(deleted.stderr).toContain('User "rick" cannot delete resource "configmaps"');
    expect(await kubectlOn(DEV, ['get', 'configmap', 'greeting', '-n', NS, '-o', 'name'])).toBe('configmap/greeting');

    const smuggled = await kubectlAs(kubeconfigs['rick']!, [
      'get',
      'secrets',
      '-n',
      NS,
      '--as',
      'system:admin',
      '--as-group',
      'system:masters',
    ]);
    expect(smuggled.exitCode).not.toBe(0);
    expect(smuggled.stdout + smuggled.stderr).not.toContain('password');
  });

  test('a user bound to dev only reaches dev, and the server refuses prod before any agent sees it', async () => {
    expect(await kubectlAs(kubeconfigs['devonly-dev']!, ['get', 'configmap', 'greeting', '-n', NS, '-o', 'name'])).toMatchObject({
      exitCode: 0,
      stdout: 'configmap/greeting',
    });
    expect(await gantry(['cluster', 'kubeconfig', PROD], { env: userEnv(devonly) })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('may not read cluster test-prod'),
    });
    // The same kubeconfig pointed at prod's proxy path by hand.
    const prodConfig = path.join(dir, 'devonly-prod.kubeconfig');
    await writeFile(
      prodConfig,
      (await readFile(kubeconfigs['devonly-dev']!, 'utf8')).replace(`/v1/clusters/${DEV}/proxy`, `/v1/clusters/${PROD}/proxy`),
    );
    const refused = await kubectlAs(prodConfig, ['get', '--raw', `/api/v1/namespaces/${NS}/configmaps`]);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('may not proxy cluster test-prod');
  });

  test("a response larger than the tunnel's flow-control window arrives whole", async () => {
    const value = randomBytes(600 * 1024)
      .toString('base64')
      .slice(0, 900 * 1024);
    // create, not apply: apply's last-applied annotation may not hold 900 KiB.
    await execa(KUBECTL, ['create', '-f', '-'], {
      env: { KUBECONFIG: clusterLayout(DEV).kubeconfig },
      input: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'large', namespace: NS }, data: { value } }),
    });
    const read = await kubectlAs(kubeconfigs['rick']!, ['get', 'configmap', 'large', '-n', NS, '-o', 'jsonpath={.data.value}']);
    expect(read.exitCode).toBe(0);
    expect(read.stdout.length).toBe(value.length);
    expect(read.stdout === value).toBe(true);
  });

  test('a page a pod serves through the proxy subresource comes without its cookies, as an attachment, never as HTML', async () => {
    // A workload answering what a hostile page would: HTML with script, cookies for Gantry's origin, navigation.
    const page = await servePage();
    try {
      // A pod whose IP is the namespace's (kwok runs no container: its status is written here), and a grant of
      // pods/proxy to the reader there, as a cluster's admin would add to what the agent's ClusterRoles give.
      const node = (await kubectlOn(DEV, ['get', 'nodes', '-o', 'jsonpath={.items[0].metadata.name}'])).trim();
      await execa(KUBECTL, ['create', '-f', '-'], {
        env: { KUBECONFIG: clusterLayout(DEV).kubeconfig },
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'page', namespace: NS },
          spec: { nodeName: node, containers: [{ name: 'page', image: 'registry.invalid/page:1' }] },
        }),
      });
      const status = { status: { podIP: page.address, podIPs: [{ ip: page.address }] } };
      await kubectlOn(DEV, ['patch', 'pod', 'page', '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
      await kubectlOn(DEV, ['create', 'role', 'pod-proxy', '-n', NS, '--verb=get', '--resource=pods/proxy']);
      await kubectlOn(DEV, ['create', 'rolebinding', 'rick-pod-proxy', '-n', NS, '--role=pod-proxy', '--user=rick']);

      const proxied = await fetch(`${server.url}/v1/clusters/${DEV}/proxy/api/v1/namespaces/${NS}/pods/page:${page.port}/proxy/`, {
        headers: { authorization: `Bearer ${rick}` },
      });
      expect(proxied.status).toBe(200);
      // The page counts a request on its own pipe, which may come after the answer.
      await expect.poll(() => page.requests()).toBe(1);
      expect(Object.fromEntries(proxied.headers)).toMatchObject({
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment',
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
      });
      for (const dropped of PAGE_ONLY_HEADERS) expect(proxied.headers.get(dropped), dropped).toBeNull();
      // The bytes themselves pass: saved as a file, not shown.
      expect(await proxied.text()).toBe(PAGE_HTML);

      // The API's own answers keep their type, with the same protection.
      const json = await fetch(`${server.url}/v1/clusters/${DEV}/proxy/api/v1/namespaces/${NS}/configmaps/greeting`, {
        headers: { authorization: `Bearer ${rick}` },
      });
      expect(json.status).toBe(200);
      expect(json.headers.get('content-type')).toBe('application/json');
      expect(json.headers.get('content-disposition')).toBeNull();
      expect(json.headers.get('x-content-type-options')).toBe('nosniff');
      expect(json.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
      expect(((await json.json()) as { data: Record<string, string> }).data).toEqual({ hello: 'world' });

      // `gantry webui` proxies the same way, with the kubeconfig's own credentials.
      const webui = await startWebUi({ kubeConfig: workloadKubeConfig(DEV), host: '127.0.0.1', port: 0, log });
      try {
        const local = await fetch(`${webui.url}/v1/clusters/local/proxy/api/v1/namespaces/${NS}/pods/page:${page.port}/proxy/`);
        expect(local.status).toBe(200);
        await expect.poll(() => page.requests()).toBe(2);
        expect(local.headers.get('content-type')).toBe('application/octet-stream');
        expect(local.headers.get('content-disposition')).toBe('attachment');
        expect(local.headers.get('x-content-type-options')).toBe('nosniff');
        expect(local.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
        for (const dropped of PAGE_ONLY_HEADERS) expect(local.headers.get(dropped), dropped).toBeNull();
      } finally {
        await webui.close();
      }
    } finally {
      await page.close();
    }
  });

  async function clusterId(name: string): Promise<string> {
    return (await apiCall(server, 'GET', `/v1/clusters/${name}`, server.adminToken!)).body.id as string;
  }
});

describe('the auth proxy across replicas', () => {
  let database: TestDatabase;
  let dir: string;
  let engine: Engine;
  let agent: RunningAgent;
  /** `holding` holds the agent's socket; requests go to `other`. */
  let holding: FleetServer;
  let other: FleetServer;
  let holdingClosed = false;
  const { log } = capturedLogger('info');

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-proxy-replicas-'));
    const box = new SecretBox(randomBytes(32));
    const options = (name: string) =>
      testServerOptions({ databaseUrl: database.url, cacheDir: path.join(dir, name), log }, { box, heartbeatIntervalMs: 500 });
    holding = await startFleetServer(options('holding'));
    other = await startFleetServer(options('other'));
    const { deployToken } = await new FleetClient({ server: holding.url, token: holding.adminToken! }).createCluster({ name: DEV });
    engine = new Engine(testConfig());
    agent = startAgent(
      pushedAgentOptions({
        server: holding.url,
        token: deployToken,
        engine,
        kubeConfig: workloadKubeConfig(DEV),
        dataDir: path.join(dir, 'agent'),
        log,
      }),
    );
    await waitFor('the agent connected', async () => holding.channels.connected() === 1 || undefined, 30_000);
  });

  afterAll(async () => {
    await agent?.stop();
    await engine?.close();
    await other?.close();
    if (!holdingClosed) await holding?.close();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a request to a replica without the agent socket is passed to the one holding it, watches included', async () => {
    const token = holding.adminToken!;
    const list = await apiCall(other, 'GET', `/v1/clusters/${DEV}/proxy/api/v1/namespaces/default/configmaps`, token);
    expect(list).toMatchObject({ status: 200, body: { kind: 'ConfigMapList' } });

    const abort = new AbortController();
    const name = `passed-${randomBytes(3).toString('hex')}`;
    const watch = await fetch(`${other.url}/v1/clusters/${DEV}/proxy/api/v1/namespaces/default/configmaps?watch=true`, {
      headers: { authorization: `Bearer ${token}` },
      signal: abort.signal,
    });
    expect(watch.status).toBe(200);
    const reader = watch.body!.pipeThrough(new TextDecoderStream()).getReader();
    await kubectlOn(DEV, ['create', 'configmap', name, '-n', 'default']);
    try {
      let seen = '';
      while (!seen.includes(`"name":"${name}"`)) seen += (await reader.read()).value ?? '';
    } finally {
      abort.abort();
      await kubectlOn(DEV, ['delete', 'configmap', name, '-n', 'default']);
    }
  });

  test('when the holding replica is gone, the other says the agent is not connected', async () => {
    const token = holding.adminToken!;
    await agent.stop();
    await holding.close();
    holdingClosed = true;
    const answer = await apiCall(other, 'GET', `/v1/clusters/${DEV}/proxy/api`, token);
    expect(answer).toMatchObject({ status: 503, body: { kind: 'Status', message: `the agent of cluster ${DEV} is not connected` } });
  });
});
