/**
 * Schemas of the Kluctl project files, as kluctl's docs define them (docs/kluctl/kluctl-project and
 * docs/kluctl/deployments/deployment-yml.md). Unknown keys are errors, so a typo in a project file is reported
 * instead of silently ignored; every key Kluctl accepts is declared, even where Gantry does not act on it yet.
 */
import { Type, type Static } from 'typebox';

const Strict = { additionalProperties: false } as const;
const AnyObject = Type.Record(Type.String(), Type.Unknown());
const StringMap = Type.Record(Type.String(), Type.String());

/** A git ref as Kluctl's GitRef: exactly one of branch, tag or commit (checked when the source is loaded). */
const GitRefSchema = Type.Object(
  { branch: Type.Optional(Type.String()), tag: Type.Optional(Type.String()), commit: Type.Optional(Type.String()) },
  Strict,
);

/** Field schemas of the vars sources Gantry loads, as kluctl's templating/variable-sources docs define them. */
export const VarsSourceGitSchema = Type.Object(
  { url: Type.String({ minLength: 1 }), ref: Type.Optional(GitRefSchema), path: Type.String({ minLength: 1 }) },
  Strict,
);
export type VarsSourceGit = Static<typeof VarsSourceGitSchema>;

export const VarsSourceClusterMapSchema = Type.Object(
  {
    name: Type.Optional(Type.String()),
    labels: Type.Optional(StringMap),
    namespace: Type.String({ minLength: 1 }),
    key: Type.String({ minLength: 1 }),
    /** Deprecated in Kluctl in favour of the source's own targetPath; still honoured. */
    targetPath: Type.Optional(Type.String()),
  },
  Strict,
);
export type VarsSourceClusterMap = Static<typeof VarsSourceClusterMapSchema>;

export const VarsSourceClusterObjectSchema = Type.Object(
  {
    kind: Type.String({ minLength: 1 }),
    apiVersion: Type.Optional(Type.String()),
    namespace: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    labels: Type.Optional(StringMap),
    list: Type.Optional(Type.Boolean()),
    path: Type.String({ minLength: 1 }),
    render: Type.Optional(Type.Boolean()),
    parseYaml: Type.Optional(Type.Boolean()),
  },
  Strict,
);
export type VarsSourceClusterObject = Static<typeof VarsSourceClusterObjectSchema>;

export const VarsSourceHttpSchema = Type.Object(
  {
    url: Type.String({ minLength: 1 }),
    method: Type.Optional(Type.String()),
    body: Type.Optional(Type.String()),
    headers: Type.Optional(StringMap),
    jsonPath: Type.Optional(Type.String()),
  },
  Strict,
);
export type VarsSourceHttp = Static<typeof VarsSourceHttpSchema>;

/** kluctl's VarsSourceVault: the server's URL and the path read below its /v1/ (e.g. secret/data/app). */
export const VarsSourceVaultSchema = Type.Object({ address: Type.String({ minLength: 1 }), path: Type.String({ minLength: 1 }) }, Strict);
export type VarsSourceVault = Static<typeof VarsSourceVaultSchema>;

/** kluctl's VarsSourceGitFiles: branches/tags by regex (or one commit, or the default branch) and file globs. */
const VarsSourceGitFilesSchema = Type.Object(
  {
    url: Type.String(),
    ref: Type.Optional(
      Type.Object(
        { branch: Type.Optional(Type.String()), tag: Type.Optional(Type.String()), commit: Type.Optional(Type.String()) },
        Strict,
      ),
    ),
    files: Type.Optional(
      Type.Array(
        Type.Object(
          {
            glob: Type.String(),
            render: Type.Optional(Type.Boolean()),
            parseYaml: Type.Optional(Type.Boolean()),
            yamlMultiDoc: Type.Optional(Type.Boolean()),
          },
          Strict,
        ),
      ),
    ),
  },
  Strict,
);
export type VarsSourceGitFiles = Static<typeof VarsSourceGitFilesSchema>;

