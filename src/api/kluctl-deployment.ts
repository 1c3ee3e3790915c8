/**
 * The KluctlDeployment resource (gitops.gantry.dev/v1beta1), field-compatible with Kluctl's gitops.kluctl.io/v1beta1
 * (kluctl's api/v1beta1/kluctldeployment_types.go and docs/gitops/spec/v1beta1/kluctldeployment.md), so a manifest
 * from Kluctl's docs works by changing only its apiVersion. Two fields come from the Flux Kluctl controller:
 * `sourceRef` (a Flux GitRepository as source) and `renameContexts`. This schema is the single source of the CRD's
 * openAPIV3Schema, of the controller's validation and of the TypeScript types.
 */
import { Type, type Static } from 'typebox';
import type { NamespacedObjectMeta } from '../kube/object.ts';
import { FixedImageSchema } from '../project/fixed-images.ts';
import { DURATION_PATTERN, SAFE_DURATION_PATTERN } from '../duration.ts';

export const GROUP = 'gitops.gantry.dev';
export const VERSION = 'v1beta1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'KluctlDeployment';
export const PLURAL = 'kluctldeployments';
export const FINALIZER = 'finalizers.gitops.gantry.dev';

/** Request annotations the gitops commands set (Kluctl's names, so Kluctl tooling can drive Gantry too). */
export const REQUEST_ANNOTATIONS = {
  reconcile: 'kluctl.io/request-reconcile',
  diff: 'kluctl.io/request-diff',
  deploy: 'kluctl.io/request-deploy',
  prune: 'kluctl.io/request-prune',
  validate: 'kluctl.io/request-validate',
} as const;
export type RequestKind = keyof typeof REQUEST_ANNOTATIONS;

const Duration = (description: string) => Type.String({ pattern: DURATION_PATTERN, description });
/** Kluctl's SafeDuration: a duration or `never`. */
const SafeDuration = (description: string) => Type.String({ pattern: SAFE_DURATION_PATTERN, description });
const Preserved = (description: string) => Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true, description });
const LocalObjectReference = Type.Object({ name: Type.String({ description: 'Name of the referent (in the same namespace).' }) });

export const GitRefSchema = Type.Object(
  {
    branch: Type.Optional(Type.String({ description: 'Branch to check out.' })),
    tag: Type.Optional(Type.String({ description: 'Tag to check out.' })),
    commit: Type.Optional(Type.String({ description: 'Commit to check out.' })),
    semver: Type.Optional(Type.String({ description: 'Gantry extension: the newest tag matching this semver range.' })),
  },
  { description: 'Branch, tag, commit or semver range; the default branch when omitted.' },
);

const ProjectSourceGit = Type.Object(
  {
    url: Type.String({ description: 'Git URL of the repository (https, ssh or file).' }),
    ref: Type.Optional(GitRefSchema),
    path: Type.Optional(Type.String({ description: 'Folder of the Kluctl project inside the repository.' })),
  },
  { description: 'Git repository holding the Kluctl project.' },
);

const ProjectSourceOci = Type.Object(
  {
    url: Type.String({ description: 'oci://<host>/<repository> of the artifact, without tag or digest (use ref).' }),
    ref: Type.Optional(
      Type.Object(
        {
          tag: Type.Optional(Type.String({ description: 'Tag to pull.' })),
          digest: Type.Optional(Type.String({ description: 'Digest to pull (sha256:<hex>); wins over tag.' })),
        },
        { description: 'Tag or digest of the artifact; latest when omitted.' },
      ),
    ),
    path: Type.Optional(Type.String({ description: 'Folder of the Kluctl project inside the artifact.' })),
  },
  { description: 'OCI artifact (pushed with kluctl or gantry oci push) holding the Kluctl project; credentials from credentials.oci.' },
);

