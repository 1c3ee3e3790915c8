/**
 * The API's request and response shapes (TypeBox): fastify validates requests against them and
 * /v1/openapi.json is generated from them, so the CLI, the agent and the UI read one contract.
 */
import { Type, type Static } from 'typebox';

/** A DNS label, as cluster and service names become parts of Kubernetes names and kubeconfig contexts. */
const Name = Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'lower-case letters, digits and -' });
const Tags = Type.Record(Type.String({ minLength: 1, maxLength: 63 }), Type.String({ maxLength: 63 }), {
  description: 'String tags, e.g. {"tier": "web"}; global services select clusters by them.',
});
const Time = Type.String({ description: 'ISO-8601 UTC time' });

export const ErrorSchema = Type.Object({
  message: Type.String(),
  field: Type.Optional(Type.String({ description: 'the offending field, e.g. body.name, for bad input' })),
});

/** The error answers every route documents (see errors.ts). */
export const ErrorResponses = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

export const ClusterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  handle: Type.String({ description: "Stable identity across renames (Plural's handle)." }),
  tags: Tags,
  distro: Type.Union([Type.String(), Type.Null()]),
  kubernetesVersion: Type.Union([Type.String(), Type.Null()], { description: 'as the agent last reported it' }),
  agentVersion: Type.Union([Type.String(), Type.Null()]),
  pingedAt: Type.Union([Time, Type.Null()]),
  health: Type.Union([Type.Literal('HEALTHY'), Type.Literal('UNHEALTHY'), Type.Literal('UNKNOWN')], {
    description: 'HEALTHY when the agent pinged in the last 5 minutes, UNKNOWN before its first ping',
  }),
  createdAt: Time,
});

export const NewClusterSchema = Type.Object(
  {
    name: Name,
    handle: Type.Optional(Name),
    tags: Type.Optional(Tags),
    distro: Type.Optional(Type.String({ maxLength: 63 })),
  },
  { additionalProperties: false },
);
export type NewClusterBody = Static<typeof NewClusterSchema>;

export const CreatedClusterSchema = Type.Object({
  cluster: ClusterSchema,
  deployToken: Type.String({ description: "The cluster's agent token; shown only here." }),
});

export const DeployTokenSchema = Type.Object({ deployToken: Type.String({ description: 'Shown only here.' }) });

export const RotateTokenSchema = Type.Object(
  { revokeOthers: Type.Optional(Type.Boolean({ description: 'Revoke every earlier token of the cluster at once (default false).' })) },
  { additionalProperties: false },
);

export const TagsUpdateSchema = Type.Object({ tags: Tags }, { additionalProperties: false });

export const ClusterNameParams = Type.Object({ name: Type.String() });

export const PingSchema = Type.Object(
  {
    kubernetesVersion: Type.String({ minLength: 1, maxLength: 64 }),
    agentVersion: Type.String({ minLength: 1, maxLength: 64 }),
    distro: Type.Optional(Type.String({ maxLength: 63 })),
  },
  { additionalProperties: false },
);

const GitCredentialsSchema = Type.Object(
  {
    username: Type.Optional(Type.String()),
    password: Type.Optional(Type.String()),
    identity: Type.Optional(Type.String({ description: 'SSH private key (PEM); needs known_hosts' })),
    known_hosts: Type.Optional(Type.String({ description: 'pinned SSH host keys, in known_hosts format' })),
    caFile: Type.Optional(Type.String({ description: 'PEM of a private CA for HTTPS' })),
  },
  { additionalProperties: false, description: 'The keys of a Kluctl git credentials Secret; stored encrypted, never returned.' },
);

export const NewRepositorySchema = Type.Object(
  {
    url: Type.String({
      pattern: '^((https?|ssh|git|file)://.+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:.+)$',
      description: 'https://, ssh://, git@host:path or file:// URL of the repository',
    }),
    credentials: Type.Optional(GitCredentialsSchema),
  },
  { additionalProperties: false },
);
export type NewRepositoryBody = Static<typeof NewRepositorySchema>;

export const RepositorySchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  auth: Type.Union([Type.Literal('none'), Type.Literal('basic'), Type.Literal('ssh')]),
  health: Type.Union([Type.Literal('PULLABLE'), Type.Literal('FAILED'), Type.Null()], {
    description: 'of the last fetch; null before the first',
  }),
  lastError: Type.Union([Type.String(), Type.Null()]),
  pulledAt: Type.Union([Time, Type.Null()]),
  createdAt: Time,
});

