import { describe, expect, test } from 'vitest';
import { allows, clusterGroups, type Grant } from './rights.ts';

const dev = { name: 'dev', tags: { env: 'dev', tier: 'web' } };
const prod = { name: 'prod', tags: { env: 'prod', tier: 'web' } };

describe('allows', () => {
  test('an admin bound to everything does everything, the fleet configuration included', () => {
    const grants: Grant[] = [{ role: 'admin', scope: 'all' }];
    for (const action of ['read', 'write', 'approve', 'force', 'proxy', 'administer'] as const)
      expect(allows(grants, action, { cluster: prod })).toBe(true);
    expect(allows(grants, 'administer')).toBe(true);
  });

  test('roles: readers read and proxy, approvers also approve, writers also write; only admins force', () => {
    const decide = (role: Grant['role']) =>
      (['read', 'proxy', 'approve', 'write', 'force'] as const).filter((action) =>
        allows([{ role, scope: 'all' }], action, { pipeline: 'release' }),
      );
    expect(decide('reader')).toEqual(['read', 'proxy']);
    expect(decide('approver')).toEqual(['read', 'proxy', 'approve']);
    expect(decide('writer')).toEqual(['read', 'proxy', 'approve', 'write']);
    expect(decide('admin')).toEqual(['read', 'proxy', 'approve', 'write', 'force']);
  });

  test('a scope by cluster tags covers matching clusters and their services, and nothing else', () => {
    const grants: Grant[] = [{ role: 'writer', scope: { clusterTags: { env: 'dev' } } }];
    expect(allows(grants, 'write', { cluster: dev, service: { name: 'web' } })).toBe(true);
    expect(allows(grants, 'write', { cluster: prod, service: { name: 'web' } })).toBe(false);
    expect(allows(grants, 'read', { cluster: prod })).toBe(false);
    expect(allows(grants, 'approve', { pipeline: 'release' })).toBe(false);
  });

  test('every tag of a scope must match; an empty tag selector matches nothing', () => {
    expect(allows([{ role: 'reader', scope: { clusterTags: { env: 'dev', tier: 'db' } } }], 'read', { cluster: dev })).toBe(false);
    expect(allows([{ role: 'reader', scope: { clusterTags: {} } }], 'read', { cluster: dev })).toBe(false);
  });

  test('scopes by cluster name, service name and pipeline name; cluster and service together are conjunctive', () => {
    const grants: Grant[] = [{ role: 'writer', scope: { clusters: ['prod'], services: ['api'], pipelines: ['release'] } }];
    expect(allows(grants, 'write', { cluster: prod, service: { name: 'api' } })).toBe(true);
    expect(allows(grants, 'write', { cluster: prod, service: { name: 'api' }, creating: true })).toBe(true);
    expect(allows(grants, 'write', { cluster: prod, service: { name: 'web' } })).toBe(false);
    expect(allows(grants, 'write', { cluster: dev, service: { name: 'api' } })).toBe(false);
    expect(allows(grants, 'write', { cluster: dev, service: { name: 'api' }, creating: true })).toBe(false);
    expect(allows(grants, 'approve', { pipeline: 'release' })).toBe(true);
    expect(allows(grants, 'approve', { pipeline: 'hotfix' })).toBe(false);
  });

  test('a scope narrowed to services reads their cluster but does not proxy to it nor write the cluster', () => {
    const grants: Grant[] = [{ role: 'writer', scope: { clusters: ['prod'], services: ['api'] } }];
    expect(allows(grants, 'read', { cluster: prod })).toBe(true);
    expect(allows(grants, 'proxy', { cluster: prod })).toBe(false);
    expect(clusterGroups(grants, prod)).toEqual([]);
    expect(allows(grants, 'read', { cluster: dev })).toBe(false);
  });

  test('a scope by service name only covers the existing services of that name, never creating one', () => {
    const grants: Grant[] = [{ role: 'writer', scope: { services: ['api'] } }];
    expect(allows(grants, 'write', { cluster: dev, service: { name: 'api' } })).toBe(true);
    expect(allows(grants, 'write', { cluster: dev, service: { name: 'api' }, creating: true })).toBe(false);
    expect(allows(grants, 'write', { cluster: dev, service: { name: 'web' } })).toBe(false);
    expect(allows(grants, 'read', { cluster: dev })).toBe(false);
    expect(
      allows([{ role: 'writer', scope: { clusters: ['dev'] } }], 'write', { cluster: dev, service: { name: 'new' }, creating: true }),
    ).toBe(true);
  });

  test('a scoped role reads the shared configuration but never administers it; no grant allows nothing', () => {
    const scoped: Grant[] = [{ role: 'admin', scope: { clusters: ['dev'] } }];
    expect(allows(scoped, 'read')).toBe(true);
    expect(allows(scoped, 'administer')).toBe(false);
    expect(allows(scoped, 'force', { cluster: dev })).toBe(true);
    expect(allows([], 'read')).toBe(false);
  });
});

describe('clusterGroups', () => {
  test('one impersonated group per role the grants give on the cluster, strongest first', () => {
    const grants: Grant[] = [
      { role: 'reader', scope: 'all' },
      { role: 'writer', scope: { clusterTags: { env: 'dev' } } },
    ];
    expect(clusterGroups(grants, dev)).toEqual(['gantry:writer', 'gantry:reader']);
    expect(clusterGroups(grants, prod)).toEqual(['gantry:reader']);
    expect(clusterGroups([], prod)).toEqual([]);
  });
});
