/**
 * Plural's manifests, verbatim (issue 41): test/plural-manifests holds every field of Plural's operator kinds,
 * written from Plural's Go types; with only the apiVersion changed, the API server takes each of them
 * (`kubectl apply --dry-run=server`, strict field validation, nothing stored), and a misspelt field is still refused
 * with its path. What the operator does with each field is operator.test.ts's.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { FLEET_API_VERSION } from '../../src/api/fleet.ts';
import { toYaml } from '../../src/yaml.ts';
import { pluralManifests } from '../../scripts/operator-fields.ts';
import { gantry, kubectl } from '../support/cli.ts';

const NS = `plural-fields-${randomBytes(3).toString('hex')}`;

/** A Plural manifest as a Gantry user applies it: the apiVersion changed, and put in this test's namespace. */
function asGantry(manifest: Record<string, unknown>): Record<string, unknown> {
  expect(manifest['apiVersion']).toBe('deployments.plural.sh/v1alpha1');
  const metadata = manifest['metadata'] as Record<string, unknown>;
  const namespaced = manifest['kind'] !== 'GitRepository';
  return { ...manifest, apiVersion: FLEET_API_VERSION, metadata: { ...metadata, ...(namespaced ? { namespace: NS } : {}) } };
}

const dryRun = (manifest: unknown) =>
  kubectl(['apply', '--dry-run=server', '--validate=strict', '-f', '-'], toYaml(manifest)).catch(
    (error: { stderr?: string }) => `refused: ${error.stderr ?? String(error)}`,
  );

describe("Plural's manifests with only the apiVersion changed", () => {
  beforeAll(async () => {
    await gantry(['operator', 'install-crds']);
    await kubectl(['create', 'namespace', NS]);
  });
  afterAll(async () => {
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
  });

  test('are taken by the API server, every field of every kind, and nothing is stored', async () => {
    const manifests = await pluralManifests();
    expect(new Set(manifests.map(({ kind }) => kind)).size).toBe(9);
    for (const { file, manifest } of manifests) {
      const answer = await dryRun(asGantry(manifest));
      expect(answer, file).toMatch(/created \(server dry run\)/);
    }
    for (const plural of ['servicedeployments', 'globalservices', 'clusters', 'pipelines', 'notificationsinks']) {
      expect(await kubectl(['get', `${plural}.deployments.gantry.dev`, '-n', NS, '-o', 'name'])).toBe('');
    }
  });

  test('the smallest of each kind, with only what Plural requires, is taken too', async () => {
    const smallest: Array<[string, Record<string, unknown>]> = [
      ['ServiceDeployment', { clusterRef: { name: 'dev' } }],
      ['GlobalService', {}],
      ['Cluster', {}],
      ['GitRepository', { url: 'https://git.example.com/apps.git' }],
      ['HelmRepository', { url: 'https://charts.example.com' }],
      ['ServiceContext', {}],
      ['Pipeline', { stages: [{ name: 'dev', services: [{ serviceRef: { name: 'app' } }] }] }],
      ['NotificationSink', { type: 'SLACK' }],
      ['NotificationRouter', {}],
    ];
    for (const [kind, spec] of smallest) {
      const manifest = { apiVersion: 'deployments.plural.sh/v1alpha1', kind, metadata: { name: `smallest-${kind.toLowerCase()}` }, spec };
      expect(await dryRun(asGantry(manifest)), kind).toMatch(/created \(server dry run\)/);
    }
  });

  test('a misspelt field is still refused, with its path', async () => {
    const [serviceDeployment] = (await pluralManifests()).filter(({ kind }) => kind === 'ServiceDeployment');
    const manifest = asGantry(serviceDeployment!.manifest);
    const spec = manifest['spec'] as Record<string, unknown>;
    const misspelt = { ...manifest, spec: { ...spec, helm: { ...(spec['helm'] as object), lauScript: 'x' }, reconcilation: {} } };
    const answer = await dryRun(misspelt);
    expect(answer).toMatch(/^refused/);
    expect(answer).toMatch(/spec\.helm\.lauScript/);
    expect(answer).toMatch(/spec\.reconcilation/);
  });
});