export const VarsSourceSchema = Type.Object(
  {
    values: Type.Optional(AnyObject),
    file: Type.Optional(Type.String()),
    git: Type.Optional(VarsSourceGitSchema),
    gitFiles: Type.Optional(VarsSourceGitFilesSchema),
    clusterConfigMap: Type.Optional(VarsSourceClusterMapSchema),
    clusterSecret: Type.Optional(VarsSourceClusterMapSchema),
    clusterObject: Type.Optional(VarsSourceClusterObjectSchema),
    /** A tree whose leaves are environment variable names (`NAME` or `NAME:default`). */
    systemEnvVars: Type.Optional(AnyObject),
    http: Type.Optional(VarsSourceHttpSchema),
    awsSecretsManager: Type.Optional(AnyObject),
    gcpSecretManager: Type.Optional(AnyObject),
    vault: Type.Optional(VarsSourceVaultSchema),
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

export const ObjectSelectorSchema = Type.Object(
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

/** An OCI include as kluctl's OciProject (pkg/types/oci_project.go): the URL carries no tag or digest, `ref` does. */
const OciIncludeSchema = Type.Object(
  {
    url: Type.String({ minLength: 1 }),
    ref: Type.Optional(Type.Object({ tag: Type.Optional(Type.String()), digest: Type.Optional(Type.String()) }, Strict)),
    subDir: Type.Optional(Type.String()),
  },
  Strict,
);

export const DeploymentItemSchema = Type.Object(
  {
    path: Type.Optional(Type.String()),
    recursive: Type.Optional(Type.Boolean()),
    include: Type.Optional(Type.String()),
    git: Type.Optional(GitIncludeSchema),
    oci: Type.Optional(OciIncludeSchema),
    barrier: Type.Optional(Type.Boolean()),
    message: Type.Optional(Type.String()),
    deleteObjects: Type.Optional(Type.Array(ObjectSelectorSchema)),
    waitReadinessObjects: Type.Optional(Type.Array(ObjectSelectorSchema)),
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

/** A string or a list of strings (Kluctl accepts both for field paths and managers). */
const StringOrList = Type.Union([Type.String(), Type.Array(Type.String())]);
const ObjectMatch = {
  group: Type.Optional(Type.String()),
  kind: Type.Optional(Type.String()),
  namespace: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
};

/** An `ignoreForDiff` entry (kluctl's deployment-yml docs). */
export const IgnoreForDiffSchema = Type.Object(
  { ...ObjectMatch, fieldPath: Type.Optional(StringOrList), fieldPathRegex: Type.Optional(StringOrList) },
  Strict,
);
export type IgnoreForDiffConfig = Static<typeof IgnoreForDiffSchema>;

/** A `conflictResolution` entry (kluctl's deployment-yml docs). */
export const ConflictResolutionSchema = Type.Object(
  {
    ...ObjectMatch,
    fieldPath: Type.Optional(StringOrList),
    fieldPathRegex: Type.Optional(StringOrList),
    manager: Type.Optional(StringOrList),
    action: Type.Union([Type.Literal('ignore'), Type.Literal('force-apply')]),
  },
  Strict,
);
export type ConflictResolutionConfig = Static<typeof ConflictResolutionSchema>;

export const DeploymentProjectSchema = Type.Object(
  {
    deployments: Type.Optional(Type.Array(DeploymentItemSchema)),
    vars: Type.Optional(Type.Array(VarsSourceSchema)),
    when: Type.Optional(Type.String()),
    commonLabels: Type.Optional(StringMap),
    commonAnnotations: Type.Optional(StringMap),
    overrideNamespace: Type.Optional(Type.String()),
    tags: Type.Optional(Type.Array(Type.String())),
    ignoreForDiff: Type.Optional(Type.Array(IgnoreForDiffSchema)),
    conflictResolution: Type.Optional(Type.Array(ConflictResolutionSchema)),
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

/** `.kluctl-library.yaml`, which marks an included project as a library taking args (kluctl-libraries docs). */
export const KluctlLibrarySchema = Type.Object({ args: Type.Optional(Type.Array(ArgDefinitionSchema)) }, Strict);

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

export type ObjectSelector = Static<typeof ObjectSelectorSchema>;
export type GitInclude = Static<typeof GitIncludeSchema>;
export type OciInclude = Static<typeof OciIncludeSchema>;

/** Vars source kinds Gantry loads; the others in VarsSourceSchema are refused with a clear error. */
export const SUPPORTED_VARS_SOURCES = [
  'values',
  'file',
  'git',
  'gitFiles',
  'clusterConfigMap',
  'clusterSecret',
  'clusterObject',
  'systemEnvVars',
  'http',
  'vault',
] as const;

/** The cloud secret stores: refused, since only their cloud can serve them and no test here could reach one. */
export const CLOUD_VARS_SOURCES = ['awsSecretsManager', 'gcpSecretManager', 'azureKeyVault'] as const;

/** Every vars source kind Kluctl has (the keys of VarsSourceSchema that are not modifiers). */
export const VARS_SOURCE_KINDS = [...SUPPORTED_VARS_SOURCES, ...CLOUD_VARS_SOURCES] as const;