export const KluctlDeploymentSpecSchema = Type.Object({
  source: Type.Optional(
    Type.Object(
      {
        git: Type.Optional(ProjectSourceGit),
        oci: Type.Optional(ProjectSourceOci),
        url: Type.Optional(Type.String({ description: 'Deprecated: use source.git.url.' })),
        ref: Type.Optional(GitRefSchema),
        path: Type.Optional(Type.String({ description: 'Deprecated: use source.git.path.' })),
        secretRef: Type.Optional(Preserved('Deprecated and refused, as in Kluctl: use credentials.git.')),
        credentials: Type.Optional(Type.Array(Preserved('Deprecated and refused, as in Kluctl: use credentials.git.'))),
      },
      { description: 'Where the Kluctl project comes from.' },
    ),
  ),
  sourceRef: Type.Optional(
    Type.Object(
      {
        apiVersion: Type.Optional(Type.String()),
        kind: Type.String({ description: 'GitRepository or OCIRepository (source.toolkit.fluxcd.io/v1).' }),
        name: Type.String(),
        namespace: Type.Optional(Type.String()),
        path: Type.Optional(Type.String({ description: 'Folder of the Kluctl project inside the artifact.' })),
      },
      { description: 'Gantry/Flux extension: a Flux source whose artifact holds the project (instead of source).' },
    ),
  ),
  path: Type.Optional(
    Type.String({
      description: "Flux Kluctl controller's spelling of sourceRef.path: the folder of the Kluctl project inside the sourceRef's artifact.",
    }),
  ),
  dependsOn: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String(),
        namespace: Type.Optional(Type.String({ description: "The KluctlDeployment's namespace; this one's when unset." })),
      }),
      { description: 'Flux Kluctl controller extension: KluctlDeployments that must be Ready before this one reconciles.' },
    ),
  ),
  sourceOverrides: Type.Optional(
    Type.Array(Type.Object({ repoKey: Type.String(), url: Type.String(), isGroup: Type.Optional(Type.Boolean()) })),
  ),
  credentials: Type.Optional(
    Type.Object(
      {
        git: Type.Optional(
          Type.Array(
            Type.Object({
              host: Type.Optional(Type.String({ description: 'Host the credentials are for; * for every ssh host.' })),
              path: Type.Optional(Type.String({ description: 'Glob of repository paths on the host.' })),
              secretRef: LocalObjectReference,
            }),
          ),
        ),
        oci: Type.Optional(
          Type.Array(
            Type.Object({
              registry: Type.Optional(Type.String({ description: 'Registry host[:port] the credentials are for (required).' })),
              repository: Type.Optional(Type.String({ description: 'Glob of repository paths on the registry, e.g. my-org/*.' })),
              secretRef: Type.Object(
                { name: Type.String({ description: 'Name of the referent (in the same namespace).' }) },
                {
                  description:
                    'Secret with username and password, or token; optionally certFile, keyFile, caFile, insecureSkipTlsVerify, plainHttp.',
                },
              ),
            }),
          ),
        ),
        helm: Type.Optional(
          Type.Array(Type.Object({ host: Type.String(), path: Type.Optional(Type.String()), secretRef: LocalObjectReference })),
        ),
      },
      { description: 'Credentials for the git repositories, OCI registries and Helm repositories the project uses.' },
    ),
  ),
  decryption: Type.Optional(
    Type.Object(
      {
        provider: Type.String({ description: 'Only sops.' }),
        secretRef: Type.Optional(LocalObjectReference),
        serviceAccount: Type.Optional(Type.String()),
      },
      { description: 'Keys for SOPS-encrypted files: age keys (*.agekey) and PGP keys (*.asc) in the referenced Secret.' },
    ),
  ),
  interval: Duration('How often the deployment is reconciled (rendered, deployed when changed, validated, checked for drift).'),
  retryInterval: Type.Optional(Duration('How soon a failed reconciliation is retried; interval when unset.')),
  deployInterval: Type.Optional(SafeDuration('Deploy at least this often, even when nothing changed; never when unset.')),
  validateInterval: Type.Optional(SafeDuration('Validate at least this often; interval when unset.')),
  timeout: Type.Optional(Duration('Limit of one reconciliation; deployInterval or interval when unset (at least 30s).')),
  suspend: Type.Optional(Type.Boolean({ description: 'Stop reconciling (and, on deletion, deleting); manual requests still run.' })),
  helmCredentials: Type.Optional(
    Type.Array(Type.Object({ secretRef: Type.Optional(LocalObjectReference) }), { description: 'Deprecated: use credentials.helm.' }),
  ),
  serviceAccountName: Type.Optional(Type.String({ description: 'Service account to deploy as.' })),
  kubeConfig: Type.Optional(
    Type.Object(
      {
        secretRef: Type.Object({
          name: Type.String(),
          key: Type.Optional(Type.String({ description: 'Key of the kubeconfig in the Secret; value when unset.' })),
        }),
      },
      { description: "A kubeconfig in a Secret to deploy with, instead of one for the controller's own cluster." },
    ),
  ),
  target: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Target of the project to deploy.' })),
  targetNameOverride: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
  context: Type.Optional(
    Type.String({ description: "Kubeconfig context to use instead of the target's; the controller's own cluster is 'default'." }),
  ),
  renameContexts: Type.Optional(
    Type.Array(Type.Object({ oldContext: Type.String(), newContext: Type.String() }), {
      description: 'Flux Kluctl controller extension: rename kubeconfig contexts before deploying.',
    }),
  ),
  args: Type.Optional(Preserved('Args passed to the target (as -a).')),
  images: Type.Optional(
    Type.Array(
      Type.Object({
        ...FixedImageSchema.properties,
        // Kluctl's CRD also takes what list-images reports beside each image; they do not change the match.
        object: Type.Optional(
          Type.Object({
            group: Type.Optional(Type.String()),
            version: Type.Optional(Type.String()),
            kind: Type.String(),
            name: Type.String(),
            namespace: Type.Optional(Type.String()),
          }),
        ),
        deployedImage: Type.Optional(Type.String()),
        deploymentDir: Type.Optional(Type.String()),
        deployTags: Type.Optional(Type.Array(Type.String())),
      }),
      { description: "Fixed images for images.get_image, as --fixed-images-file entries (the target's come first)." },
    ),
  ),
  dryRun: Type.Optional(Type.Boolean({ default: false })),
  noWait: Type.Optional(Type.Boolean({ default: false })),
  forceApply: Type.Optional(Type.Boolean({ default: false })),
  replaceOnError: Type.Optional(Type.Boolean({ default: false })),
  forceReplaceOnError: Type.Optional(Type.Boolean({ default: false })),
  abortOnError: Type.Optional(Type.Boolean({ default: false })),
  includeTags: Type.Optional(Type.Array(Type.String())),
  excludeTags: Type.Optional(Type.Array(Type.String())),
  includeDeploymentDirs: Type.Optional(Type.Array(Type.String())),
  excludeDeploymentDirs: Type.Optional(Type.Array(Type.String())),
  deployMode: Type.Optional(Type.Union([Type.Literal('full-deploy'), Type.Literal('poke-images')], { default: 'full-deploy' })),
  validate: Type.Optional(Type.Boolean({ default: true, description: 'Validate after deploying and every validateInterval.' })),
  prune: Type.Optional(Type.Boolean({ default: false, description: 'Delete orphan objects after each deployment.' })),
  delete: Type.Optional(Type.Boolean({ default: false, description: "Delete the target's objects when this resource is deleted." })),
  manual: Type.Optional(Type.Boolean({ description: 'Deploy only objects hashes approved in manualObjectsHash.' })),
  manualObjectsHash: Type.Optional(Type.String({ description: 'The approved objects hash (copy status.lastObjectsHash).' })),
});
export type KluctlDeploymentSpec = Static<typeof KluctlDeploymentSpecSchema>;