export const ReplicaSchema = Type.Object({
  id: Type.String(),
  url: Type.String({ description: 'where the replica listens' }),
  startedAt: Time,
  heartbeatAt: Time,
  repositories: Type.Array(Type.String(), { description: 'URLs of the git repositories this replica fetches on the interval' }),
});

export const RepositoryParams = Type.Object({ id: Type.String({ description: 'the id, or the URL (URL-encoded)' }) });

export const RendererSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('auto'), Type.Literal('kluctl'), Type.Literal('kustomize'), Type.Literal('raw'), Type.Literal('helm')], {
      description:
        'auto: a Kluctl project when the folder has .kluctl.yaml or deployment.yaml, else kustomize with kustomization.yaml, else raw YAML; ' +
        'helm: the service has a helm source (the default then)',
    }),
    target: Type.Optional(Type.String({ description: 'kluctl: the target to deploy' })),
    args: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'kluctl: args, as -a name=value' })),
  },
  { additionalProperties: false },
);

const GitSourceSchema = Type.Object(
  {
    ref: Type.String({ minLength: 1, description: 'branch, tag or commit sha' }),
    folder: Type.String({ description: 'folder of the repository holding the service, "" for the root' }),
  },
  { additionalProperties: false },
);

/** A Helm chart as a service's source, as Plural's ServiceDeployment helm spec. */
const HelmSourceSchema = Type.Object(
  {
    url: Type.String({
      pattern: '^(https?|oci)://.+',
      description: 'a Helm repository (https://; http:// for local ones) or an OCI registry path (oci://host/path, the chart below it)',
    }),
    chart: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$', description: 'the chart name' }),
    version: Type.String({
      minLength: 1,
      description: 'an exact version, or a semver range (^1.2, ~1.2.3, >=1 <2) resolved to the newest matching version',
    }),
    values: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'values, merged over valuesFiles' })),
    valuesFiles: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), { description: 'values files in the git folder, merged in order; needs git' }),
    ),
    release: Type.Optional(Name),
  },
  { additionalProperties: false },
);

const SecretValues = Type.Record(Type.String(), Type.Unknown(), {
  description:
    "Helm values that are secrets (from a Secret: Plural's valuesFrom), merged over the chart's other values by the agent; stored encrypted, never returned (only their top-level keys); {} removes them",
});

const Configuration = Type.Record(Type.String({ minLength: 1 }), Type.String(), {
  description: 'Values handed to the renderer (Kluctl args, templates); stored encrypted, given in clear only to the agent.',
});

/** Context names are used in Liquid as `contexts.<name>`, so they keep to letters, digits, - and _. */
const ContextName = Type.String({
  pattern: '^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$',
  description: 'lower-case letters, digits, - and _',
});

const ContextNames = Type.Array(ContextName, {
  uniqueItems: true,
  maxItems: 50,
  description: 'service contexts (gantry context set) bound into Liquid templates as contexts.<name>',
});

/** RFC 6901: empty (the whole object) is refused, as a normalizer of everything would apply nothing. */
const JsonPointer = Type.String({ pattern: '^(/([^~/]|~[01])*)+$', description: 'a JSON pointer, e.g. /spec/replicas' });

const DiffNormalizerSchema = Type.Object(
  {
    kind: Type.Optional(Type.String({ minLength: 1 })),
    name: Type.Optional(Type.String({ minLength: 1 })),
    namespace: Type.Optional(Type.String({ minLength: 1 })),
    backfill: Type.Optional(Type.Boolean({ description: 'keep the live values rather than leaving the fields out' })),
    jsonPointers: Type.Array(JsonPointer, { minItems: 1 }),
  },
  {
    additionalProperties: false,
    description: "fields of the matching objects (kind, name, namespace; absent: any) left to the cluster (Plural's diffNormalizers)",
  },
);

