/**
 * Schemas of the Kluctl project files, as kluctl's docs define them (docs/kluctl/kluctl-project and
 * docs/kluctl/deployments/deployment-yml.md). Unknown keys are errors, so a typo in a project file is reported
 * instead of silently ignored; every key Kluctl accepts is declared, even where Gantry does not act on it yet
 * (see UNSUPPORTED_ITEM_KEYS).
 */
import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { ProblemList } from '../problems.ts';

const Strict = { additionalProperties: false } as const;
const AnyObject = Type.Record(Type.String(), Type.Unknown());
const StringMap = Type.Record(Type.String(), Type.String());

export const VarsSourceSchema = Type.Object(
  {
    values: Type.Optional(AnyObject),
    file: Type.Optional(Type.String()),
    git: Type.Optional(AnyObject),
    gitFiles: Type.Optional(AnyObject),
    clusterConfigMap: Type.Optional(AnyObject),
    clusterSecret: Type.Optional(AnyObject),
    clusterObject: Type.Optional(AnyObject),
    systemEnvVars: Type.Optional(AnyObject),
    http: Type.Optional(AnyObject),
    awsSecretsManager: Type.Optional(AnyObject),
    gcpSecretManager: Type.Optional(AnyObject),
    vault: Type.Optional(AnyObject),
    azureKeyVault: Type.Optional(AnyObject),
    ignoreMissing: Type.Optional(Type.Boolean()),
    noOverride: Type.Optional(Type.Boolean()),
    sensitive: Type.Optional(Type.Boolean()),
    multidoc: Type.Optional(Type.Boolean()),
    targetPath: Type.Optional(Type.String()),
    when: Type.Optional(Type.String()),
  },
  Strict,
);
export type VarsSource = Static<typeof VarsSourceSchema>;

const ObjectRefItem = Type.Object(
  {
    group: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    namespace: Type.Optional(Type.String()),
  },
  Strict,
);

const GitIncludeSchema = Type.Union([
  Type.String(),
  Type.Object(
    {
      url: Type.String(),
      ref: Type.Optional(
        Type.Union([
          Type.String(),
          Type.Object(
            { branch: Type.Optional(Type.String()), tag: Type.Optional(Type.String()), commit: Type.Optional(Type.String()) },
            Strict,
          ),
        ]),
      ),
      subDir: Type.Optional(Type.String()),
    },
    Strict,
  ),
]);

export const DeploymentItemSchema = Type.Object(
  {
    path: Type.Optional(Type.String()),
    recursive: Type.Optional(Type.Boolean()),
    include: Type.Optional(Type.String()),
    git: Type.Optional(GitIncludeSchema),
    oci: Type.Optional(AnyObject),
    barrier: Type.Optional(Type.Boolean()),
    message: Type.Optional(Type.String()),
    deleteObjects: Type.Optional(Type.Array(ObjectRefItem)),
    waitReadinessObjects: Type.Optional(Type.Array(ObjectRefItem)),
    tags: Type.Optional(Type.Array(Type.String())),
    vars: Type.Optional(Type.Array(VarsSourceSchema)),
    when: Type.Optional(Type.String()),
    waitReadiness: Type.Optional(Type.Boolean()),
    alwaysDeploy: Type.Optional(Type.Boolean()),
    skipDeleteIfTags: Type.Optional(Type.Boolean()),
    onlyRender: Type.Optional(Type.Boolean()),
    args: Type.Optional(AnyObject),
    passVars: Type.Optional(Type.Boolean()),
  },
  Strict,
);
export type DeploymentItemConfig = Static<typeof DeploymentItemSchema>;

export const DeploymentProjectSchema = Type.Object(
  {
    deployments: Type.Optional(Type.Array(DeploymentItemSchema)),
    vars: Type.Optional(Type.Array(VarsSourceSchema)),
    when: Type.Optional(Type.String()),
    commonLabels: Type.Optional(StringMap),
    commonAnnotations: Type.Optional(StringMap),
    overrideNamespace: Type.Optional(Type.String()),
    tags: Type.Optional(Type.Array(Type.String())),
    ignoreForDiff: Type.Optional(Type.Array(AnyObject)),
    conflictResolution: Type.Optional(Type.Array(AnyObject)),
    templateExcludes: Type.Optional(Type.Array(Type.String())),
  },
  Strict,
);
export type DeploymentProjectConfig = Static<typeof DeploymentProjectSchema>;

export const TargetSchema = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    context: Type.Optional(Type.String()),
    args: Type.Optional(AnyObject),
    images: Type.Optional(Type.Array(AnyObject)),
    discriminator: Type.Optional(Type.String()),
    aws: Type.Optional(AnyObject),
  },
  Strict,
);
export type TargetConfig = Static<typeof TargetSchema>;

export const ArgDefinitionSchema = Type.Object({ name: Type.String({ minLength: 1 }), default: Type.Optional(Type.Unknown()) }, Strict);
export type ArgDefinition = Static<typeof ArgDefinitionSchema>;

export const KluctlProjectSchema = Type.Object(
  {
    targets: Type.Optional(Type.Array(TargetSchema)),
    args: Type.Optional(Type.Array(ArgDefinitionSchema)),
    discriminator: Type.Optional(Type.String()),
    aws: Type.Optional(AnyObject),
  },
  Strict,
);
export type KluctlProjectConfig = Static<typeof KluctlProjectSchema>;

/** Deployment item keys Kluctl accepts that this version of Gantry refuses rather than ignores. */
export const UNSUPPORTED_ITEM_KEYS = ['git', 'oci', 'recursive', 'deleteObjects', 'waitReadinessObjects', 'args', 'passVars'] as const;

/** Vars source kinds Gantry loads; the others in VarsSourceSchema are refused with a clear error. */
export const SUPPORTED_VARS_SOURCES = ['values', 'file'] as const;

/**
 * Checks `value` against `schema` and returns it typed.
 * @throws ProblemList with every problem as `<file>: <json path>: <message>`.
 */
export function validate<S extends TSchema>(schema: S, value: unknown, file: string): Static<S> {
  if (Value.Check(schema, value)) return value as Static<S>;
  const problems = [...Value.Errors(schema, value)]
    .filter((error) => error.keyword !== 'boolean')
    .map((error) => `${file}: ${describePath(error.instancePath)}${describeError(error)}`);
  throw new ProblemList([...new Set(problems)]);
}

function describePath(instancePath: string): string {
  if (!instancePath) return '';
  const path = instancePath
    .split('/')
    .slice(1)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')
    .replace(/^\./, '');
  return `${path}: `;
}

function describeError(error: { keyword: string; message: string; params: Record<string, unknown> }): string {
  if (error.keyword === 'additionalProperties') {
    const names = (error.params['additionalProperties'] as string[] | undefined) ?? [];
    return `unknown field${names.length > 1 ? 's' : ''} ${names.map((name) => `'${name}'`).join(', ')}`;
  }
  return error.message;
}
