/**
 * The fleet's resources (deployments.gantry.dev/v1alpha1), the GitOps front end of `gantry server`: each is
 * reconciled by `gantry operator run` into the server's API. Field names and shapes are Plural's
 * (pluralsh/console go/controller/api/v1alpha1: gitrepository_types.go, cluster_types.go,
 * servicedeployment_types.go, globalservice_types.go, servicecontext_types.go, helmrepository_types.go, pipeline_types.go,
 * notificationsink_types.go, notificationrouter_types.go, reconciliation.go, binding_types.go), so a Plural manifest
 * applies after changing only its apiVersion. Every Plural field is declared and the schemas stay strict (a typo is
 * refused with its field path). A field Gantry does not act on is marked with `unsupported` below: the CRD's
 * description says so, and the operator names it in the resource's Supported condition; one that would change what is
 * deployed, or where, also stops the resource from being sent at all. The field table is docs/operator.md's.
 * Extensions are Gantry's own fields (ServiceDeployment's `renderer`, rollouts, HEALTH gates, WEBHOOK sinks).
 *
 * These schemas are the single source of the CRDs' openAPIV3Schema (src/install/fleet-crds.ts) and of the types.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { DURATION_PATTERN } from '../duration.ts';
import { UNSUPPORTED, type UnsupportedMark } from './crd.ts';
import type { NamespacedObjectMeta, ObjectMeta } from '../kube/object.ts';
import { FLEET_EVENTS } from './events.ts';
import { Condition } from './kluctl-deployment.ts';
import { COMPONENT_STATES, DRIFT_STATES } from './services.ts';
import { RolloutSpecSchema } from './rollouts.ts';

export const FLEET_GROUP = 'deployments.gantry.dev';
export const FLEET_VERSION = 'v1alpha1';
export const FLEET_API_VERSION = `${FLEET_GROUP}/${FLEET_VERSION}`;
/** Held by resources whose server object the operator created, until that object is deleted (or detached). */
export const FLEET_FINALIZER = 'deployments.gantry.dev/finalizer';

/**
 * Condition types every fleet resource carries: Plural's three, and Supported, False while the spec sets a field Gantry
 * does not act on (its message names each, with why).
 */
export const CONDITIONS = { ready: 'Ready', synchronized: 'Synchronized', readonly: 'Readonly', supported: 'Supported' } as const;

/** Marks `schema` as a field (or values of one) Gantry accepts but does not act on (see UnsupportedMark). */
export function markUnsupported<T extends TSchema>(schema: T, reason: string, options: Omit<UnsupportedMark, 'reason'>): T {
  const mark: UnsupportedMark = { reason, ...options };
  return { ...schema, [UNSUPPORTED]: mark };
}

/** An optional field Gantry accepts but does not act on (see UnsupportedMark). */
const unsupported = <T extends TSchema>(schema: T, reason: string, options: Omit<UnsupportedMark, 'reason'>) =>
  Type.Optional(markUnsupported(schema, reason, options));

const Name = (description: string) => Type.String({ minLength: 1, description });
const ROUTABLE_EVENTS = [...FLEET_EVENTS, '*'];
const REPORTED = { blocks: false } as const;
const BLOCKS = { blocks: true } as const;
const NO_PROJECTS = 'Gantry has no projects: every cluster, service and pipeline is in the one fleet, guarded by role bindings';

export const ObjectReferenceSchema = Type.Object(
  {
    apiVersion: Type.Optional(
      Type.String({ description: 'Of the referent; for a repositoryRef, source.toolkit.fluxcd.io/v1 names a Flux GitRepository.' }),
    ),
    kind: Type.Optional(Type.String({ description: 'Of the referent (Cluster, GitRepository).' })),
    name: Name('Name of the referent.'),
    namespace: Type.Optional(Type.String({ description: "Namespace of the referent; default the referring resource's." })),
    uid: Type.Optional(Type.String({ description: 'Ignored: the referent is found by name (corev1.ObjectReference field).' })),
    resourceVersion: Type.Optional(Type.String({ description: 'Ignored (corev1.ObjectReference field).' })),
    fieldPath: Type.Optional(Type.String({ description: 'Ignored (corev1.ObjectReference field).' })),
  },
  { description: 'A reference to another resource, as corev1.ObjectReference.' },
);
export type ObjectReference = Static<typeof ObjectReferenceSchema>;

/** Plural's Reconciliation (reconciliation.go); `subject` says what its drift detection is on this kind. */
const Reconciliation = (subject: string) =>
  Type.Object(
    {
      driftDetection: Type.Optional(Type.Boolean({ description: `Detect and repair drift of ${subject} (default true).` })),
      interval: Type.Optional(
        Type.String({ pattern: DURATION_PATTERN, description: 'How often drift is looked for, e.g. 5m30s (Go duration).' }),
      ),
    },
    { description: `Drift detection of ${subject} (Plural's reconciliation).` },
  );

/** Plural's Binding (binding_types.go): a user or group, by id, email or name. */
const BindingSchema = Type.Object({
  id: Type.Optional(Type.String()),
  UserID: Type.Optional(Type.String()),
  userEmail: Type.Optional(Type.String()),
  groupID: Type.Optional(Type.String()),
  groupName: Type.Optional(Type.String()),
});
/**
 * Plural's read and write bindings, as the server's role bindings on the resource's server object
 * (src/operator/bindings.ts); `write` is the role `writeRole`.
 */
const Bindings = (object: string, writeRole: string) =>
  Type.Optional(
    Type.Object(
      {
        read: Type.Optional(Type.Array(BindingSchema, { description: `Users (userEmail) and groups (groupName) that read ${object}.` })),
        write: Type.Optional(Type.Array(BindingSchema, { description: `Users and groups that get the ${writeRole} role on ${object}.` })),
      },
      {
        description: `Read and write policies (Plural's bindings): role bindings named operator.<kind>.<namespace>.<name>.read|write, on ${object} only; not applied to an adopted resource.`,
      },
    ),
  );
