/**
 * CRD schemas from TypeBox: the conversion rules, every generated schema walked for structurality, and the real
 * API server accepting the CRDs, explaining them, taking manifests from Kluctl's docs and refusing wrong types.
 */
import { execa } from 'execa';
import { Type } from 'typebox';
import { beforeAll, describe, expect, it } from 'vitest';
import { gantryCrds } from '../../scripts/generate-install.ts';
import { KUBECONFIG, kubectl, kubectlJson } from '../../test/support/cli.ts';
import { toYaml } from '../yaml.ts';
import { toCrdSchema, type CrdSchema } from './crd.ts';

describe('toCrdSchema', () => {
  it('turns a union of literals into one typed enum, keeping description and default', () => {
    const schema = Type.Union([Type.Literal('full-deploy'), Type.Literal('poke-images')], { default: 'full-deploy', description: 'mode' });
    expect(toCrdSchema(schema, 'mode')).toEqual({
      type: 'string',
      enum: ['full-deploy', 'poke-images'],
      default: 'full-deploy',
      description: 'mode',
    });
    expect(toCrdSchema(Type.Literal(3), 'n')).toEqual({ type: 'number', enum: [3] });
    expect(toCrdSchema(Type.Union([Type.Literal(true)]), 'b')).toEqual({ type: 'boolean', enum: [true] });
    expect(toCrdSchema(Type.Enum(['a', 'b']), 'e')).toEqual({ type: 'string', enum: ['a', 'b'] });
  });

  it('turns a union of strings into one string whose pattern accepts what any member accepts', () => {
    const both = Type.Union([Type.String({ pattern: '^[0-9]+s$' }), Type.String({ pattern: '^never$' })]);
    const merged = toCrdSchema(both, 'd');
    expect(merged).toEqual({ type: 'string', pattern: '(?:^[0-9]+s$)|(?:^never$)' });
    const pattern = new RegExp(merged['pattern'] as string);
    expect(['10s', 'never'].every((value) => pattern.test(value))).toBe(true);
    expect(pattern.test('10m')).toBe(false);
    expect(toCrdSchema(Type.Union([Type.String({ pattern: '^a$' }), Type.String()]), 'd')).toEqual({ type: 'string' });
  });

  it('makes a union with null nullable and integer-or-string x-kubernetes-int-or-string', () => {
    expect(toCrdSchema(Type.Union([Type.String(), Type.Null()]), 'n')).toEqual({ type: 'string', nullable: true });
    expect(toCrdSchema(Type.Union([Type.Integer(), Type.String()], { description: 'port' }), 'p')).toEqual({
      'x-kubernetes-int-or-string': true,
      description: 'port',
    });
  });

  it('keeps untyped nodes that preserve unknown fields, and refuses other untyped ones', () => {
    expect(toCrdSchema(Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true, description: 'args' }), 'args')).toEqual({
      'x-kubernetes-preserve-unknown-fields': true,
      description: 'args',
    });
    expect(() => toCrdSchema(Type.Object({ args: Type.Unknown() }), 'spec')).toThrow(
      "spec.args: a CRD schema node needs a type; give it one or 'x-kubernetes-preserve-unknown-fields': true",
    );
  });

  it('turns Records into additionalProperties and drops what CRDs reject', () => {
    expect(toCrdSchema(Type.Record(Type.String(), Type.Integer()), 'labels')).toEqual({
      type: 'object',
      additionalProperties: { type: 'integer' },
    });
    const object = Type.Object(
      { a: Type.String({ format: 'uri' }), b: Type.Optional(Type.String({ format: 'url' })) },
      { $id: 'X', additionalProperties: false },
    );
    expect(toCrdSchema(object, 'o')).toEqual({
      type: 'object',
      required: ['a'],
      properties: { a: { type: 'string', format: 'uri' }, b: { type: 'string' } },
    });
    expect(toCrdSchema(Type.Integer({ exclusiveMinimum: 0 }), 'i')).toEqual({ type: 'integer', minimum: 0, exclusiveMinimum: true });
  });

  it('refuses, naming the path, what a structural schema cannot express', () => {
    const objects = Type.Object({ source: Type.Union([Type.Object({ git: Type.String() }), Type.Object({ oci: Type.String() })]) });
    expect(() => toCrdSchema(objects, 'spec')).toThrow('spec.source: a union of object, object cannot be expressed in a CRD schema');
    expect(() => toCrdSchema(Type.Intersect([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })]), 'spec')).toThrow(
      "spec: 'allOf' cannot be expressed",
    );
    expect(() => toCrdSchema(Type.Array(Type.String(), { uniqueItems: true }), 'tags')).toThrow('tags: uniqueItems is forbidden');
  });
});

