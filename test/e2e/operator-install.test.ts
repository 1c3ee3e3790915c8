/**
 * `gantry operator install` into the local cluster: the fleet's CRDs, namespace gantry-system, least-privilege RBAC
 * (checked with `kubectl auth can-i` as the operator's ServiceAccount), the admin token Secret and the Deployment,
 * applied by the engine; a re-install changes nothing; the token is never printed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { gantry, kubectl, kubectlJson, localContext } from '../support/cli.ts';
import { installGitRepositoryCrd, installHelmRepositoryCrd } from '../support/flux.ts';

const OPERATOR = 'system:serviceaccount:gantry-system:gantry-operator';

describe('gantry operator install', () => {
  let dir: string;
  const token = `gantry-api-${randomBytes(32).toString('base64url')}`;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gantry-operator-install-'));
    await writeFile(path.join(dir, 'token'), `${token}\n`, { mode: 0o600 });
    // kubectl auth can-i answers no for a resource the API server does not serve.
    await installGitRepositoryCrd();
    await installHelmRepositoryCrd();
  });

  afterAll(async () => {
    // The CRDs and the namespace stay: other files use them.
    const installed = 'kluctl.io/discriminator=gantry-operator-install';
    await kubectl(['delete', 'deployments,serviceaccounts,secrets', '-n', 'gantry-system', '-l', installed, '--wait=false']).catch(
      () => '',
    );
    await kubectl(['delete', 'clusterroles,clusterrolebindings', '-l', installed]).catch(() => '');
    await rm(dir, { recursive: true, force: true });
  });

  const install = async (extra: string[] = []) => gantry([...(await installArgs()), '--token-file', path.join(dir, 'token'), ...extra]);

  test('bad input: without --token-file, a missing admin token Secret is refused, saying how to make it', async () => {
    await kubectl(['delete', 'secret', 'gantry-admin-token', '-n', 'gantry-system', '--ignore-not-found']).catch(() => '');
    const run = await gantry(await installArgs());
    expect(run.code).toBe(1);
    expect(run.stderr + run.stdout).toContain(
      'no --token-file, and no token in Secret gantry-system/gantry-admin-token: give --token-file, or run gantry server install first',
    );
  });

  test('installs CRDs, RBAC, token Secret and Deployment; a re-install changes nothing', async () => {
    const first = await install();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout + first.stderr).not.toContain(token);
    const deployment = await kubectlJson<{
      spec: { template: { spec: { containers: Array<{ image: string; args: string[] }>; serviceAccountName: string } } };
      status: { availableReplicas?: number };
    }>(['get', 'deployment', 'gantry-operator', '-n', 'gantry-system']);
    expect(deployment.spec.template.spec.serviceAccountName).toBe('gantry-operator');
    expect(deployment.spec.template.spec.containers[0]).toMatchObject({
      image: 'registry.invalid/gantry:test',
      args: [
        'operator',
        'run',
        '--server',
        'http://gantry-server.gantry-system.svc:8090',
        '--token-file',
        '/etc/gantry/admin/token',
        '--leader-election',
        '--metrics-bind-address',
        '0.0.0.0:8080',
        '--health-probe-bind-address',
        '0.0.0.0:8081',
      ],
      readinessProbe: { httpGet: { path: '/readyz', port: 'probes' } },
    });
    expect(deployment.status.availableReplicas).toBe(1);
    const secret = await kubectlJson<{ data: { token: string } }>(['get', 'secret', 'gantry-admin-token', '-n', 'gantry-system']);
    expect(Buffer.from(secret.data.token, 'base64').toString()).toBe(token);
    expect(await kubectl(['get', 'crd', 'globalservices.deployments.gantry.dev', '-o', 'name'])).toContain('globalservices');
    // The schemas' descriptions reach kubectl explain.
    const explained = await kubectl(['explain', 'servicedeployments.spec.git', '--api-version=deployments.gantry.dev/v1alpha1']);
    expect(explained).toContain('Where in the repository the service is.');

    const again = await install(['-o', 'json']);
    const result = JSON.parse(again.stdout) as { newObjects: unknown[]; changedObjects: unknown[]; deletedObjects: unknown[] };
    expect([result.newObjects, result.changedObjects, result.deletedObjects]).toEqual([[], [], []]);

    // Without --token-file the Secret's token is kept (as after gantry server install), and nothing changes.
    const kept = await gantry([...(await installArgs()), '-o', 'json']);
    expect(kept.code, kept.stderr).toBe(0);
    const keptResult = JSON.parse(kept.stdout) as typeof result;
    expect([keptResult.newObjects, keptResult.changedObjects, keptResult.deletedObjects]).toEqual([[], [], []]);
    expect(kept.stdout + kept.stderr).not.toContain(token);
  });

  test("the operator's ServiceAccount may do what the operator does, and no more", async () => {
    const can = async (...args: string[]) => (await kubectl(['auth', 'can-i', ...args, `--as=${OPERATOR}`]).catch(() => 'no')).trim();
    expect(await can('patch', 'servicedeployments.deployments.gantry.dev', '-A', '--subresource=status')).toBe('yes');
    expect(await can('update', 'clusters.deployments.gantry.dev', '-n', 'fleet')).toBe('yes');
    expect(await can('create', 'secrets', '-n', 'fleet')).toBe('yes');
    expect(await can('create', 'leases.coordination.k8s.io', '-n', 'gantry-system')).toBe('yes');
    expect(await can('watch', 'gitrepositories.source.toolkit.fluxcd.io', '-A')).toBe('yes');
    expect(await can('watch', 'helmrepositories.source.toolkit.fluxcd.io', '-A')).toBe('yes');
    expect(await can('delete', 'secrets', '-n', 'fleet')).toBe('no');
    expect(await can('create', 'deployments.apps', '-n', 'fleet')).toBe('no');
    expect(await can('delete', 'customresourcedefinitions.apiextensions.k8s.io')).toBe('no');
  });

  test('bad input: a missing --server is refused before anything is applied', async () => {
    const run = await gantry(['operator', 'install', '--token-file', path.join(dir, 'token')]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("required option '--server <url>' not specified");
  });

  async function installArgs(): Promise<string[]> {
    return [
      'operator',
      'install',
      '--server',
      'http://gantry-server.gantry-system.svc:8090',
      '--context',
      await localContext(),
      '--image',
      'registry.invalid/gantry:test',
      '-y',
    ];
  }
});