const Deprecated = (schema: TSchema, what: string) => unsupported(schema, `deprecated in Plural and not acted on (${what})`, REPORTED);

export const SecretReferenceSchema = Type.Object(
  {
    name: Name('Name of the Secret.'),
    namespace: Type.Optional(Type.String({ description: "Namespace of the Secret; default the referring resource's." })),
  },
  { description: 'A Secret, as corev1.SecretReference.' },
);
export type SecretReference = Static<typeof SecretReferenceSchema>;

/** The status fields every fleet resource has (Plural's common status). */
const commonStatus = {
  id: Type.Optional(Type.String({ description: "The server object's id." })),
  sha: Type.Optional(Type.String({ description: 'sha256 of the attributes last sent to the server; a change sends them again.' })),
  readonly: Type.Optional(Type.Boolean({ description: 'Adopted read-only: the server object was made elsewhere and is never changed.' })),
  conditions: Type.Optional(Type.Array(Condition, { description: 'Ready, Synchronized and Readonly.' })),
};

export const GitRepositorySpecSchema = Type.Object({
  url: Type.String({ minLength: 1, description: 'https://, ssh://, git@host:path or file:// URL of the repository.' }),
  credentialsRef: Type.Optional(
    Type.Object(
      { ...SecretReferenceSchema.properties },
      {
        description: 'A Secret with username and password, or privateKey (and known_hosts); sent to the server, which keeps it encrypted.',
      },
    ),
  ),
  connectionRef: unsupported(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'An ScmConnection whose credentials it uses (Plural).' }),
    'Gantry has no ScmConnections: give the credentials in credentialsRef',
    REPORTED,
  ),
  reconciliation: Type.Optional(Reconciliation('the server repository: interval is how often the operator checks it again')),
});
export type GitRepositorySpec = Static<typeof GitRepositorySpecSchema>;

export const GitRepositoryStatusSchema = Type.Object({
  ...commonStatus,
  health: Type.Optional(Type.String({ description: 'PULLABLE or FAILED, as the server last fetched it.' })),
  message: Type.Optional(Type.String({ description: "The server's last fetch error." })),
});
export type GitRepositoryStatus = Static<typeof GitRepositoryStatusSchema>;

export const ClusterSpecSchema = Type.Object({
  handle: Type.Optional(
    Type.String({
      pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$',
      description: "The server cluster's handle; default metadata.name. An existing cluster with this handle is adopted read-only.",
    }),
  ),
  tags: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Cluster tags, which global services select on.' })),
  distro: Type.Optional(Type.String({ description: 'Kubernetes distribution (global services may select on it).' })),
  version: Deprecated(Type.String({ description: 'Kubernetes version (Plural, deprecated).' }), 'the agent reports the version it finds'),
  providerRef: Deprecated(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'Cloud provider (Plural, deprecated).' }),
    'Gantry registers clusters made elsewhere',
  ),
  projectRef: unsupported(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'Project (Plural).' }),
    NO_PROJECTS,
    REPORTED,
  ),
  cloud: unsupported(
    Type.Union([Type.Literal('aws'), Type.Literal('azure'), Type.Literal('gcp'), Type.Literal('byok')], {
      description: 'Cloud provider (Plural, deprecated); byok is what Gantry does.',
    }),
    'deprecated in Plural; Gantry registers clusters made elsewhere (byok)',
    { blocks: false, unless: ['byok'] },
  ),
  protect: Deprecated(Type.Boolean({ description: 'Prevent deletion (Plural, deprecated).' }), 'deleting the resource deletes the cluster'),
  metadata: unsupported(
    Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true, description: 'Any JSON metadata (Plural).' }),
    "Gantry's clusters carry tags only",
    REPORTED,
  ),
  bindings: Bindings('the cluster and every service on it', 'writer'),
  cloudSettings: Deprecated(
    Type.Object(
      {
        aws: Type.Optional(Type.Object({ region: Type.String() })),
        azure: Type.Optional(
          Type.Object({ resourceGroup: Type.String(), network: Type.String(), subscriptionId: Type.String(), location: Type.String() }),
        ),
        gcp: Type.Optional(Type.Object({ project: Type.String(), network: Type.String(), region: Type.String() })),
      },
      { description: 'Cloud settings (Plural, deprecated).' },
    ),
    'Gantry registers clusters made elsewhere',
  ),
  nodePools: Deprecated(
    Type.Array(
      Type.Object({
        name: Type.String(),
        instanceType: Type.String(),
        minSize: Type.Integer({ minimum: 1 }),
        maxSize: Type.Integer({ minimum: 1 }),
        labels: Type.Optional(Type.Record(Type.String(), Type.String())),
        taints: Type.Optional(
          Type.Array(
            Type.Object({
              key: Type.String(),
              value: Type.String(),
              effect: Type.String(),
            }),
          ),
        ),
        cloudSettings: Type.Optional(Type.Object({ aws: Type.Optional(Type.Object({ launchTemplateId: Type.Optional(Type.String()) })) })),
      }),
      { description: 'Node pools (Plural, deprecated).' },
    ),
    'Gantry registers clusters made elsewhere',
  ),
  reconciliation: Type.Optional(Reconciliation('the server cluster: interval is how often the operator checks it again')),
});
export type ClusterSpec = Static<typeof ClusterSpecSchema>;

export const ClusterStatusSchema = Type.Object({
  ...commonStatus,
  currentVersion: Type.Optional(Type.String({ description: 'Kubernetes version, as its agent reported it.' })),
  pingedAt: Type.Optional(Type.String({ description: 'Last ping of its agent.' })),
  kasURL: Type.Optional(Type.String({ description: "Its API server's URL (Plural); not reported by Gantry's agents." })),
  health: Type.Optional(Type.String({ description: 'HEALTHY, UNHEALTHY or UNKNOWN.' })),
});
export type ClusterStatus = Static<typeof ClusterStatusSchema>;

