/**
 * Which of Plural's fields Gantry names as not acted on, and which of those stop a resource from being sent, for the
 * manifests of test/plural-manifests (every field of Plural's kinds); and the JOB gate containers Plural writes.
 */
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import {
  FLEET_SPECS,
  fieldsSet,
  fieldTables,
  OPERATOR_DOC,
  pluralFields,
  pluralManifests,
  schemaFields,
  withFieldTables,
} from '../../scripts/operator-fields.ts';
import { ServiceDeploymentSpecSchema } from '../api/fleet.ts';
import { corev1Container } from './pipeline.ts';
import { unsupportedFields } from './unsupported-fields.ts';
import { desiredBindings } from './bindings.ts';

const schemaOf = (kind: string) => FLEET_SPECS.find(([name]) => name === kind)![1];

describe("Plural's manifests", () => {
  it('name every unsupported field they set, and block only those that change what is deployed or where', async () => {
    const found = (await pluralManifests()).map(({ kind, manifest, spec }) => {
      const fields = unsupportedFields(schemaOf(kind), spec);
      const name = `${kind}/${(manifest['metadata'] as { name: string }).name}`;
      return [
        name,
        { reported: fields.filter((f) => !f.blocks).map((f) => f.path), blocks: fields.filter((f) => f.blocks).map((f) => f.path) },
      ];
    });
    expect(Object.fromEntries(found)).toEqual({
      'Cluster/every-field': {
        // cloud: byok is what Gantry does, so it is not named.
        reported: [
          'spec.version',
          'spec.providerRef',
          'spec.projectRef',
          'spec.protect',
          'spec.metadata',
          'spec.cloudSettings',
          'spec.nodePools',
        ],
        blocks: [],
      },
      'GitRepository/every-field': { reported: ['spec.connectionRef'], blocks: [] },
      'GlobalService/every-field': {
        // enableHelm and deleteNamespace are false here: what Gantry does anyway.
        reported: ['spec.template.dependencies', 'spec.reparent', 'spec.mgmt'],
        blocks: [
          'spec.template.git.files',
          'spec.template.helm.repositoryRef',
          'spec.template.helm.git',
          'spec.template.helm.luaScript',
          'spec.template.helm.luaFile',
          'spec.context',
          'spec.providerRef',
          'spec.projectRef',
        ],
      },
      'HelmRepository/every-field': { reported: ['spec.auth.bearer', 'spec.auth.aws', 'spec.auth.azure', 'spec.auth.gcp'], blocks: [] },
      'HelmRepository/oci-registry': { reported: ['spec.provider'], blocks: [] },
      'NotificationRouter/every-field': { reported: ['spec.events[2]'], blocks: [] },
      'NotificationSink/every-field': { reported: ['spec.bindings'], blocks: [] },
      'NotificationSink/in-app': { reported: [], blocks: ['spec.type'] },
      'NotificationSink/teams': { reported: [], blocks: [] },
      'Pipeline/every-field': {
        reported: ['spec.stages[1].services[0].criteria.repository', 'spec.flowRef', 'spec.projectRef'],
        blocks: ['spec.stages[1].services[0].criteria.prAutomationRef'],
      },
      'ServiceContext/every-field': { reported: ['spec.projectRef'], blocks: [] },
      'ServiceDeployment/every-field': {
        reported: ['spec.syncConfig.deleteNamespace', 'spec.flowRef'],
        blocks: [
          'spec.git.files',
          'spec.helm.git.files',
          'spec.helm.luaScript',
          'spec.helm.luaFile',
          'spec.kustomize.enableHelm',
          'spec.imports',
          'spec.sources[0].git.files',
        ],
      },
    });
  });

  it('set every field of Plural’s kinds, and Gantry’s fields are its extensions only', async () => {
    const plural = await pluralFields();
    const extensions = FLEET_SPECS.flatMap(([kind, schema]) => {
      const gantryOnly = schemaFields(schema)
        .map(({ path }) => path)
        .filter((path) => !plural.get(kind)?.has(path));
      // The roots of Gantry's subtrees: a field whose parent is Plural's.
      return gantryOnly
        .filter((path) => !gantryOnly.some((other) => path.startsWith(`${other}.`) || path.startsWith(`${other}[]`)))
        .map((path) => `${kind} ${path}`);
    });
    expect(extensions).toEqual([
      'ServiceDeployment spec.renderer',
      'ServiceDeployment spec.syncConfig.selfHeal',
      'GlobalService spec.template.renderer',
      'GlobalService spec.template.configuration',
      'GlobalService spec.template.syncConfig.selfHeal',
      'GlobalService spec.rollout',
      'Cluster spec.distro',
      'HelmRepository spec.auth.basic.passwordSecretRef.key',
      'Pipeline spec.name',
      'Pipeline spec.stages[].rollout',
      'Pipeline spec.edges[].gates[].timeout',
      'Pipeline spec.edges[].gates[].spec.window',
      'Pipeline spec.edges[].gates[].spec.health',
      'NotificationSink spec.configuration.webhook',
      'NotificationSink spec.secretRef',
    ]);
  });

  it('a field the schema does not have is named with its path (the API server refuses it too)', () => {
    expect(() => fieldsSet(ServiceDeploymentSpecSchema, { helm: { chart: 'a', lauScript: 'x' } })).toThrow(
      'spec.helm.lauScript is not a field of the schema',
    );
  });

  it('are what the field tables of docs/operator.md say (npm run generate)', async () => {
    const doc = await readFile(OPERATOR_DOC, 'utf8');
    expect(doc).toBe(withFieldTables(doc, await fieldTables()));
  });
});

