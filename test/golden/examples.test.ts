/**
 * Every upstream Kluctl example, rendered offline as `kluctl render --offline-kubernetes` would: the objects are
 * compared with reviewed golden files (test/golden/<example>/<target>.yaml; regenerate with
 * GANTRY_UPDATE_GOLDEN=1 after checking the difference is right), and Kluctl's rules are checked on every object
 * independently of the goldens: the discriminator label, one kluctl.io/tag-<i> label per inherited tag in Kluctl's
 * order, the deployment-item-dir annotation, and namespaces left exactly as rendered (Kluctl settles namespaces
 * only with a cluster). Secret values are masked: charts generate some anew on every render.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseYamlDocuments, toYamlDocuments } from '../../src/yaml.ts';
import { example, REPO_ROOT } from '../support/fixtures.ts';
import { gantry } from '../support/cli.ts';

interface Case {
  project: string;
  target: string;
  args?: string[];
  /** Expected discriminator. */
  discriminator: string;
  /** Expected tags of each item folder, in label order. */
  tags: Record<string, string[]>;
  /** The namespace every namespaced object ends up in, when the project sets one. */
  namespace?: string;
}

const CASES: Case[] = [
  {
    project: 'microservices-demo/1-basic-project',
    target: 'local',
    discriminator: 'kluctl-examples-microservices-demo-local',
    tags: { frontend: ['frontend'], redis: ['redis'] },
  },
  {
    project: 'microservices-demo/2-helm-integration',
    target: 'local',
    discriminator: 'kluctl-examples-microservices-demo-local',
    tags: { 'third-party/redis': ['third-party', 'redis'], 'services/frontend': ['services', 'frontend'] },
  },
  ...['local', 'test', 'prod'].map((target) => ({
    project: 'microservices-demo/3-templating-and-multi-env',
    target,
    discriminator: `kluctl-examples-microservices-demo-${target}`,
    tags: {
      namespaces: ['namespaces'],
      'third-party/redis': ['third-party', 'redis'],
      'services/cartservice': ['services', 'cartservice'],
    },
    namespace: `ms-demo-${target}`,
  })),
  ...['simple', 'another'].map((target) => ({
    project: 'simple',
    target,
    discriminator: `kluctl-examples-simple-${target}`,
    tags: { 'deployment/nginx': ['deployment', 'nginx'] },
    namespace: `simple-${target}`,
  })),
  {
    project: 'simple-helm',
    target: 'simple-helm',
    discriminator: 'kluctl-examples-simple-helm-simple-helm',
    tags: { 'deployment/nginx': ['deployment', 'nginx'] },
    namespace: 'simple-helm-simple-helm',
  },
  ...['test.example.com', 'prod.example.com'].map((cluster) => ({
    project: 'gitops-deployment',
    target: 'gitops',
    args: ['-a', `cluster_name=${cluster}`],
    discriminator: `gitops-${cluster.replaceAll('.', '-')}`,
    tags: { namespaces: ['namespaces'], 'clusters/all': ['clusters', 'all'], [`clusters/${cluster}`]: ['clusters', cluster] },
  })),
];

const NAMESPACE_OF_KIND = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition']);

/** Charts generate some Secrets anew on every render (e.g. self-signed TLS certificates); their values are masked. */
function maskSecretValues(object: Record<string, any>): Record<string, any> {
  if (object.kind !== 'Secret' || !object.data) return object;
  return { ...object, data: Object.fromEntries(Object.keys(object.data).map((key) => [key, '<masked>'])) };
}

function goldenFile(entry: Case): string {
  const suffix = entry.args ? `-${entry.args[1]?.split('=')[1]}` : '';
  return path.join(REPO_ROOT, 'test/golden', entry.project, `${entry.target}${suffix}.yaml`);
}

describe.each(CASES)('$project target $target', { timeout: 120_000 }, (entry) => {
  it('renders the objects Kluctl renders', async () => {
    const run = await gantry([
      'render',
      '--offline-kubernetes',
      '-t',
      entry.target,
      '--project-dir',
      example(entry.project),
      ...(entry.args ?? []),
    ]);
    expect(run.code, run.stderr).toBe(0);
    const objects = (parseYamlDocuments(run.stdout, 'render') as Array<Record<string, any>>).map(maskSecretValues);
    expect(objects.length).toBeGreaterThan(0);

    for (const object of objects) {
      const where = `${object.kind}/${object.metadata.name}`;
      const labels = object.metadata.labels ?? {};
      expect(labels['kluctl.io/discriminator'], where).toBe(entry.discriminator);
      const dir = object.metadata.annotations?.['kluctl.io/deployment-item-dir'];
      expect(dir, where).toBeTypeOf('string');
      const expectedTags = entry.tags[dir];
      if (expectedTags)
        expect(
          Object.entries(labels)
            .filter(([key]) => key.startsWith('kluctl.io/tag-'))
            .map(([, value]) => value),
          where,
        ).toEqual(expectedTags);
      if (entry.namespace && !NAMESPACE_OF_KIND.has(object.kind)) expect(object.metadata.namespace, where).toBe(entry.namespace);
    }

    const file = goldenFile(entry);
    if (process.env['GANTRY_UPDATE_GOLDEN'] === '1') {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, toYamlDocuments(objects));
    }
    const golden = parseYamlDocuments(await readFile(file, 'utf8'), file);
    expect(objects).toEqual(golden);
  });
});