const RendererSpec = Type.Object(
  {
    kind: Type.Union([Type.Literal('auto'), Type.Literal('kluctl'), Type.Literal('kustomize'), Type.Literal('raw'), Type.Literal('helm')], {
      description: 'Gantry extension: how the agent renders the source (default auto, as Plural detects it).',
    }),
    target: Type.Optional(Type.String({ description: 'kluctl: the target.' })),
    args: Type.Optional(Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true, description: 'kluctl: args.' })),
  },
  { description: 'Gantry extension: the renderer, e.g. {kind: kluctl, target: prod}.' },
);

/** Plural's GitRef with its ref required: a folder at a branch, tag or commit (a chart's, an extra source's). */
const GitRefFields = {
  folder: Type.String({ description: 'Folder of the repository.' }),
  ref: Type.String({ description: 'Branch, tag or commit.' }),
  files: unsupported(
    Type.Array(Type.String(), { description: 'Files added to the folder (Plural).' }),
    "files from outside the folder are not added to a service's source yet",
    BLOCKS,
  ),
};

/**
 * A service's helm source. A chart from git (helm.repositoryRef + helm.git) is a ServiceDeployment's: its folder is
 * the service's source (or an extra source beside its own git folder), rendered as a local chart; a GlobalService's
 * template marks the two fields unsupported.
 */
function HelmSpec(chartFromGit: boolean) {
  const fromGit = <T extends TSchema>(schema: T) =>
    chartFromGit
      ? Type.Optional(schema)
      : unsupported(schema, "a global service's chart is taken from a Helm repository or OCI registry (helm.url), not from git", BLOCKS);
  return Type.Optional(
    Type.Object(
      {
        url: Type.Optional(Type.String({ description: 'Helm repository (https://) or OCI registry path (oci://).' })),
        repository: Type.Optional(
          Type.Object(
            {
              name: Name('Name of the Flux HelmRepository.'),
              namespace: Type.Optional(Type.String({ description: "Its namespace; default the resource's." })),
            },
            {
              description:
                'A Flux HelmRepository (source.toolkit.fluxcd.io/v1) whose spec.url is the chart repository, as Plural resolves it; instead of url.',
            },
          ),
        ),
        chart: Type.Optional(Type.String({ description: 'The chart of the repository.' })),
        version: Type.Optional(Type.String({ description: 'Exact version or semver range.' })),
        values: Type.Optional(Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true, description: 'Helm values.' })),
        valuesFiles: Type.Optional(Type.Array(Type.String(), { description: 'Values files in the git folder.' })),
        valuesFrom: Type.Optional(
          Type.Object(
            { ...SecretReferenceSchema.properties },
            {
              description:
                "A Secret each of whose keys is a YAML values file, merged in key order under `values`; sent sealed, never shown by the server (Plural's valuesFrom).",
            },
          ),
        ),
        valuesConfigMapRef: Type.Optional(
          Type.Object(
            {
              name: Name('Name of the ConfigMap.'),
              key: Type.String({ description: 'Its key holding a YAML values file.' }),
              optional: Type.Optional(Type.Boolean({ description: 'A missing ConfigMap or key adds no values, rather than waiting.' })),
            },
            { description: "A ConfigMap key holding values, merged under valuesFrom and `values` (Plural's valuesConfigMapRef)." },
          ),
        ),
        release: Type.Optional(Type.String({ description: 'Release name; default the service name.' })),
        repositoryRef: fromGit(
          Type.Object(
            { ...ObjectReferenceSchema.properties },
            { description: 'A GitRepository holding the chart, instead of url (Plural); with helm.git.' },
          ),
        ),
        git: fromGit(Type.Object(GitRefFields, { description: "The chart's folder and ref in helm.repositoryRef (Plural)." })),
        ignoreHooks: Type.Optional(Type.Boolean({ description: "Leave out the chart's hooks (helm template --no-hooks); default false." })),
        ignoreCrds: Type.Optional(Type.Boolean({ description: "Leave out the chart's crds/ folder (--skip-crds); default false." })),
        luaScript: unsupported(
          Type.String({ description: 'A Lua script returning values and valuesFiles (Plural).' }),
          'Gantry runs no Lua: give the values in helm.values or helm.valuesFiles',
          BLOCKS,
        ),
        luaFile: unsupported(
          Type.String({ description: 'A Lua file returning values and valuesFiles (Plural).' }),
          'Gantry runs no Lua: give the values in helm.values or helm.valuesFiles',
          BLOCKS,
        ),
      },
      { description: 'A Helm chart as source (Plural helm spec).' },
    ),
  );
}