const ManualRequest = Type.Object({
  requestValue: Type.String(),
  overridesPatch: Type.Optional(Preserved('Merge patch of the spec for this request.')),
});
export type ManualRequest = Static<typeof ManualRequest>;

const ManualRequestResult = Type.Object({
  request: ManualRequest,
  startTime: Type.String({ format: 'date-time' }),
  endTime: Type.Optional(Type.String({ format: 'date-time' })),
  reconcileId: Type.String(),
  resultId: Type.Optional(Type.String()),
  commandError: Type.Optional(Type.String()),
});
export type ManualRequestResult = Static<typeof ManualRequestResult>;

export const Condition = Type.Object({
  type: Type.String(),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  observedGeneration: Type.Optional(Type.Integer()),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  reason: Type.String(),
  message: Type.String(),
});
export type Condition = Static<typeof Condition>;

const ObjectRefSchema = Type.Object({
  group: Type.String(),
  version: Type.String(),
  kind: Type.String(),
  namespace: Type.String(),
  name: Type.String(),
});

/** Which command ran on which target, and when (Kluctl's CommandInfo, in Gantry's terms). */
export const CommandInfoSchema = Type.Object({
  command: Type.String({ description: 'deploy, poke-images, diff, prune, delete, validate or controller-install.' }),
  startTime: Type.String({ format: 'date-time' }),
  endTime: Type.String({ format: 'date-time' }),
  target: Type.String(),
  discriminator: Type.String(),
  dryRun: Type.Optional(Type.Boolean({ description: "True when the command ran as a server-side dry run (Kluctl's commandInfo.dryRun)." })),
});
export type CommandInfo = Static<typeof CommandInfoSchema>;