export const SyncConfigSchema = Type.Object(
  {
    createNamespace: Type.Optional(Type.Boolean({ description: "make the service's namespace when missing (default true)" })),
    enforceNamespace: Type.Optional(
      Type.Boolean({ description: "every namespaced object goes into the service's namespace (default false)" }),
    ),
    namespaceMetadata: Type.Optional(
      Type.Object(
        {
          labels: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
          annotations: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
        },
        { additionalProperties: false, description: "labels and annotations of the service's namespace" },
      ),
    ),
    diffNormalizers: Type.Optional(Type.Array(DiffNormalizerSchema, { maxItems: 100 })),
  },
  { additionalProperties: false, description: "how the agent applies (Plural's syncConfig)" },
);

/**
 * What a service runs: its name, namespace and source (a global service's template is just this). The source is
 * `repository` + `git`, or `helm`, or both when helm.valuesFiles come from git (Plural's helm+git services).
 */
const ServiceSourceFields = {
  name: Name,
  namespace: Name,
  repository: Type.Optional(Type.String({ minLength: 1, description: 'repository id or URL; with git' })),
  git: Type.Optional(GitSourceSchema),
  helm: Type.Optional(HelmSourceSchema),
  renderer: Type.Optional(RendererSchema),
  configuration: Type.Optional(Configuration),
  contexts: Type.Optional(ContextNames),
  syncConfig: Type.Optional(SyncConfigSchema),
  templated: Type.Optional(
    Type.Boolean({ description: 'render *.liquid files with Liquid (default true, as Plural); false applies the folder as it is' }),
  ),
};

export const NewServiceSchema = Type.Object(
  {
    ...ServiceSourceFields,
    secretValues: Type.Optional(SecretValues),
    dependencies: Type.Optional(Type.Array(Name, { description: 'services of the same cluster that must be healthy first' })),
    protect: Type.Optional(Type.Boolean({ description: 'refuse deletion' })),
  },
  { additionalProperties: false },
);
export type NewServiceBody = Static<typeof NewServiceSchema>;

export const ServiceUpdateSchema = Type.Object(
  {
    namespace: Type.Optional(Name),
    repository: Type.Optional(Type.String({ minLength: 1 })),
    git: Type.Optional(
      Type.Union(
        [
          Type.Object(
            { ref: Type.Optional(Type.String({ minLength: 1 })), folder: Type.Optional(Type.String()) },
            { additionalProperties: false },
          ),
          Type.Null(),
        ],
        { description: 'merged into the current git source; null drops git (and the repository)' },
      ),
    ),
    helm: Type.Optional(
      Type.Union([Type.Partial(HelmSourceSchema, { additionalProperties: false }), Type.Null()], {
        description: 'merged into the current helm source (values replace the old ones); null drops helm',
      }),
    ),
    renderer: Type.Optional(RendererSchema),
    syncConfig: Type.Optional(Type.Union([SyncConfigSchema, Type.Null()], { description: 'replaces the current one; null: the defaults' })),
    templated: Type.Optional(Type.Boolean()),
    configuration: Type.Optional(Configuration),
    secretValues: Type.Optional(SecretValues),
    contexts: Type.Optional(ContextNames),
    dependencies: Type.Optional(Type.Array(Name)),
    protect: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ServiceUpdateBody = Static<typeof ServiceUpdateSchema>;

const ComponentSchema = Type.Object({
  group: Type.String(),
  version: Type.String(),
  kind: Type.String(),
  namespace: Type.String(),
  name: Type.String(),
  state: Type.Union([Type.Literal('RUNNING'), Type.Literal('PENDING'), Type.Literal('FAILED'), Type.Literal('PAUSED')]),
  synced: Type.Boolean(),
});

const ServiceErrorSchema = Type.Object({ source: Type.String(), message: Type.String() });

export const RevisionSchema = Type.Object({
  id: Type.String(),
  number: Type.Integer(),
  commit: Type.Union([Type.String(), Type.Null()]),
  digest: Type.Union([Type.String(), Type.Null()], { description: 'sha256 of the source tarball' }),
  chartVersion: Type.Union([Type.String(), Type.Null()], { description: "the chart version a helm source's version resolved to" }),
  namespace: Type.String(),
  git: Type.Union([GitSourceSchema, Type.Null()]),
  helm: Type.Union([HelmSourceSchema, Type.Null()]),
  renderer: RendererSchema,
  contexts: Type.Array(Type.String()),
  message: Type.Union([Type.String(), Type.Null()]),
  createdBy: Type.Union([Type.String(), Type.Null()]),
  createdAt: Time,
});

export const ServiceSchema = Type.Object({
  id: Type.String(),
  cluster: Type.String(),
  name: Type.String(),
  namespace: Type.String(),
  repository: Type.Union([Type.Object({ id: Type.String(), url: Type.String() }), Type.Null()]),
  syncConfig: Type.Optional(SyncConfigSchema),
  templated: Type.Boolean({ description: 'whether *.liquid files are rendered' }),
  git: Type.Union([GitSourceSchema, Type.Null()]),
  helm: Type.Union([HelmSourceSchema, Type.Null()]),
  renderer: RendererSchema,
  configuration: Type.Array(Type.String(), { description: 'configuration keys; values are never returned' }),
  secretValues: Type.Array(Type.String(), { description: 'top-level keys of the secret helm values; values are never returned' }),
  contexts: Type.Array(Type.String(), { description: 'bound service contexts' }),
  dependencies: Type.Array(Type.String()),
  protect: Type.Boolean(),
  status: Type.Union([Type.Literal('stale'), Type.Literal('synced'), Type.Literal('healthy'), Type.Literal('failed')]),
  errors: Type.Array(ServiceErrorSchema),
  revision: RevisionSchema,
  appliedRevision: Type.Union([Type.Integer(), Type.Null()], { description: 'number of the revision the agent last applied' }),
  components: Type.Array(ComponentSchema),
  deleting: Type.Boolean(),
  createdAt: Time,
});

export const ServiceParams = Type.Object({ cluster: Type.String(), name: Type.String() });
export const ClusterParams = Type.Object({ cluster: Type.String() });
export const RevisionDiffQuery = Type.Object({
  from: Type.String({ pattern: '^[1-9][0-9]*$', description: 'the older revision number' }),
  to: Type.String({ pattern: '^[1-9][0-9]*$', description: 'the newer revision number' }),
});
export const RevisionDiffSchema = Type.Object({
  from: Type.Integer(),
  to: Type.Integer(),
  files: Type.Array(
    Type.Object({
      path: Type.String(),
      change: Type.Union([Type.Literal('added'), Type.Literal('removed'), Type.Literal('changed')]),
      patch: Type.String({ description: 'unified diff, empty for files over 512 KiB' }),
    }),
  ),
});
export const RollbackSchema = Type.Object({ revision: Type.Integer({ minimum: 1 }) }, { additionalProperties: false });
export const DeleteServiceQuery = Type.Object({
  // A string: query values are not coerced (see app.ts), and "true"/"false" is what a URL carries.
  detach: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'forget the service but leave its objects in the cluster' }),
  ),
});