/** What a service runs (a ServiceDeployment without its cluster; a GlobalService's template, as Plural's ServiceTemplate). */
const ServiceTemplateFields = {
  name: Type.Optional(Type.String({ description: 'The service name on its cluster; default metadata.name.' })),
  namespace: Type.Optional(
    Type.String({ minLength: 1, description: "Namespace the service deploys into; default the resource's own (as Plural)." }),
  ),
  repositoryRef: Type.Optional(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'The GitRepository (Gantry or Flux) holding the source.' }),
  ),
  git: Type.Optional(
    Type.Object(
      {
        ref: Type.Optional(
          Type.String({
            minLength: 1,
            description: 'Branch, tag or commit; may be left out when repositoryRef names a Flux GitRepository (its spec.ref is used).',
          }),
        ),
        folder: Type.String({ description: 'Folder of the repository holding the service.' }),
        files: unsupported(
          Type.Array(Type.String(), { description: 'Files added to the folder (Plural).' }),
          "files from outside the folder are not added to a service's source yet",
          BLOCKS,
        ),
      },
      { description: 'Where in the repository the service is.' },
    ),
  ),
  helm: HelmSpec(false),
  kustomize: Type.Optional(
    Type.Object(
      {
        path: Type.String({ description: 'Folder of the kustomization, below git.folder.' }),
        enableHelm: unsupported(
          Type.Boolean({ description: 'Inflate helmCharts of the kustomization (Plural).' }),
          'kustomize runs without --enable-helm: give the chart as a Helm source',
          { blocks: true, when: [true] },
        ),
      },
      { description: 'Render with kustomize.' },
    ),
  ),
  renderer: Type.Optional(RendererSpec),
  configuration: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: 'Configuration values (args of a Kluctl project, Liquid bindings).' }),
  ),
  configurationRef: Type.Optional(
    Type.Object(
      { ...SecretReferenceSchema.properties },
      { description: 'A Secret whose keys are configuration values (over `configuration`).' },
    ),
  ),
  contexts: Type.Optional(Type.Array(Type.String(), { description: 'Service contexts bound into its templates.' })),
  templated: Type.Optional(
    Type.Boolean({
      description: 'Render the *.liquid files of a raw or kustomize folder with Liquid (default true); false applies the folder as it is.',
    }),
  ),
  syncConfig: Type.Optional(
    Type.Object(
      {
        createNamespace: Type.Optional(Type.Boolean({ description: "Make the service's namespace when missing (default true)." })),
        deleteNamespace: unsupported(
          Type.Boolean({ description: "Delete the service's namespace with the service (Plural)." }),
          'a namespace is deleted only when it is one of the objects the service applied',
          { blocks: false, when: [true] },
        ),
        enforceNamespace: Type.Optional(
          Type.Boolean({ description: "Put every namespaced object into the service's namespace (default false)." }),
        ),
        labels: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "Labels of the service's namespace." })),
        annotations: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "Annotations of the service's namespace." })),
        diffNormalizers: Type.Optional(
          Type.Array(
            Type.Object({
              kind: Type.Optional(Type.String({ description: 'Kind of the objects it applies to; absent: any.' })),
              name: Type.Optional(Type.String({ description: 'Name of the objects it applies to; absent: any.' })),
              namespace: Type.Optional(Type.String({ description: 'Namespace of the objects it applies to; absent: any.' })),
              backfill: Type.Optional(
                Type.Boolean({ description: 'Keep the live values of the pointers rather than leaving them out of what is applied.' }),
              ),
              jsonPointers: Type.Array(Type.String(), { description: 'JSON pointers (RFC 6901) of the fields, e.g. /spec/replicas.' }),
            }),
            { description: 'Fields left to whatever else in the cluster changes them (an autoscaler, an injector), so they are no drift.' },
          ),
        ),
        selfHeal: Type.Optional(
          Type.Boolean({
            description:
              'Repair drift (objects deleted or changed in the cluster) within seconds and on the periodic resync (default true); false: drift is only reported, until the next revision.',
          }),
        ),
      },
      { description: "How its agent applies (Plural's syncConfig; labels and annotations are its namespace's metadata)." },
    ),
  ),
};

export const ServiceTemplateSchema = Type.Object(ServiceTemplateFields, { description: 'The service each selected cluster gets.' });
export type ServiceTemplate = Static<typeof ServiceTemplateSchema>;

/** Plural's ServiceTemplate (managednamespace_types.go): the service fields, with dependencies as references. */
const GlobalServiceTemplateSchema = Type.Object(
  {
    ...ServiceTemplateFields,
    dependencies: unsupported(
      Type.Array(Type.Object({ ...ObjectReferenceSchema.properties }), { description: 'Services the copies depend on (Plural).' }),
      "a global service's copies do not wait for other services yet",
      REPORTED,
    ),
  },
  { description: 'The service each selected cluster gets.' },
);

/** Drift detection of a service is its agent's (syncConfig.selfHeal and the resync interval). */
const ServiceReconciliation = Reconciliation(
  "the service's objects in its cluster: false reports drift without repairing it (syncConfig.selfHeal false); interval is the agent's full resync of the service",
);

export const ServiceDeploymentSpecSchema = Type.Object({
  ...ServiceTemplateFields,
  helm: HelmSpec(true),
  cluster: Type.Optional(
    Type.String({ minLength: 1, description: "The handle of the server's cluster the service runs on; instead of clusterRef (Plural)." }),
  ),
  clusterRef: Type.Optional(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'The Cluster resource the service runs on; or cluster.' }),
  ),
  docsPath: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        "A folder of the service's source holding its docs: its Markdown files are shown on the service's Docs tab and by `gantry service docs`.",
    }),
  ),
  version: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 128,
      description: "What the service's owners call its current state, e.g. 1.4.2; recorded on each of its revisions.",
    }),
  ),
  flowRef: unsupported(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'A Flow the service belongs to (Plural).' }),
    "Gantry has no Flows (Plural's grouping of services, pipelines and previews for its UI)",
    REPORTED,
  ),
  bindings: Bindings('the service (on its cluster)', 'writer'),
  imports: unsupported(
    Type.Array(
      Type.Object({ stackRef: Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'An InfrastructureStack.' }) }),
      { description: "Outputs of InfrastructureStacks bound into the service's templates (Plural)." },
    ),
    'Gantry has no InfrastructureStacks, so there are no outputs to import',
    BLOCKS,
  ),
  sources: Type.Optional(
    Type.Array(
      Type.Object({
        path: Type.Optional(
          Type.String({ description: 'Folder of the combined source it is packed at (required by Gantry; the root holds git.folder).' }),
        ),
        repositoryRef: Type.Optional(
          Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'The GitRepository (Gantry or Flux) of the source.' }),
        ),
        git: Type.Optional(Type.Object(GitRefFields, { description: 'Where in the repository the source is.' })),
      }),
      { description: "More git folders packed into the service's source at their paths, beside git.folder at the root." },
    ),
  ),
  renderers: Type.Optional(
    Type.Array(
      Type.Object({
        path: Type.String({ description: 'Folder of the combined source; . for the root.' }),
        type: Type.Union([Type.Literal('AUTO'), Type.Literal('RAW'), Type.Literal('HELM'), Type.Literal('KUSTOMIZE')], {
          description: 'HELM: a chart in the folder; AUTO: HELM with a Chart.yaml, KUSTOMIZE with a kustomization, else RAW.',
        }),
        helm: Type.Optional(
          Type.Object({
            values: Type.Optional(Type.String({ description: 'Values, a YAML mapping as text, over valuesFiles.' })),
            valuesFiles: Type.Optional(Type.Array(Type.String(), { description: 'Values files, relative to the chart folder.' })),
            release: Type.Optional(Type.String({ description: 'Release name; default the service name.' })),
          }),
        ),
      }),
      { description: 'Folders of the source each rendered on its own, their objects applied together; instead of renderer.' },
    ),
  ),
  agentId: Type.Optional(Type.String({ description: "Ignored: Plural's UI links the agent session that made the service with it." })),
  reconciliation: Type.Optional(ServiceReconciliation),
  dependencies: Type.Optional(
    Type.Array(Type.Object({ name: Type.String({ description: 'A service on the same cluster.' }) }), {
      description: 'Services that must be healthy before this one is applied.',
    }),
  ),
  protect: Type.Optional(Type.Boolean({ description: 'Refuse deletion of the service.' })),
  detach: Type.Optional(
    Type.Boolean({ description: 'On deletion of this resource, forget the service but leave its objects in the cluster.' }),
  ),
});
export type ServiceDeploymentSpec = Static<typeof ServiceDeploymentSpecSchema>;