/** JSONSchemaProps fields of apiextensions.k8s.io/v1 that the generated schemas may use. */
const ALLOWED = new Set([
  'type',
  'description',
  'properties',
  'required',
  'items',
  'additionalProperties',
  'enum',
  'default',
  'nullable',
  'format',
  'pattern',
  'title',
  'example',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'multipleOf',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-validations',
]);

/** What makes a schema non-structural (Kubernetes docs, "Specifying a structural schema"), one line per problem. */
function structuralProblems(schema: CrdSchema, path: string): string[] {
  const problems = Object.keys(schema)
    .filter((key) => !ALLOWED.has(key))
    .map((key) => `${path}: '${key}' is not allowed`);
  if (!schema.type && !schema['x-kubernetes-preserve-unknown-fields'] && !schema['x-kubernetes-int-or-string'])
    problems.push(`${path}: no type`);
  if (schema.properties && schema.additionalProperties) problems.push(`${path}: properties and additionalProperties`);
  if (schema.type === 'array' && !schema.items) problems.push(`${path}: array without items`);
  if (schema.type && schema.type !== 'object' && (schema.properties || schema.additionalProperties))
    problems.push(`${path}: properties on a ${schema.type}`);
  for (const name of schema.required ?? []) if (!schema.properties?.[name]) problems.push(`${path}: required '${name}' is not a property`);
  for (const value of schema.enum ?? []) {
    const type = typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'number') : typeof value;
    if (type !== schema.type && !(type === 'integer' && schema.type === 'number'))
      problems.push(`${path}: enum value ${JSON.stringify(value)} is not a ${schema.type}`);
  }
  for (const [name, property] of Object.entries(schema.properties ?? {})) problems.push(...structuralProblems(property, `${path}.${name}`));
  if (schema.items) problems.push(...structuralProblems(schema.items, `${path}[]`));
  if (schema.additionalProperties) problems.push(...structuralProblems(schema.additionalProperties, `${path}.*`));
  return problems;
}

interface GeneratedCrd {
  metadata: { name: string };
  spec: { names: { kind: string }; versions: Array<{ name: string; schema: { openAPIV3Schema: CrdSchema } }> };
}

describe('the generated CRDs', () => {
  const crds = gantryCrds() as unknown as GeneratedCrd[];

  it('are structural in every node', () => {
    expect(crds.map((crd) => crd.metadata.name)).toEqual(['kluctldeployments.gitops.gantry.dev', 'alerts.gitops.gantry.dev']);
    for (const crd of crds) {
      const root = crd.spec.versions[0]!.schema.openAPIV3Schema;
      expect(structuralProblems(root, crd.spec.names.kind)).toEqual([]);
      expect(root.properties?.['metadata']).toEqual({ type: 'object' });
      expect(root.properties?.['status']).toBeDefined();
    }
  });

  it('describe every spec field kubectl explain shows at the top level', () => {
    for (const crd of crds) {
      const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties!['spec']!;
      expect(spec.description).toBeTruthy();
      expect(
        Object.entries(spec.properties ?? {})
          .filter(([, field]) => field.type === 'object' && !field.description)
          .map(([name]) => name),
      ).toEqual([]);
    }
  });

  it('the walk finds what the API server would refuse', () => {
    expect(structuralProblems({ type: 'object', properties: { a: { anyOf: [{ type: 'string' }] }, b: { type: 'array' } } }, 'x')).toEqual([
      "x.a: 'anyOf' is not allowed",
      'x.a: no type',
      'x.b: array without items',
    ]);
  });
});

/** `kubectl create --dry-run=server` of one manifest: the API server's validation with nothing persisted. */
async function serverDryRun(manifest: Record<string, unknown>): Promise<Record<string, any>> {
  return JSON.parse(
    await kubectl(['create', '--dry-run=server', '--validate=strict', '-n', 'default', '-o', 'json', '-f', '-'], toYaml(manifest)),
  ) as Record<string, any>;
}

