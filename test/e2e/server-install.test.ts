/**
 * `gantry server install` into the local cluster: namespace gantry-system, the server's Deployment on a volume,
 * Service gantry-server:8090, applied by the engine; the admin token Secret is made once and kept by re-installs,
 * and never printed. Its token is one `gantry server --admin-token-file` takes as the first admin token, as the
 * pod does (kwok runs no container, so a local server process stands in for it).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { gantry, kubectl, kubectlJson, localContext, startGantry } from '../support/cli.ts';

const INSTALLED = 'kluctl.io/discriminator=gantry-server-install';

describe('gantry server install', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-server-install-'));
  });

  afterAll(async () => {
    // The namespace stays: other files use it.
    await kubectl(['delete', 'deployments,services,serviceaccounts,persistentvolumeclaims', '-n', 'gantry-system', '-l', INSTALLED]).catch(
      () => '',
    );
    await kubectl(['delete', 'secret', 'gantry-admin-token', '-n', 'gantry-system', '--ignore-not-found']).catch(() => '');
    await rm(dir, { recursive: true, force: true });
  });

  const install = async (extra: string[] = []) =>
    gantry(['server', 'install', '--context', await localContext(), '--image', 'registry.invalid/gantry:test', '-y', ...extra]);
  const adminToken = async () =>
    Buffer.from(
      (await kubectlJson<{ data: { token: string } }>(['get', 'secret', 'gantry-admin-token', '-n', 'gantry-system'])).data.token,
      'base64',
    ).toString();

  test('installs the server on a bound volume with a new admin token Secret; a re-install keeps both', async () => {
    await kubectl(['delete', 'secret', 'gantry-admin-token', '-n', 'gantry-system', '--ignore-not-found']).catch(() => '');
    const first = await install();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('made Secret gantry-system/gantry-admin-token');
    expect(first.stderr).toContain("kubectl get secret gantry-admin-token -n gantry-system -o jsonpath='{.data.token}' | base64 -d");
    const token = await adminToken();
    expect(token).toMatch(/^gantry-api-[\w-]{43}$/);
    expect(first.stdout + first.stderr).not.toContain(token);

    const deployment = await kubectlJson<{
      spec: { template: { spec: { containers: Array<Record<string, unknown>>; volumes: Array<Record<string, unknown>> } } };
      status: { availableReplicas?: number };
    }>(['get', 'deployment', 'gantry-server', '-n', 'gantry-system']);
    expect(deployment.spec.template.spec.containers[0]).toMatchObject({
      image: 'registry.invalid/gantry:test',
      args: expect.arrayContaining(['server', '--listen', '0.0.0.0:8090', '--admin-token-file', '/etc/gantry/admin/token']),
      readinessProbe: { httpGet: { path: '/readyz', port: 'http' } },
      securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
    });
    expect(deployment.spec.template.spec.volumes).toContainEqual(
      expect.objectContaining({ name: 'admin-token', secret: expect.objectContaining({ secretName: 'gantry-admin-token' }) }),
    );
    expect(deployment.status.availableReplicas).toBe(1);
    const claim = await kubectlJson<{ status: { phase: string } }>(['get', 'pvc', 'gantry-server-data', '-n', 'gantry-system']);
    expect(claim.status.phase).toBe('Bound');
    const service = await kubectlJson<{ spec: { ports: Array<{ port: number }> } }>([
      'get',
      'service',
      'gantry-server',
      '-n',
      'gantry-system',
    ]);
    expect(service.spec.ports.map((p) => p.port)).toEqual([8090]);

    const again = await install(['-o', 'json']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('kept Secret gantry-system/gantry-admin-token');
    const result = JSON.parse(again.stdout) as { newObjects: unknown[]; changedObjects: unknown[]; deletedObjects: unknown[] };
    expect([result.newObjects, result.changedObjects, result.deletedObjects]).toEqual([[], [], []]);
    expect(await adminToken()).toBe(token);
  });

  test("the Secret's token is the first admin token of a server given it with --admin-token-file", async () => {
    const tokenFile = path.join(dir, 'token');
    const token = await adminToken();
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
    const env = { GANTRY_DATA_DIR: path.join(dir, 'data'), GANTRY_ADMIN_TOKEN_FILE: tokenFile, XDG_CONFIG_HOME: path.join(dir, 'config') };
    const server = startGantry(['server', '--listen', '127.0.0.1:0'], { env });
    try {
      const url = (await server.waitForOutput('stdout', /"url":"(http:[^"]+)"/))[1]!;
      expect(server.output.stderr).not.toContain('gantry-api-');
      const login = await gantry(['login', '--server', url, '--token', token], { env });
      expect(login.code, login.stderr).toBe(0);
    } finally {
      await server.stop();
    }
  });

  test('bad input: an admin token file without a token, and an unknown context, are refused naming them', async () => {
    const badFile = path.join(dir, 'not-a-token');
    await writeFile(badFile, 'hunter2\n', { mode: 0o600 });
    const env = { GANTRY_DATA_DIR: path.join(dir, 'bad-data') };
    const refused = await gantry(['server', '--listen', '127.0.0.1:0', '--admin-token-file', badFile], { env });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`--admin-token-file ${badFile}: not a Gantry API token`);
    expect(refused.stderr).not.toContain('hunter2');

    const unknown = await gantry(['server', 'install', '--context', 'no-such-context', '-y']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr + unknown.stdout).toContain("context 'no-such-context' not found in kubeconfig");
  });
});