export const ServiceDeploymentStatusSchema = Type.Object({
  ...commonStatus,
  revision: Type.Optional(Type.Integer({ description: "The service's newest revision." })),
  appliedRevision: Type.Optional(Type.Integer({ description: 'The revision its agent last applied.' })),
  pinnedBy: Type.Optional(
    Type.String({ description: 'Who pinned the service at its revision with a rollback; newer revisions wait for the release.' }),
  ),
  pendingRevision: Type.Optional(Type.Integer({ description: "The newest revision, waiting for the pin's release." })),
  errors: Type.Optional(
    Type.Array(Type.Object({ source: Type.String(), message: Type.String() }), { description: 'Errors its agent reported.' }),
  ),
  components: Type.Optional(
    Type.Array(
      Type.Object({
        group: Type.String(),
        version: Type.String(),
        kind: Type.String(),
        namespace: Type.String(),
        name: Type.String(),
        state: Type.String({ description: `One of ${COMPONENT_STATES.join(', ')}.` }),
        synced: Type.Boolean(),
        drift: Type.Optional(
          Type.Object(
            {
              state: Type.String({ description: `One of ${DRIFT_STATES.join(', ')}.` }),
              fields: Type.Array(Type.String(), { description: 'The fields whose live value differs from the applied one.' }),
              managers: Type.Array(Type.String(), { description: 'The field managers that own those fields now.' }),
            },
            { description: 'How the object differs from what its agent applied; absent when it does not.' },
          ),
        ),
      }),
      { description: 'The objects of the service, as its agent reported them.' },
    ),
  ),
});
export type ServiceDeploymentStatus = Static<typeof ServiceDeploymentStatusSchema>;

export const ServiceContextSpecSchema = Type.Object({
  name: Type.Optional(
    Type.String({
      pattern: '^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$',
      description: 'The context name on the server; default metadata.name.',
    }),
  ),
  configuration: Type.Optional(
    Type.Unknown({
      'x-kubernetes-preserve-unknown-fields': true,
      description: 'Any JSON object, bound into the templates of services naming the context as contexts.<name> (not secret); default {}.',
    }),
  ),
  projectRef: unsupported(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'Project (Plural).' }),
    NO_PROJECTS,
    REPORTED,
  ),
  reconciliation: Type.Optional(Reconciliation('the server context: interval is how often the operator checks it again')),
});
export type ServiceContextSpec = Static<typeof ServiceContextSpecSchema>;

export const ServiceContextStatusSchema = Type.Object({
  ...commonStatus,
  boundBy: Type.Optional(Type.Array(Type.String(), { description: 'Services and global services binding the context.' })),
});
export type ServiceContextStatus = Static<typeof ServiceContextStatusSchema>;

export const GlobalServiceSpecSchema = Type.Object({
  name: Type.Optional(Type.String({ description: 'The global service name on the server; default metadata.name.' })),
  tags: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: 'Clusters whose tags include all of these get the service.' }),
  ),
  distro: Type.Optional(Type.String({ description: 'Only clusters of this Kubernetes distribution.' })),
  serviceRef: Type.Optional(
    Type.Object(
      { ...ObjectReferenceSchema.properties },
      { description: 'A ServiceDeployment whose service (less its cluster) every selected cluster gets.' },
    ),
  ),
  template: Type.Optional(GlobalServiceTemplateSchema),
  reparent: unsupported(
    Type.Boolean({ description: 'Take over services of the same name made elsewhere (Plural).' }),
    'a copy is never made over a service of the same name that the global service does not own',
    { blocks: false, when: [true] },
  ),
  interval: Type.Optional(
    Type.String({
      pattern: DURATION_PATTERN,
      description: 'How often the operator checks the global service again (Plural; default 30s).',
    }),
  ),
  context: unsupported(
    Type.Object(
      { raw: Type.Optional(Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true })) },
      { description: "Data for templating the copies' service properties (Plural)." },
    ),
    "the copies' properties are not templated: each copy is the template",
    BLOCKS,
  ),
  mgmt: unsupported(
    Type.Boolean({ description: 'Include management clusters (Plural).' }),
    'Gantry does not tell management clusters apart: a cluster whose tags match gets the service',
    REPORTED,
  ),
  providerRef: unsupported(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: "Only a provider's clusters (Plural, deprecated)." }),
    'Gantry has no providers: select clusters by tags and distro',
    BLOCKS,
  ),
  projectRef: unsupported(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: "Only a project's clusters (Plural)." }),
    `${NO_PROJECTS}; select clusters by tags`,
    BLOCKS,
  ),
  ignoreClusters: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), { description: 'Handles of clusters that get no copy, whatever their tags.' }),
  ),
  reconciliation: Type.Optional(ServiceReconciliation),
  rollout: Type.Optional(
    Type.Object(RolloutSpecSchema.properties, {
      additionalProperties: false,
      description: 'Gantry extension: new revisions reach the copies wave by wave (docs/rollouts.md); absent: all at once.',
    }),
  ),
  cascade: Type.Optional(
    Type.Object(
      {
        detach: Type.Optional(Type.Boolean({ description: 'On deletion, forget the copies but leave their objects in the clusters.' })),
        delete: Type.Optional(Type.Boolean({ description: 'On deletion, delete the copies and their objects (the default).' })),
      },
      { description: 'What deleting this resource does to the copies (Plural cascade).' },
    ),
  ),
});
export type GlobalServiceSpec = Static<typeof GlobalServiceSpecSchema>;

