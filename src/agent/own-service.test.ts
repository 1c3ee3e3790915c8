/**
 * The agent's own service is applied only by the agent that runs as it, with the server and Secret it runs with: a
 * ping with a leaked deploy token may have told the server another server URL or Secret.
 */
import { describe, expect, test } from 'vitest';
import type { AgentService } from '../api/agent.ts';
import { ownServiceRefusal } from './own-service.ts';

const SELF = { server: 'https://gantry.example.com', tokenSecret: 'gantry-agent/gantry-agent-token' };

function service(fields: Partial<AgentService> = {}): AgentService {
  return {
    id: 'id',
    name: 'gantry-agent',
    namespace: 'gantry-agent',
    cluster: { id: 'c', name: 'c', handle: 'c', tags: {}, distro: null, version: null },
    revision: { id: 'r', number: 1, commit: null, digest: '0'.repeat(64) },
    folder: '',
    renderer: { kind: 'raw' },
    configuration: {},
    secretValues: {},
    contexts: {},
    waitingFor: [],
    templated: true,
    deleting: false,
    agent: { image: 'ghcr.io/gantry-dev/gantry:0.2.0', ...SELF },
    ...fields,
  };
}

describe('ownServiceRefusal', () => {
  test("applies its own Deployment when the service names this agent's server and Secret, and any other service", () => {
    expect(ownServiceRefusal(service(), SELF)).toBeUndefined();
    const { agent: _, ...plain } = service({ name: 'web' });
    expect(ownServiceRefusal(plain, SELF)).toBeUndefined();
    expect(ownServiceRefusal(plain, undefined)).toBeUndefined();
  });

  test('refuses another server or Secret, naming both', () => {
    const elsewhere = service({ agent: { image: 'ghcr.io/gantry-dev/gantry:0.2.0', ...SELF, server: 'https://evil.example.com' } });
    expect(ownServiceRefusal(elsewhere, SELF)).toMatch(
      /names server https:\/\/evil\.example\.com .* runs with https:\/\/gantry\.example\.com/,
    );
    const secret = service({ agent: { image: 'x:1', ...SELF, tokenSecret: 'kube-system/other' } });
    expect(ownServiceRefusal(secret, SELF)).toMatch(/token Secret kube-system\/other/);
  });

  test('refuses to apply it from an agent that does not run as the Deployment, and to delete itself', () => {
    expect(ownServiceRefusal(service(), undefined)).toMatch(/this agent does not run as it/);
    expect(ownServiceRefusal(service({ deleting: true }), SELF)).toMatch(/does not delete itself/);
  });
});