describe('unsupportedFields', () => {
  it('reports a value-level mark only for its values, and nothing for an absent or null field', () => {
    const schema = ServiceDeploymentSpecSchema;
    expect(unsupportedFields(schema, { kustomize: { path: 'a', enableHelm: false }, docsPath: null })).toEqual([]);
    expect(unsupportedFields(schema, { kustomize: { path: 'a', enableHelm: true } })).toEqual([
      { path: 'spec.kustomize.enableHelm', reason: 'kustomize runs without --enable-helm: give the chart as a Helm source', blocks: true },
    ]);
    expect(unsupportedFields(schema, { namespace: 'x', renderer: { kind: 'kluctl' } })).toEqual([]);
  });
});

describe("Plural's bindings", () => {
  it('name users by userEmail and groups by groupName; an entry with console ids only is named as not acted on', () => {
    expect(
      desiredBindings({
        read: [{ userEmail: 'ann@example.com', groupName: 'devs' }, { UserID: 'u-1' }],
        write: [{ groupName: 'platform', groupID: 'g-1' }],
      }),
    ).toEqual({
      subjects: {
        read: [
          { kind: 'user', name: 'ann@example.com' },
          { kind: 'group', name: 'devs' },
        ],
        write: [{ kind: 'group', name: 'platform' }],
      },
      unmapped: [
        {
          path: 'spec.bindings.read[1]',
          reason: "names no user (userEmail) or group (groupName): ids of Plural's console name nobody here",
          blocks: false,
        },
      ],
    });
    expect(desiredBindings(undefined)).toEqual({ subjects: { read: [], write: [] }, unmapped: [] });
  });
});

describe("a JOB gate's containers as Plural writes them", () => {
  it('become named corev1 containers with envFrom references, and take the job’s resources when they give none', () => {
    const resources = { requests: { cpu: '50m' } };
    expect(
      corev1Container(
        { image: 'alpine:3', args: ['true'], env: [{ name: 'A', value: '1' }], envFrom: [{ secret: 's', configMap: 'c' }] },
        1,
        resources,
      ),
    ).toEqual({
      name: 'gate-1',
      image: 'alpine:3',
      args: ['true'],
      env: [{ name: 'A', value: '1' }],
      envFrom: [{ secretRef: { name: 's' } }, { configMapRef: { name: 'c' } }],
      resources,
    });
    // corev1's own (named) containers pass as they are, their own resources kept.
    const own = { name: 'test', image: 'alpine:3', resources: { limits: { cpu: '1' } } };
    expect(corev1Container(own, 0, resources)).toEqual(own);
  });
});