const GANTRY_API_VERSION = 'gitops.gantry.dev/v1beta1';

describe('against the API server', { timeout: 120_000 }, () => {
  beforeAll(async () => {
    // kubectl's field manager: `gantry controller install` takes these fields over when it applies the same CRDs.
    const applied = await execa('kubectl', ['apply', '--server-side', '--force-conflicts', '-f', '-'], {
      input: gantryCrds()
        .map((crd) => `---\n${toYaml(crd)}`)
        .join(''),
      env: { KUBECONFIG },
    });
    // The API server warns about what it accepts but ignores, such as formats it does not know.
    expect(applied.stderr).toBe('');
    await kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      ...gantryCrds().map((crd) => `crd/${(crd['metadata'] as { name: string }).name}`),
    ]);
  });

  it('accepts the CRDs as they are generated (nothing pruned from the schemas)', async () => {
    for (const crd of gantryCrds()) {
      const stored = await kubectlJson<{ spec: { versions: Array<{ schema: unknown }> } }>([
        'get',
        'crd',
        (crd['metadata'] as { name: string }).name,
      ]);
      expect(stored.spec.versions[0]!.schema).toEqual((crd['spec'] as { versions: Array<{ schema: unknown }> }).versions[0]!.schema);
    }
  });

  it('kubectl explain prints the descriptions', async () => {
    const git = await explain('kluctldeployment.spec.source.git', 'Git repository holding the Kluctl project.');
    expect(git).toMatch(/url <string> -required- Git URL of the repository \(https, ssh or file\)\./);
    expect(git).toContain('path <string> Folder of the Kluctl project inside the repository.');
    expect(await explain('alert.spec.eventSeverity', "'error' only when it failed")).toContain('ENUM: info error');
  });

  it("accepts manifests from Kluctl's docs with only apiVersion changed, applying the schema's defaults", async () => {
    for (const manifest of KLUCTL_DOCS_EXAMPLES) {
      const created = await serverDryRun({ ...manifest, apiVersion: GANTRY_API_VERSION });
      expect(created['spec']).toMatchObject(manifest['spec'] as Record<string, unknown>);
      expect(created['spec']).toMatchObject({
        deployMode: (manifest['spec'] as { deployMode?: string }).deployMode ?? 'full-deploy',
        validate: true,
        prune: (manifest['spec'] as { prune?: boolean }).prune ?? false,
      });
    }
  });

  it('refuses wrong types, values outside enums and bad durations, naming the field', async () => {
    const base = KLUCTL_DOCS_EXAMPLES[0]!;
    const withSpec = (spec: Record<string, unknown>) => ({
      ...base,
      apiVersion: GANTRY_API_VERSION,
      spec: { ...(base['spec'] as object), ...spec },
    });
    await expect(serverDryRun(withSpec({ prune: 'yes' }))).rejects.toThrow(
      /spec\.prune: Invalid value: "string": spec\.prune in body must be of type boolean/,
    );
    await expect(serverDryRun(withSpec({ interval: 5 }))).rejects.toThrow(/spec\.interval: Invalid value: "integer"/);
    await expect(serverDryRun(withSpec({ interval: 'five minutes' }))).rejects.toThrow(/spec\.interval in body should match/);
    await expect(serverDryRun(withSpec({ deployMode: 'everything' }))).rejects.toThrow(/spec\.deployMode: Unsupported value: "everything"/);
    await expect(serverDryRun(withSpec({ unknownField: true }))).rejects.toThrow(/unknown field "spec\.unknownField"/);
  });

  it('accepts an Alert and refuses one without an address or a wrong type', async () => {
    const alert = {
      apiVersion: GANTRY_API_VERSION,
      kind: 'Alert',
      metadata: { name: 'on-failure' },
      spec: {
        type: 'slack',
        secretRef: { name: 'slack-webhook' },
        eventSeverity: 'error',
        eventSources: [{ kind: 'KluctlDeployment', name: '*', matchLabels: { team: 'a' } }],
      },
    };
    expect((await serverDryRun(alert))['spec']).toEqual({ ...alert.spec, suspend: false });
    const generic = {
      ...alert,
      spec: { type: 'generic', address: 'https://hooks.example.com/gantry', eventSources: [{ kind: 'KluctlDeployment', name: 'app' }] },
    };
    expect((await serverDryRun(generic))['spec']).toMatchObject({ eventSeverity: 'info' });
    await expect(serverDryRun({ ...alert, spec: { ...alert.spec, secretRef: undefined } })).rejects.toThrow(/an address is needed/);
    await expect(serverDryRun({ ...alert, spec: { ...alert.spec, type: 'teams' } })).rejects.toThrow(
      /spec\.type: Unsupported value: "teams"/,
    );
    await expect(serverDryRun({ ...alert, spec: { ...alert.spec, eventSources: [{ kind: 'Kustomization', name: '*' }] } })).rejects.toThrow(
      /kind: Unsupported value/,
    );
  });
});

