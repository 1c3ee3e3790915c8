/**
 * `gantry agent install` into the local cluster: the agent's namespace, RBAC, token Secret and Deployment, applied
 * by the engine; a re-install with a new token changes the Secret and never prints a token.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { gantry, kubectl, kubectlJson, localContext, namespaceGone } from '../support/cli.ts';

describe('gantry agent install', () => {
  // fleet-kept-agent.test.ts uses the same namespace, and deletes it without waiting.
  beforeAll(() => namespaceGone('gantry-agent'));

  afterAll(async () => {
    await kubectl(['delete', 'namespace', 'gantry-agent', '--ignore-not-found', '--wait=false']);
    await kubectl(['delete', 'clusterrolebinding', 'gantry-agent-cluster-admin', '--ignore-not-found']);
  });

  const install = async (token: string) =>
    gantry([
      'agent',
      'install',
      '--server',
      'http://gantry.example:8090',
      '--token',
      token,
      '--context',
      await localContext(),
      '-y',
      '--image',
      'registry.invalid/gantry:test',
    ]);

  test('installs the agent with its token, and re-keys it on a second install', async () => {
    const first = await install('gantry-deploy-first-token-value');
    expect(first.code).toBe(0);
    expect(first.stdout + first.stderr).not.toContain('first-token-value');
    const deployment = await kubectlJson<{
      spec: { template: { spec: { containers: Array<{ image: string; args: string[] }>; serviceAccountName: string } } };
      status: { availableReplicas?: number };
    }>(['get', 'deployment', 'gantry-agent', '-n', 'gantry-agent']);
    expect(deployment.spec.template.spec.serviceAccountName).toBe('gantry-agent');
    expect(deployment.spec.template.spec.containers[0]).toMatchObject({
      image: 'registry.invalid/gantry:test',
      args: [
        'agent',
        'run',
        '--server',
        'http://gantry.example:8090',
        '--token-secret',
        'gantry-agent/gantry-agent-token',
        '--data-dir',
        '/var/lib/gantry/agent',
        '--health-addr',
        ':8081',
        '--leader-elect',
      ],
    });
    expect(deployment.status.availableReplicas).toBe(1);
    const binding = await kubectlJson<{ roleRef: { name: string } }>(['get', 'clusterrolebinding', 'gantry-agent-cluster-admin']);
    expect(binding.roleRef.name).toBe('cluster-admin');
    const secret = async () =>
      Buffer.from(
        (await kubectlJson<{ data: { token: string } }>(['get', 'secret', 'gantry-agent-token', '-n', 'gantry-agent'])).data.token,
        'base64',
      ).toString();
    expect(await secret()).toBe('gantry-deploy-first-token-value');

    const second = await install('gantry-deploy-second-token-value');
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('gantry-agent/Secret/gantry-agent-token');
    expect(second.stdout + second.stderr).not.toMatch(/first-token-value|second-token-value/);
    expect(await secret()).toBe('gantry-deploy-second-token-value');
  });
});