/** What status keeps of a command result (Kluctl's CommandResultSummary): counts and messages, the rest in the results namespace. */
export const ResultSummarySchema = Type.Object({
  id: Type.String({
    description: 'Name of the Secret holding the whole result in the results namespace; empty when it could not be kept.',
  }),
  commandInfo: CommandInfoSchema,
  objectsHash: Type.String(),
  revision: Type.String({ description: 'The commit or Flux revision deployed.' }),
  newObjects: Type.Integer(),
  changedObjects: Type.Integer(),
  deletedObjects: Type.Integer(),
  orphanObjects: Type.Integer(),
  appliedHooks: Type.Integer(),
  errors: Type.Array(Type.String()),
  warnings: Type.Array(Type.String()),
});
export type ResultSummary = Static<typeof ResultSummarySchema>;

/** What drift detection found: the objects whose live state differs from the render (changed or missing). */
export const DriftResultSchema = Type.Object({
  id: Type.String(),
  commandInfo: CommandInfoSchema,
  objects: Type.Array(ObjectRefSchema),
  errors: Type.Array(Type.String()),
});
export type DriftResult = Static<typeof DriftResultSchema>;

export const KluctlDeploymentStatusSchema = Type.Object({
  reconcileRequestResult: Type.Optional(ManualRequestResult),
  diffRequestResult: Type.Optional(ManualRequestResult),
  deployRequestResult: Type.Optional(ManualRequestResult),
  pruneRequestResult: Type.Optional(ManualRequestResult),
  validateRequestResult: Type.Optional(ManualRequestResult),
  observedGeneration: Type.Optional(Type.Integer()),
  observedCommit: Type.Optional(Type.String()),
  conditions: Type.Optional(Type.Array(Condition)),
  projectKey: Type.Optional(
    Type.Object({ repoKey: Type.String(), subDir: Type.String() }, { description: 'Identifies the project (repository and path).' }),
  ),
  targetKey: Type.Optional(
    Type.Object(
      { targetName: Type.String(), discriminator: Type.String() },
      { description: 'Identifies the target; its discriminator finds the objects to delete when the resource goes.' },
    ),
  ),
  lastObjectsHash: Type.Optional(Type.String()),
  lastManualObjectsHash: Type.Optional(Type.String()),
  lastPrepareError: Type.Optional(Type.String()),
  lastDiffResult: Type.Optional(Type.Object(ResultSummarySchema.properties, { description: 'Summary of the last diff.' })),
  lastDeployResult: Type.Optional(Type.Object(ResultSummarySchema.properties, { description: 'Summary of the last deploy.' })),
  lastValidateResult: Type.Optional(Type.Object(ResultSummarySchema.properties, { description: 'Summary of the last validate.' })),
  lastDriftDetectionResult: Type.Optional(
    Type.Object(DriftResultSchema.properties, { description: 'Result of the last drift detection.' }),
  ),
  lastDriftDetectionResultMessage: Type.Optional(Type.String()),
});
export type KluctlDeploymentStatus = Static<typeof KluctlDeploymentStatusSchema>;

/** Condition reasons, as Kluctl's (api/v1beta1/condition_types.go). */
export const REASONS = {
  succeeded: 'ReconciliationSucceeded',
  prepareFailed: 'PrepareFailed',
  deployFailed: 'DeployFailed',
  pruneFailed: 'PruneFailed',
  validateFailed: 'ValidateFailed',
  diffFailed: 'DiffFailed',
  progressing: 'Progressing',
  /** Flux's reason for a deployment held back by its dependsOn. */
  dependencyNotReady: 'DependencyNotReady',
} as const;

export interface KluctlDeployment {
  apiVersion: string;
  kind: string;
  metadata: NamespacedObjectMeta;
  spec: KluctlDeploymentSpec;
  status?: KluctlDeploymentStatus;
}