/**
 * `kubectl explain <field>` with whitespace collapsed (it wraps descriptions), once it contains `expected`: the API
 * server publishes a CRD's OpenAPI a few seconds after the CRD changed, so it is asked again for up to 30 s.
 */
async function explain(field: string, expected: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const text = await kubectl(['explain', field]).then(
      (output) => output.replace(/\s+/g, ' '),
      (error: Error) => error.message,
    );
    if (text.includes(expected) || Date.now() > deadline) return text;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/**
 * KluctlDeployments from Kluctl's docs (docs/gitops/spec/v1beta1/kluctldeployment.md): its complete examples, and
 * the last one joining the docs' credentials, decryption and service account fragments into one manifest.
 */
const KLUCTL_DOCS_EXAMPLES: Array<Record<string, unknown>> = [
  {
    apiVersion: 'gitops.kluctl.io/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'microservices-demo-prod' },
    spec: {
      interval: '5m',
      source: { git: { url: 'https://github.com/kluctl/kluctl-examples.git', path: './microservices-demo/3-templating-and-multi-env/' } },
      timeout: '2m',
      target: 'prod',
      context: 'default',
      prune: true,
      delete: true,
      manual: true,
    },
  },
  {
    apiVersion: 'gitops.kluctl.io/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'microservices-demo-prod' },
    spec: {
      interval: '5m',
      source: { git: { url: 'https://github.com/kluctl/kluctl-examples.git', path: './microservices-demo/3-templating-and-multi-env/' } },
      timeout: '2m',
      target: 'prod',
      context: 'default',
      deployMode: 'poke-images',
    },
  },
  {
    apiVersion: 'gitops.kluctl.io/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'example' },
    spec: {
      interval: '5m',
      source: { git: { url: 'https://github.com/kluctl/kluctl-examples.git', path: './microservices-demo/3-templating-and-multi-env/' } },
      timeout: '2m',
      target: 'prod',
      context: 'default',
      args: { arg1: 'value1', arg2: 'value2', arg3: { k1: 'v1', k2: 'v2' } },
    },
  },
  {
    apiVersion: 'gitops.kluctl.io/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'example' },
    spec: {
      interval: '5m',
      source: { git: { url: 'https://example.com' } },
      timeout: '2m',
      target: 'prod',
      images: [
        { image: 'nginx', resultImage: 'nginx:1.21.6', namespace: 'example-namespace', deployment: 'Deployment/example' },
        { image: 'registry.gitlab.com/my-org/my-repo/image', resultImage: 'registry.gitlab.com/my-org/my-repo/image:1.2.3' },
      ],
    },
  },
  {
    apiVersion: 'gitops.kluctl.io/v1beta1',
    kind: 'KluctlDeployment',
    metadata: { name: 'example' },
    spec: {
      interval: '10m',
      source: {
        git: {
          url: 'https://github.com/kluctl/kluctl-examples.git',
          path: './microservices-demo/3-templating-and-multi-env/',
          ref: { branch: 'my-branch' },
        },
      },
      credentials: { git: [{ host: 'github.com', path: 'kluctl/*', secretRef: { name: 'git-credentials' } }] },
      decryption: { provider: 'sops', secretRef: { name: 'sops-keys' } },
      target: 'prod',
      serviceAccountName: 'prod-service-account',
      context: 'default',
    },
  },
];