const ContextConfiguration = Type.Record(Type.String({ minLength: 1 }), Type.Unknown(), {
  description: 'any JSON object; stored as is (not secret: readers see it)',
});

/**
 * The cluster as an agent's templates see it (`cluster` in Liquid), with Plural's names for the fields it binds;
 * version is the Kubernetes version the agent last reported (Plural's currentVersion).
 */
const AgentClusterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  handle: Type.String(),
  tags: Type.Record(Type.String(), Type.String()),
  distro: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.String(), Type.Null()]),
});

/** What an agent gets for each service of its cluster. */
export const AgentServiceSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  namespace: Type.String(),
  cluster: AgentClusterSchema,
  revision: Type.Object({
    id: Type.String(),
    number: Type.Integer(),
    commit: Type.Union([Type.String(), Type.Null()]),
    digest: Type.String(),
  }),
  folder: Type.String(),
  renderer: RendererSchema,
  configuration: Type.Record(Type.String(), Type.String()),
  /** Helm values merged over the wrapper project's helm-values.yaml. */
  secretValues: Type.Record(Type.String(), Type.Unknown()),
  /** The bound contexts' configuration by name; a context deleted since the revision was made is absent. */
  contexts: Type.Record(Type.String(), ContextConfiguration),
  /** Dependencies not yet healthy on the cluster; the agent applies nothing until this is empty. */
  waitingFor: Type.Array(Type.String()),
  syncConfig: Type.Optional(SyncConfigSchema),
  /** Whether its `*.liquid` files are rendered (Plural's templated). */
  templated: Type.Boolean(),
  deleting: Type.Boolean(),
});