export const GlobalServiceStatusSchema = Type.Object({
  ...commonStatus,
  services: Type.Optional(
    Type.Array(Type.Object({ cluster: Type.String(), status: Type.String() }), { description: 'The copies, one per selected cluster.' }),
  ),
});
export type GlobalServiceStatus = Static<typeof GlobalServiceStatusSchema>;

const SecretKeySelector = (description: string) =>
  Type.Object(
    {
      name: Name('Name of the Secret.'),
      key: Type.String({ minLength: 1, description: 'Its key.' }),
      optional: Type.Optional(Type.Boolean({ description: 'A missing Secret or key is no error.' })),
    },
    { description: `${description} (corev1.SecretKeySelector).` },
  );
const CLOUD_AUTH = 'only basic auth is supported: the server pulls with a username and password';

export const HelmRepositorySpecSchema = Type.Object({
  url: Type.String({
    pattern: '^(https?|oci)://.+',
    description:
      'The Helm repository (index.yaml below it); the server uses it for services whose helm.url is this URL. oci:// is accepted but not registered yet.',
  }),
  provider: unsupported(
    Type.Union([Type.Literal('BASIC'), Type.Literal('BEARER'), Type.Literal('GCP'), Type.Literal('AZURE'), Type.Literal('AWS')], {
      description: "How to authenticate (Plural's provider).",
    }),
    CLOUD_AUTH,
    { blocks: false, unless: ['BASIC'] },
  ),
  auth: Type.Optional(
    Type.Object(
      {
        basic: Type.Optional(
          Type.Object({
            username: Type.String({ minLength: 1 }),
            passwordSecretRef: Type.Optional(
              Type.Object(
                {
                  ...SecretReferenceSchema.properties,
                  key: Type.Optional(Type.String({ description: 'Key of the password; default password (Gantry extension).' })),
                },
                { description: 'The Secret holding the password (sent to the server, which seals it).' },
              ),
            ),
            secretKeyRef: Type.Optional(SecretKeySelector('The password; or passwordSecretRef')),
          }),
        ),
        bearer: unsupported(
          Type.Object({
            tokenSecretRef: Type.Optional(SecretReferenceSchema),
            secretKeyRef: Type.Optional(SecretKeySelector('The token')),
          }),
          CLOUD_AUTH,
          REPORTED,
        ),
        aws: unsupported(
          Type.Object({
            accessKey: Type.Optional(Type.String()),
            secretAccessKeySecretRef: Type.Optional(SecretReferenceSchema),
            secretKeyRef: Type.Optional(SecretKeySelector('The secret access key')),
            assumeRoleArn: Type.Optional(Type.String()),
          }),
          CLOUD_AUTH,
          REPORTED,
        ),
        azure: unsupported(
          Type.Object({
            clientId: Type.Optional(Type.String()),
            clientSecretSecretRef: Type.Optional(SecretReferenceSchema),
            secretKeyRef: Type.Optional(SecretKeySelector('The client secret')),
            tenantId: Type.Optional(Type.String()),
            subscriptionId: Type.Optional(Type.String()),
          }),
          CLOUD_AUTH,
          REPORTED,
        ),
        gcp: unsupported(
          Type.Object({
            applicationCredentialsSecretRef: Type.Optional(SecretReferenceSchema),
            secretKeyRef: Type.Optional(SecretKeySelector('The application credentials')),
          }),
          CLOUD_AUTH,
          REPORTED,
        ),
      },
      { description: "Plural's HelmRepository auth." },
    ),
  ),
});
export type HelmRepositorySpec = Static<typeof HelmRepositorySpecSchema>;

export const HelmRepositoryStatusSchema = Type.Object({ ...commonStatus });
export type HelmRepositoryStatus = Static<typeof HelmRepositoryStatusSchema>;

