/**
 * The fleet's resources (deployments.gantry.dev/v1alpha1), the GitOps front end of `gantry server`: each is
 * reconciled by `gantry operator run` into the server's API. Field names and shapes are Plural's
 * (pluralsh/console go/controller/api/v1alpha1: gitrepository_types.go, cluster_types.go,
 * servicedeployment_types.go, globalservice_types.go, servicecontext_types.go), so a Plural manifest works after changing only its apiVersion; fields Gantry does
 * not act on yet are accepted and dropped by the API server's pruning, as any unknown field. One extension:
 * ServiceDeployment's `renderer` names Gantry's Kluctl renderer with target and args.
 *
 * These schemas are the single source of the CRDs' openAPIV3Schema (src/install/fleet-crds.ts) and of the types.
 */
import { Type, type Static } from 'typebox';
import type { NamespacedObjectMeta, ObjectMeta } from '../kube/object.ts';
import { RoutedEventSchema } from './events.ts';
import { Condition } from './kluctl-deployment.ts';
import { COMPONENT_STATES, DRIFT_STATES } from './services.ts';
import { RolloutSpecSchema } from './rollouts.ts';

export const FLEET_GROUP = 'deployments.gantry.dev';
export const FLEET_VERSION = 'v1alpha1';
export const FLEET_API_VERSION = `${FLEET_GROUP}/${FLEET_VERSION}`;
/** Held by resources whose server object the operator created, until that object is deleted (or detached). */
export const FLEET_FINALIZER = 'deployments.gantry.dev/finalizer';

/** Condition types every fleet resource carries, as Plural's do. */
export const CONDITIONS = { ready: 'Ready', synchronized: 'Synchronized', readonly: 'Readonly' } as const;

const Name = (description: string) => Type.String({ minLength: 1, description });

export const ObjectReferenceSchema = Type.Object(
  {
    apiVersion: Type.Optional(
      Type.String({ description: 'Of the referent; for a repositoryRef, source.toolkit.fluxcd.io/v1 names a Flux GitRepository.' }),
    ),
    kind: Type.Optional(Type.String({ description: 'Of the referent (Cluster, GitRepository).' })),
    name: Name('Name of the referent.'),
    namespace: Type.Optional(Type.String({ description: "Namespace of the referent; default the referring resource's." })),
  },
  { description: 'A reference to another resource, as corev1.ObjectReference.' },
);
export type ObjectReference = Static<typeof ObjectReferenceSchema>;

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
});
export type ClusterSpec = Static<typeof ClusterSpecSchema>;

export const ClusterStatusSchema = Type.Object({
  ...commonStatus,
  currentVersion: Type.Optional(Type.String({ description: 'Kubernetes version, as its agent reported it.' })),
  pingedAt: Type.Optional(Type.String({ description: 'Last ping of its agent.' })),
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

/** What a service runs (a ServiceDeployment without its cluster; a GlobalService's template, as Plural's ServiceTemplate). */
const ServiceTemplateFields = {
  name: Type.Optional(Type.String({ description: 'The service name on its cluster; default metadata.name.' })),
  namespace: Type.String({ minLength: 1, description: 'Namespace the service deploys into.' }),
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
      },
      { description: 'Where in the repository the service is.' },
    ),
  ),
  helm: Type.Optional(
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
        chart: Type.Optional(Type.String()),
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
            { name: Name('Name of the ConfigMap.'), key: Type.String({ description: 'Its key holding a YAML values file.' }) },
            { description: "A ConfigMap key holding values, merged under valuesFrom and `values` (Plural's valuesConfigMapRef)." },
          ),
        ),
        release: Type.Optional(Type.String({ description: 'Release name; default the service name.' })),
      },
      { description: 'A Helm chart as source (Plural helm spec).' },
    ),
  ),
  kustomize: Type.Optional(
    Type.Object(
      { path: Type.String({ description: 'Folder of the kustomization, below git.folder.' }) },
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

export const ServiceDeploymentSpecSchema = Type.Object({
  ...ServiceTemplateFields,
  clusterRef: Type.Object({ ...ObjectReferenceSchema.properties }, { description: 'The Cluster resource the service runs on.' }),
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
  configuration: Type.Unknown({
    'x-kubernetes-preserve-unknown-fields': true,
    description: 'Any JSON object, bound into the templates of services naming the context as contexts.<name> (not secret).',
  }),
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
  template: Type.Optional(ServiceTemplateSchema),
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

export const HelmRepositorySpecSchema = Type.Object({
  url: Type.String({
    pattern: '^https?://.+',
    description: 'The Helm repository (index.yaml below it); the server uses it for services whose helm.url is this URL.',
  }),
  provider: Type.Optional(Type.Literal('BASIC', { description: "How to authenticate (Plural's provider); BASIC only so far." })),
  auth: Type.Optional(
    Type.Object(
      {
        basic: Type.Optional(
          Type.Object({
            username: Type.String({ minLength: 1 }),
            passwordSecretRef: Type.Object(
              {
                name: Name('Name of the Secret.'),
                key: Type.Optional(Type.String({ description: 'Key of the password; default password.' })),
              },
              { description: 'The Secret holding the password (sent to the server, which seals it).' },
            ),
          }),
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
  type: Type.Union([Type.Literal('SLACK'), Type.Literal('WEBHOOK')], {
    description: 'A Slack incoming webhook, or a generic JSON webhook.',
  }),
  configuration: Type.Optional(
    Type.Object(
      {
        slack: Type.Optional(Type.Object({ url: Type.String({ description: 'The incoming webhook URL (Plural keeps it in the spec).' }) })),
        webhook: Type.Optional(Type.Object({ url: Type.String({ description: 'Where the JSON event is posted.' }) })),
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
});
export type NotificationSinkSpec = Static<typeof NotificationSinkSpecSchema>;

export const NotificationSinkStatusSchema = Type.Object({ ...commonStatus });
export type NotificationSinkStatus = Static<typeof NotificationSinkStatusSchema>;

export const NotificationRouterSpecSchema = Type.Object({
  name: Type.Optional(
    Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'The router name on the server; default metadata.name.' }),
  ),
  events: Type.Array(RoutedEventSchema, { minItems: 1, description: 'The fleet events routed (Plural names); * for all.' }),
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
      }),
      { description: 'None: every event; else an event passes when any filter matches it.' },
    ),
  ),
  sinks: Type.Array(Type.Object({ ...ObjectReferenceSchema.properties }), { minItems: 1, description: 'NotificationSink resources.' }),
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
                Type.Array(Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true }), { description: 'corev1.Containers.' }),
              ),
              labels: Type.Optional(Type.Record(Type.String(), Type.String())),
              annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
              serviceAccount: Type.Optional(Type.String()),
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
                serviceRef: PipelineServiceRef('The service of an upstream stage it is promoted from'),
                secrets: Type.Optional(Type.Array(Type.String(), { description: 'Configuration keys copied from that service.' })),
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
        from: Type.String({ description: 'The stage promoted from.' }),
        to: Type.String({ description: 'The stage promoted into.' }),
        gates: Type.Optional(Type.Array(PipelineGateSchema)),
      }),
    ),
  ),
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