export const ReportSchema = Type.Object(
  {
    revisionId: Type.String(),
    components: Type.Array(ComponentSchema, { maxItems: 10_000 }),
    errors: Type.Array(ServiceErrorSchema, { maxItems: 100 }),
  },
  { additionalProperties: false },
);

export const ServiceIdParams = Type.Object({ id: Type.String() });
export const TarballQuery = Type.Object({ digest: Type.String({ pattern: '^[0-9a-f]{64}$' }) });

const TemplateSchema = Type.Object(
  { ...ServiceSourceFields, secretValues: Type.Optional(SecretValues) },
  {
    additionalProperties: false,
    description: "what each selected cluster's copy of the service is made from",
  },
);

export const NewGlobalServiceSchema = Type.Object(
  {
    name: Name,
    tags: Type.Record(Type.String({ minLength: 1 }), Type.String(), {
      description: 'clusters whose tags include all of these get the service',
    }),
    distro: Type.Optional(Type.String({ maxLength: 63 })),
    template: TemplateSchema,
  },
  { additionalProperties: false },
);
export type NewGlobalServiceBody = Static<typeof NewGlobalServiceSchema>;

export const GlobalServiceUpdateSchema = Type.Object(
  {
    tags: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())),
    distro: Type.Optional(Type.Union([Type.String({ maxLength: 63 }), Type.Null()])),
    template: Type.Optional(TemplateSchema),
  },
  { additionalProperties: false },
);
export type GlobalServiceUpdateBody = Static<typeof GlobalServiceUpdateSchema>;

export const GlobalServiceSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  tags: Type.Record(Type.String(), Type.String()),
  distro: Type.Union([Type.String(), Type.Null()]),
  template: Type.Object({
    name: Type.String(),
    namespace: Type.String(),
    repository: Type.Union([Type.String({ description: 'repository id' }), Type.Null()]),
    git: Type.Union([GitSourceSchema, Type.Null()]),
    helm: Type.Union([HelmSourceSchema, Type.Null()]),
    renderer: RendererSchema,
    configuration: Type.Array(Type.String(), { description: 'configuration keys; values are never returned' }),
    secretValues: Type.Array(Type.String(), { description: 'top-level keys of the secret helm values; values are never returned' }),
    contexts: Type.Array(Type.String()),
  }),
  services: Type.Array(Type.Object({ cluster: Type.String(), status: Type.String(), deleting: Type.Boolean() })),
  createdAt: Time,
});

const TrueOrFalse = Type.Union([Type.Literal('true'), Type.Literal('false')]);
export const ConfirmQuery = Type.Object({
  confirm: Type.Optional(TrueOrFalse),
});
export const DeleteGlobalServiceQuery = Type.Object({
  confirm: Type.Optional(TrueOrFalse),
  detach: Type.Optional(TrueOrFalse),
});
export const NameParams = Type.Object({ name: Type.String() });

export const ContextParams = Type.Object({ name: ContextName });

export const ContextUpsertSchema = Type.Object({ configuration: ContextConfiguration }, { additionalProperties: false });
export type ContextUpsertBody = Static<typeof ContextUpsertSchema>;

export const ServiceContextSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  configuration: ContextConfiguration,
  boundBy: Type.Array(Type.String(), { description: 'services (cluster/name) and global services binding the context' }),
  createdAt: Time,
  updatedAt: Time,
});

export const SinkUpsertSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('slack'), Type.Literal('webhook')], {
      description: 'Slack incoming webhook, or a generic JSON webhook',
    }),
    url: Type.String({ pattern: '^https?://.+', description: 'where messages are posted; sealed, never returned' }),
    hmacKey: Type.Optional(Type.String({ minLength: 16, description: 'webhook: signs the body (X-Signature: sha256=<hex>); sealed' })),
  },
  { additionalProperties: false },
);
export type SinkUpsertBody = Static<typeof SinkUpsertSchema>;

export const SinkSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.String(),
  createdAt: Time,
  updatedAt: Time,
});

const RouterFilterSchema = Type.Object(
  {
    clusterId: Type.Optional(Type.String({ minLength: 1 })),
    serviceId: Type.Optional(Type.String({ minLength: 1 })),
    regex: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'over <cluster>/<service>, or <cluster> for cluster events' }),
    ),
  },
  { additionalProperties: false },
);