export const NotificationSinkSpecSchema = Type.Object({
  name: Type.Optional(
    Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'The sink name on the server; default metadata.name.' }),
  ),
  type: markUnsupported(
    Type.Union([Type.Literal('SLACK'), Type.Literal('TEAMS'), Type.Literal('PLURAL'), Type.Literal('WEBHOOK')], {
      description: 'A Slack or Teams incoming webhook, a generic JSON webhook (Gantry extension), or PLURAL (not supported).',
    }),
    "PLURAL is the in-app inbox of Plural's console; Gantry posts to Slack, Teams and JSON webhooks",
    { blocks: true, when: ['PLURAL'] },
  ),
  configuration: Type.Optional(
    Type.Object(
      {
        slack: Type.Optional(Type.Object({ url: Type.String({ description: 'The incoming webhook URL (Plural keeps it in the spec).' }) })),
        webhook: Type.Optional(Type.Object({ url: Type.String({ description: 'Where the JSON event is posted.' }) })),
        teams: Type.Optional(
          Type.Object({ url: Type.String({ description: 'The Teams incoming webhook URL (Plural keeps it in the spec).' }) }),
        ),
        plural: Type.Optional(
          Type.Object(
            {
              priority: Type.Optional(Type.Union([Type.Literal('LOW'), Type.Literal('MEDIUM'), Type.Literal('HIGH')])),
              urgent: Type.Optional(Type.Boolean()),
            },
            { description: 'In-app notifications of Plural (type PLURAL).' },
          ),
        ),
      },
      { description: "Plural's sink configuration; secretRef's keys take precedence." },
    ),
  ),
  secretRef: Type.Optional(
    Type.Object(
      { ...SecretReferenceSchema.properties },
      { description: 'A Secret with `url` and, for a webhook, `hmacKey` (signs the body: X-Signature: sha256=<hex>).' },
    ),
  ),
  bindings: unsupported(
    Type.Array(BindingSchema, { description: 'Who gets the in-app notifications of a PLURAL sink (Plural).' }),
    "Gantry has no in-app inbox: PLURAL sinks are Plural's console's",
    REPORTED,
  ),
  reconciliation: Type.Optional(Reconciliation('the server sink: interval is how often the operator checks it again')),
});
export type NotificationSinkSpec = Static<typeof NotificationSinkSpecSchema>;

export const NotificationSinkStatusSchema = Type.Object({ ...commonStatus });
export type NotificationSinkStatus = Static<typeof NotificationSinkStatusSchema>;

export const NotificationRouterSpecSchema = Type.Object({
  name: Type.Optional(
    Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'The router name on the server; default metadata.name.' }),
  ),
  events: Type.Optional(
    Type.Array(
      markUnsupported(Type.String({ minLength: 1 }), `Gantry's fleet sends only ${ROUTABLE_EVENTS.join(', ')}`, {
        blocks: false,
        unless: ROUTABLE_EVENTS,
      }),
      { description: `The fleet events routed (Plural names): ${ROUTABLE_EVENTS.join(', ')}; default *.` },
    ),
  ),
  filters: Type.Optional(
    Type.Array(
      Type.Object({
        regex: Type.Optional(
          Type.String({ description: 'Over <cluster>/<service>, <cluster> for cluster events, pipeline/<name> for pipeline events.' }),
        ),
        clusterRef: Type.Optional(Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'Only events of this Cluster.' })),
        serviceRef: Type.Optional(
          Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'Only events of this ServiceDeployment.' }),
        ),
        pipelineRef: Type.Optional(
          Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'Only events of this Pipeline (with no other field).' }),
        ),
      }),
      { description: 'None: every event; else an event passes when any filter matches it.' },
    ),
  ),
  sinks: Type.Optional(
    Type.Array(Type.Object({ ...ObjectReferenceSchema.properties }), { description: 'NotificationSink resources (at least one).' }),
  ),
  reconciliation: Type.Optional(Reconciliation('the server router: interval is how often the operator checks it again')),
});
export type NotificationRouterSpec = Static<typeof NotificationRouterSpecSchema>;

export const NotificationRouterStatusSchema = Type.Object({ ...commonStatus });
export type NotificationRouterStatus = Static<typeof NotificationRouterStatusSchema>;

const Recurrences = (description: string) =>
  Type.Array(
    Type.Object({
      cron: Type.String({ description: 'When it starts: a cron expression (5 fields, or 6 with seconds).' }),
      duration: Type.String({ description: 'How long it lasts, e.g. 8h or 90m.' }),
    }),
    { description },
  );

const ContainerResourceList = Type.Object({ cpu: Type.Optional(Type.String()), memory: Type.Optional(Type.String()) });
const GateJobResourcesSchema = Type.Object(
  { requests: Type.Optional(ContainerResourceList), limits: Type.Optional(ContainerResourceList) },
  { description: 'Resources of every container that gives none.' },
);
export type GateJobResources = Static<typeof GateJobResourcesSchema>;

const PipelineGateSchema = Type.Object({
  name: Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'Unique on its edge.' }),
  type: Type.Union([Type.Literal('APPROVAL'), Type.Literal('WINDOW'), Type.Literal('JOB'), Type.Literal('HEALTH')], {
    description:
      'APPROVAL: approved by people; WINDOW: open inside its windows; JOB: a Job run by clusterRef’s agent; HEALTH: the source stage stays healthy for a soak (Gantry’s).',
  }),
  clusterRef: Type.Optional(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'JOB: the Cluster resource whose agent runs the Job.' }),
  ),
  timeout: Type.Optional(
    Type.String({
      description: "Close the gate, saying so, when it is still pending this long after the source stage settled (Gantry's), e.g. 2h.",
    }),
  ),
  spec: Type.Optional(
    Type.Object(
      {
        job: Type.Optional(
          Type.Object(
            {
              namespace: Name('Namespace of the Job.'),
              raw: Type.Optional(
                Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true, description: 'A batch/v1 JobSpec; or containers.' }),
              ),
              containers: Type.Optional(
                Type.Array(Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true }), {
                  description:
                    "Plural's containers ({image, args, env: [{name, value}], envFrom: [{secret, configMap}], resources}), named gate-0, gate-1, …; or corev1.Containers (with a name).",
                }),
              ),
              labels: Type.Optional(Type.Record(Type.String(), Type.String())),
              annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
              nodeSelector: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "The Job's Pod's node selector." })),
              tolerations: Type.Optional(
                Type.Array(
                  Type.Object({
                    key: Type.Optional(Type.String()),
                    operator: Type.Optional(Type.String()),
                    value: Type.Optional(Type.String()),
                    effect: Type.Optional(Type.String()),
                    tolerationSeconds: Type.Optional(Type.Integer()),
                  }),
                  { description: "The Job's Pod's tolerations (corev1.Toleration)." },
                ),
              ),
              serviceAccount: Type.Optional(Type.String()),
              resources: Type.Optional(GateJobResourcesSchema),
            },
            { description: "The JOB gate's Job (Plural's gate job spec)." },
          ),
        ),
        window: Type.Optional(
          Type.Object(
            {
              timeZone: Type.Optional(Type.String({ description: 'IANA time zone of the cron expressions; default UTC.' })),
              windows: Recurrences('When the gate is open.'),
              blackouts: Type.Optional(Recurrences('When it is closed, windows or not.')),
            },
            { description: "The WINDOW gate's windows (Gantry's; Plural's WINDOW gate has none)." },
          ),
        ),
        health: Type.Optional(
          Type.Object(
            {
              soak: Type.String({ description: 'How long the source stage stays healthy, e.g. 5m; 0 checks once.' }),
              interval: Type.Optional(Type.String({ description: 'Between checks during the soak; default 15s.' })),
              prometheus: Type.Optional(
                Type.Object(
                  {
                    url: Type.String({ description: 'A Prometheus-compatible HTTP API.' }),
                    query: Type.String({ description: 'PromQL; holds when its result is non-empty with no 0 or NaN sample.' }),
                  },
                  { additionalProperties: false },
                ),
              ),
            },
            { additionalProperties: false, description: "The HEALTH gate's soak and optional query (Gantry's)." },
          ),
        ),
      },
      { description: 'How the gate decides.' },
    ),
  ),
});

