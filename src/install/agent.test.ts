/** The agent's install objects: what two installs in one cluster share, and how an image's tag is read. */
import { describe, expect, test } from 'vitest';
import { agentInstallManifests, imageTag } from './agent.ts';

describe('agentInstallManifests', () => {
  test('installs in two namespaces of one cluster bind cluster-admin under names of their own', () => {
    const bindingOf = (namespace?: string) =>
      agentInstallManifests({ server: 'https://gantry.example.com', token: { secretName: 't' }, image: 'x:1', ...(namespace ? { namespace } : {}) }).find(
        (object) => object.kind === 'ClusterRoleBinding',
      )!.metadata.name;
    expect(bindingOf()).toBe('gantry-agent-cluster-admin');
    expect(bindingOf('gantry-system')).toBe('gantry-agent-gantry-system-cluster-admin');
  });
});

describe('imageTag', () => {
  test('reads the tag after the last colon of the name, never a registry port or a digest', () => {
    expect(imageTag('ghcr.io/gantry-dev/gantry:0.2.0')).toBe('0.2.0');
    expect(imageTag('registry.example.com:5000/gantry:0.2.0-rc.1@sha256:abc')).toBe('0.2.0-rc.1');
    expect(imageTag('registry.example.com:5000/gantry')).toBeUndefined();
    expect(imageTag('gantry@sha256:abc')).toBeUndefined();
  });
});