export const RouterUpsertSchema = Type.Object(
  {
    events: Type.Array(
      Type.Union([
        Type.Literal('service.update'),
        Type.Literal('cluster.create'),
        Type.Literal('cluster.delete'),
        Type.Literal('pipeline.update'),
        Type.Literal('*'),
      ]),
      { minItems: 1, uniqueItems: true },
    ),
    filters: Type.Optional(Type.Array(RouterFilterSchema, { maxItems: 50, description: 'none: every event; else any that matches' })),
    sinks: Type.Array(Name, { minItems: 1, uniqueItems: true, description: 'names of notification sinks' }),
  },
  { additionalProperties: false },
);
export type RouterUpsertBody = Static<typeof RouterUpsertSchema>;

export const RouterSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  events: Type.Array(Type.String()),
  filters: Type.Array(RouterFilterSchema),
  sinks: Type.Array(Type.String()),
  createdAt: Time,
  updatedAt: Time,
});

export const HelmRepositoryUpsertSchema = Type.Object(
  {
    url: Type.String({ pattern: '^https?://.+', description: 'the Helm repository (its index.yaml is below it)' }),
    username: Type.Optional(Type.String({ minLength: 1, description: 'basic auth; with password' })),
    password: Type.Optional(Type.String({ minLength: 1, description: 'sealed, never returned' })),
  },
  { additionalProperties: false },
);
export type HelmRepositoryUpsertBody = Static<typeof HelmRepositoryUpsertSchema>;

export const HelmRepositorySchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  authenticated: Type.Boolean({ description: 'whether the server has credentials for it' }),
  createdAt: Time,
  updatedAt: Time,
});

const StageName = Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$', description: 'lower-case letters, digits and -' });
const ServiceByName = {
  cluster: Type.String({ minLength: 1, description: 'the cluster name' }),
  name: Type.String({ minLength: 1, description: 'the service name on that cluster' }),
};

const ApprovalGateSchema = Type.Object(
  { name: StageName, type: Type.Literal('APPROVAL', { description: 'opened or rejected by an admin or approver' }) },
  { additionalProperties: false },
);

const Recurrence = Type.Object(
  {
    cron: Type.String({ minLength: 1, description: 'when it starts: a cron expression (5 fields, or 6 with seconds)' }),
    duration: Type.String({ minLength: 1, description: 'how long it lasts, e.g. 8h or 90m' }),
  },
  { additionalProperties: false },
);