const PipelineServiceRef = (description: string) =>
  Type.Object({ ...ObjectReferenceSchema.properties }, { description: `${description} (a ServiceDeployment resource).` });

export const PipelineSpecSchema = Type.Object({
  name: Type.Optional(
    Type.String({
      pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$',
      description: 'The pipeline name on the server; default metadata.name.',
    }),
  ),
  stages: Type.Array(
    Type.Object({
      name: Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$' }),
      services: Type.Array(
        Type.Object({
          serviceRef: PipelineServiceRef('The service of this stage'),
          criteria: Type.Optional(
            Type.Object(
              {
                serviceRef: Type.Optional(PipelineServiceRef('The service of an upstream stage it is promoted from')),
                secrets: Type.Optional(Type.Array(Type.String(), { description: 'Configuration keys copied from that service.' })),
                prAutomationRef: unsupported(
                  Type.Object(
                    { ...ObjectReferenceSchema.properties },
                    { description: 'A PrAutomation promoting by pull request (Plural).' },
                  ),
                  'Gantry promotes by revision, not by pull request: it has no PrAutomations',
                  BLOCKS,
                ),
                repository: unsupported(
                  Type.String({ description: "The repository slug the PrAutomation's pull request is made on (Plural)." }),
                  'Gantry has no PrAutomations',
                  REPORTED,
                ),
              },
              { description: 'What a promotion into this service takes.' },
            ),
          ),
        }),
        { minItems: 1 },
      ),
      rollout: Type.Optional(
        Type.Object(RolloutSpecSchema.properties, {
          additionalProperties: false,
          description:
            "Gantry extension: the revisions a promotion brings the stage's services reach them wave by wave (docs/rollouts.md); absent: all at once.",
        }),
      ),
    }),
    { minItems: 1, description: "The pipeline's stages (Plural's Pipeline)." },
  ),
  edges: Type.Optional(
    Type.Array(
      Type.Object({
        from: Type.Optional(Type.String({ description: 'The stage promoted from; or fromId.' })),
        to: Type.Optional(Type.String({ description: 'The stage promoted into; or toId.' })),
        fromId: Type.Optional(Type.String({ description: 'The stage promoted from, by name (Plural also takes a console id).' })),
        toId: Type.Optional(Type.String({ description: 'The stage promoted into, by name (Plural also takes a console id).' })),
        gates: Type.Optional(Type.Array(PipelineGateSchema)),
      }),
    ),
  ),
  flowRef: unsupported(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'A Flow the pipeline belongs to (Plural).' }),
    "Gantry has no Flows (Plural's grouping of services, pipelines and previews for its UI)",
    REPORTED,
  ),
  projectRef: unsupported(
    Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'Project (Plural).' }),
    NO_PROJECTS,
    REPORTED,
  ),
  bindings: Bindings('the pipeline (its gates)', 'approver'),
});
export type PipelineSpec = Static<typeof PipelineSpecSchema>;

export const PipelineStatusSchema = Type.Object({
  ...commonStatus,
  gates: Type.Optional(
    Type.Array(
      Type.Object({
        edge: Type.String(),
        name: Type.String(),
        state: Type.String({ description: 'PENDING, OPEN or CLOSED, for the source stage’s current context.' }),
        reason: Type.Optional(Type.String()),
      }),
      { description: 'Each gate as the server has it.' },
    ),
  ),
  waitingFor: Type.Optional(
    Type.Array(Type.Object({ edge: Type.String(), reason: Type.String() }), {
      description: "What each edge waits for before it promotes its source stage's current context.",
    }),
  ),
});
export type PipelineStatus = Static<typeof PipelineStatusSchema>;

/** A fleet resource as the operator reads it (spec unchecked until validated against its schema). */
export interface FleetResource<Spec, Status> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta & { name: string };
  spec: Spec;
  status?: Status;
}
export type GitRepositoryResource = FleetResource<GitRepositorySpec, GitRepositoryStatus>;
export type ClusterResource = FleetResource<ClusterSpec, ClusterStatus> & { metadata: NamespacedObjectMeta };
export type ServiceDeploymentResource = FleetResource<ServiceDeploymentSpec, ServiceDeploymentStatus> & { metadata: NamespacedObjectMeta };
export type ServiceContextResource = FleetResource<ServiceContextSpec, ServiceContextStatus> & { metadata: NamespacedObjectMeta };
export type GlobalServiceResource = FleetResource<GlobalServiceSpec, GlobalServiceStatus> & { metadata: NamespacedObjectMeta };