const WindowGateSchema = Type.Object(
  {
    name: StageName,
    type: Type.Literal('WINDOW', { description: 'open only inside a window and outside every blackout' }),
    window: Type.Object(
      {
        timeZone: Type.Optional(Type.String({ description: 'IANA time zone of the cron expressions; default UTC' })),
        windows: Type.Array(Recurrence, { minItems: 1 }),
        blackouts: Type.Optional(Type.Array(Recurrence)),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const JobGateSchema = Type.Object(
  {
    name: StageName,
    type: Type.Literal('JOB', { description: "a Kubernetes Job run by a cluster's agent: success opens the gate, failure closes it" }),
    job: Type.Object(
      {
        cluster: Type.String({ minLength: 1, description: 'the cluster whose agent runs the Job' }),
        namespace: Name,
        raw: Type.Optional(
          Type.Record(Type.String(), Type.Unknown(), { description: 'a batch/v1 JobSpec, as Plural takes it; or containers' }),
        ),
        containers: Type.Optional(
          Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1, description: "the Job's containers (corev1.Container)" }),
        ),
        labels: Type.Optional(Type.Record(Type.String(), Type.String())),
        annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
        serviceAccount: Type.Optional(Type.String({ minLength: 1 })),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const HealthGateSchema = Type.Object(
  {
    name: StageName,
    type: Type.Literal('HEALTH', { description: "the source stage's services stay healthy for the soak, the query holding" }),
    health: Type.Object(
      {
        soak: Type.String({ minLength: 1, description: 'how long, e.g. 5m; 0 checks once' }),
        interval: Type.Optional(Type.String({ minLength: 1, description: 'between checks during the soak; default 15s' })),
        prometheus: Type.Optional(
          Type.Object(
            {
              url: Type.String({ description: 'a Prometheus-compatible HTTP API, e.g. http://prometheus:9090' }),
              query: Type.String({ minLength: 1, description: 'PromQL; holds when its result is non-empty with no 0 or NaN sample' }),
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const PipelineUpsertSchema = Type.Object(
  {
    stages: Type.Array(
      Type.Object(
        {
          name: StageName,
          services: Type.Array(
            Type.Object(
              {
                ...ServiceByName,
                criteria: Type.Optional(
                  Type.Object(
                    {
                      ...ServiceByName,
                      secrets: Type.Optional(
                        Type.Array(Type.String({ minLength: 1 }), { description: 'configuration keys copied from that service' }),
                      ),
                    },
                    { additionalProperties: false, description: 'the service of an upstream stage this one is promoted from' },
                  ),
                ),
              },
              { additionalProperties: false },
            ),
            { minItems: 1 },
          ),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 50 },
    ),
    edges: Type.Array(
      Type.Object(
        {
          from: StageName,
          to: StageName,
          gates: Type.Optional(Type.Array(Type.Union([ApprovalGateSchema, WindowGateSchema, JobGateSchema, HealthGateSchema]))),
        },
        { additionalProperties: false },
      ),
      { maxItems: 200 },
    ),
  },
  { additionalProperties: false, description: "a release pipeline (Plural's Pipeline): stages of services, edges with gates" },
);
export type PipelineUpsertBody = Static<typeof PipelineUpsertSchema>;

const ContextSchema = Type.Object({
  id: Type.String(),
  createdAt: Time,
  services: Type.Array(
    Type.Object({
      ...ServiceByName,
      revision: Type.Integer(),
      commit: Type.Union([Type.String(), Type.Null()]),
      chartVersion: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
});

export const PipelineSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  stages: Type.Array(
    Type.Object({
      name: Type.String(),
      services: Type.Array(
        Type.Object({
          ...ServiceByName,
          status: Type.String({ description: 'the service status, or missing when it was deleted' }),
          revision: Type.Union([Type.Integer(), Type.Null()]),
          criteria: Type.Union([Type.Object({ ...ServiceByName, secrets: Type.Array(Type.String()) }), Type.Null()]),
        }),
      ),
      context: Type.Union([ContextSchema, Type.Null()], { description: 'the promotion context the stage is at' }),
    }),
  ),
  edges: Type.Array(
    Type.Object({
      from: Type.String(),
      to: Type.String(),
      gates: Type.Array(
        Type.Object({
          name: Type.String(),
          type: Type.String(),
          state: Type.String({ description: 'PENDING, OPEN or CLOSED, for the source stage context contextId' }),
          contextId: Type.Union([Type.String(), Type.Null()]),
          decidedBy: Type.Union([Type.String(), Type.Null()]),
          reason: Type.Union([Type.String(), Type.Null()], { description: "a WINDOW gate's window, a rejection's reason" }),
          forced: Type.Boolean(),
          updatedAt: Time,
        }),
      ),
      promoted: Type.Boolean({ description: "whether the source stage's current context went along this edge" }),
    }),
  ),
  createdAt: Time,
  updatedAt: Time,
});

export const PromotionSchema = Type.Object({
  id: Type.String(),
  from: Type.String(),
  to: Type.String(),
  contextId: Type.String(),
  services: Type.Array(
    Type.Object({
      ...ServiceByName,
      source: Type.String({ description: '<cluster>/<service> promoted from' }),
      commit: Type.Union([Type.String(), Type.Null()]),
      chartVersion: Type.Union([Type.String(), Type.Null()]),
      secrets: Type.Array(Type.String()),
      revision: Type.Integer(),
    }),
  ),
  gates: Type.Array(
    Type.Object({ name: Type.String(), type: Type.String(), decidedBy: Type.Union([Type.String(), Type.Null()]), forced: Type.Boolean() }),
  ),
  createdAt: Time,
});

export const PipelineParams = Type.Object({ name: Type.String() });
export const GateParams = Type.Object({
  name: Type.String(),
  from: Type.String(),
  to: Type.String(),
  gate: Type.String(),
  decision: Type.Union([Type.Literal('approve'), Type.Literal('reject'), Type.Literal('force')]),
});

/** A JOB gate an agent is to run: its Job's namespace, name and spec, for the context it runs for. */
export const AgentGateSchema = Type.Object({
  pipeline: Type.String(),
  from: Type.String(),
  to: Type.String(),
  gate: Type.String(),
  contextId: Type.String(),
  namespace: Type.String(),
  jobName: Type.String({ description: 'stable per gate and context, so a restarted agent finds its Job' }),
  spec: Type.Record(Type.String(), Type.Unknown(), { description: 'the batch/v1 JobSpec' }),
});

export const GateReportSchema = Type.Object(
  {
    pipeline: Type.String(),
    from: Type.String(),
    to: Type.String(),
    gate: Type.String(),
    contextId: Type.String(),
    state: Type.Union([Type.Literal('OPEN'), Type.Literal('CLOSED')], { description: 'OPEN: the Job succeeded; CLOSED: it failed' }),
    reason: Type.String({ maxLength: 4000, description: "the Job's condition, and the failing Pod's status" }),
  },
  { additionalProperties: false },
);

const RoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('writer'), Type.Literal('approver'), Type.Literal('reader')]);
const ScopeSchema = Type.Union(
  [
    Type.Literal('all'),
    Type.Object(
      {
        clusters: Type.Optional(Type.Array(Type.String())),
        clusterTags: Type.Optional(Type.Record(Type.String(), Type.String())),
        services: Type.Optional(Type.Array(Type.String())),
        pipelines: Type.Optional(Type.Array(Type.String())),
        repositories: Type.Optional(Type.Array(Type.String(), { description: 'git repository ids or URLs, Helm chart URLs' })),
      },
      { additionalProperties: false },
    ),
  ],
  {
    description:
      "'all', or the clusters (by name or tags), services (by name), pipelines (by name) and source repositories (by id or URL) a role covers",
  },
);
const GrantSchema = Type.Object({ role: RoleSchema, scope: ScopeSchema });
const UserName = Type.String({ pattern: '^[A-Za-z0-9._@-]{1,128}$', description: 'letters, digits, . _ @ -' });

export const LoginSchema = Type.Object({ username: Type.String(), password: Type.String() }, { additionalProperties: false });

export const IdentitySchema = Type.Object({
  kind: Type.Union([Type.Literal('user'), Type.Literal('token')]),
  name: Type.String(),
  groups: Type.Array(Type.String()),
  grants: Type.Array(GrantSchema),
});

export const AccessReviewSchema = Type.Object(
  {
    checks: Type.Array(
      Type.Object(
        {
          action: Type.Union([
            Type.Literal('read'),
            Type.Literal('write'),
            Type.Literal('approve'),
            Type.Literal('force'),
            Type.Literal('proxy'),
            Type.Literal('administer'),
          ]),
          cluster: Type.Optional(Type.String({ description: 'a cluster name' })),
          service: Type.Optional(Type.String({ description: "a service id (its cluster is the service's)" })),
          pipeline: Type.Optional(Type.String({ description: 'a pipeline name' })),
        },
        { additionalProperties: false },
      ),
      { maxItems: 500 },
    ),
  },
  { additionalProperties: false },
);
export const AccessReviewResultSchema = Type.Object({ allowed: Type.Array(Type.Boolean()) });

export const NewUserSchema = Type.Object(
  { name: UserName, password: Type.String({ minLength: 8 }), groups: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: false },
);
export const UserUpdateSchema = Type.Object(
  { password: Type.Optional(Type.String({ minLength: 8 })), groups: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: false },
);
export const UserSchema = Type.Object({ name: Type.String(), groups: Type.Array(Type.String()), createdAt: Time });

export const RoleBindingUpsertSchema = Type.Object(
  {
    role: RoleSchema,
    subjects: Type.Array(
      Type.Object(
        { kind: Type.Union([Type.Literal('user'), Type.Literal('group')]), name: Type.String() },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
    scope: ScopeSchema,
  },
  { additionalProperties: false },
);
export const RoleBindingSchema = Type.Object({
  name: Type.String(),
  role: RoleSchema,
  subjects: Type.Array(Type.Object({ kind: Type.String(), name: Type.String() })),
  scope: ScopeSchema,
  createdAt: Time,
  updatedAt: Time,
});

export const NewTokenSchema = Type.Object({ name: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false });
export const CreatedTokenSchema = Type.Object({ token: Type.String({ description: 'shown only now' }) });

export const AuditQuery = Type.Object({ limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })) });
export const AuditEventSchema = Type.Object({
  at: Time,
  actor: Type.String(),
  action: Type.String(),
  target: Type.String(),
  status: Type.Integer(),
});
