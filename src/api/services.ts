/**
 * Services (/v1/clusters/<cluster>/services): what a service runs (a git folder, a Helm chart, or both; the renderer;
 * configuration and secret values; the contexts it binds; how its agent applies it), its revisions and their diffs,
 * and the service as the API shows it with the status and objects its agent reported. The component states and
 * service statuses are defined here once, as a list and the schema and type that follow from it.
 */
import { Type, type Static } from 'typebox';
import { LiteralUnion, Name, Time } from './common.ts';
import { ContextName } from './contexts.ts';
import { DURATION_PATTERN } from '../duration.ts';

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

export const GitSourceSchema = Type.Object(
  {
    ref: Type.String({ minLength: 1, description: 'branch, tag or commit sha' }),
    folder: Type.String({ description: 'folder of the repository holding the service, "" for the root' }),
  },
  { additionalProperties: false },
);

/** A Helm chart as a service's source, as Plural's ServiceDeployment helm spec. */
export const HelmSourceSchema = Type.Object(
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
    ignoreHooks: Type.Optional(
      Type.Boolean({ description: "leave out the chart's hooks (helm template --no-hooks; Plural's ignoreHooks); default false" }),
    ),
    ignoreCrds: Type.Optional(
      Type.Boolean({ description: "leave out the chart's crds/ folder (--skip-crds; Plural's ignoreCrds); default false" }),
    ),
  },
  { additionalProperties: false },
);

export const SecretValues = Type.Record(Type.String(), Type.Unknown(), {
  description:
    "Helm values that are secrets (from a Secret: Plural's valuesFrom), merged over the chart's other values by the agent; stored encrypted, never returned (only their top-level keys); {} removes them",
});

const Configuration = Type.Record(Type.String({ minLength: 1 }), Type.String(), {
  description: 'Values handed to the renderer (Kluctl args, templates); stored encrypted, given in clear only to the agent.',
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

/** Plural's docsPath: a folder of the service's source holding its docs (Markdown), inside it. */
const DocsPath = Type.String({
  minLength: 1,
  maxLength: 256,
  pattern: '^(?!/)(?!(.*/)?[.][.](/|$)).+$',
  description:
    "a folder of the service's source (below git.folder) whose Markdown files are its docs (Plural's docsPath); no .. and not absolute",
});

/** A folder below the root of a service's combined source: relative, no `..`. */
const RELATIVE_PATH = '^(?!/)(?!(.*/)?[.][.](/|$)).+$';

/** One of a service's extra git sources (Plural's sources[]): a folder of a repository, packed at `path`. */
export const ExtraSourceSchema = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: RELATIVE_PATH,
      description:
        "the folder of the combined source it is packed at (the root holds the service's own git folder); no .. and not absolute",
    }),
    repository: Type.String({ minLength: 1, description: 'repository id or URL' }),
    git: GitSourceSchema,
  },
  { additionalProperties: false },
);

/** A folder of the combined source rendered on its own (Plural's renderers[]). */
export const PathRendererSchema = Type.Object(
  {
    path: Type.String({
      maxLength: 256,
      pattern: '^(?!/)(?!(.*/)?[.][.](/|$)).*$',
      description: 'a folder of the combined source, "" for the root; no .. and not absolute',
    }),
    kind: Type.Union([Type.Literal('auto'), Type.Literal('raw'), Type.Literal('kustomize'), Type.Literal('helm')], {
      description: 'helm: a chart in the folder (Chart.yaml); auto: helm with a Chart.yaml, kustomize with a kustomization, else raw YAML',
    }),
    helm: Type.Optional(
      Type.Object(
        {
          values: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'values, merged over valuesFiles' })),
          valuesFiles: Type.Optional(
            Type.Array(Type.String({ minLength: 1 }), { maxItems: 20, description: 'values files, relative to the chart folder' }),
          ),
          release: Type.Optional(Name),
        },
        { additionalProperties: false, description: "the chart's values and release name (default the service's name); kind helm or auto" },
      ),
    ),
  },
  { additionalProperties: false },
);

const ExtraSources = Type.Array(ExtraSourceSchema, {
  maxItems: 10,
  description: "more git folders packed into the service's source at their paths (Plural's sources); needs git",
});

const PathRenderers = Type.Array(PathRendererSchema, {
  minItems: 1,
  maxItems: 20,
  description:
    "folders of the source each rendered on its own, their objects applied together (Plural's renderers); instead of renderer; needs git",
});

/** Plural's service `version`: what its owners call this state of it; recorded on each revision. */
const ServiceVersion = Type.String({
  minLength: 1,
  maxLength: 128,
  description: "what the service's owners call its current state, e.g. 1.4.2 (Plural's version); recorded on each revision",
});

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
    selfHeal: Type.Optional(
      Type.Boolean({
        description:
          "repair drift (objects deleted or changed in the cluster) within seconds and on the periodic resync (default true, Argo CD's selfHeal); false: drift is only reported, until the next revision",
      }),
    ),
    resyncInterval: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description:
          "how often the agent applies the service again though nothing changed (Go duration, at least 1m; default the agent's --resync-interval); Plural's reconciliation.interval",
      }),
    ),
  },
  { additionalProperties: false, description: "how the agent applies (Plural's syncConfig)" },
);

/**
 * What a service runs: its name, namespace and source (a global service's template is just this). The source is
 * `repository` + `git`, or `helm`, or both when helm.valuesFiles come from git (Plural's helm+git services).
 */
export const ServiceSourceFields = {
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
  version: Type.Optional(ServiceVersion),
  docsPath: Type.Optional(DocsPath),
};

export const NewServiceSchema = Type.Object(
  {
    ...ServiceSourceFields,
    sources: Type.Optional(ExtraSources),
    renderers: Type.Optional(PathRenderers),
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
    version: Type.Optional(Type.Union([ServiceVersion, Type.Null()], { description: 'null drops it' })),
    docsPath: Type.Optional(Type.Union([DocsPath, Type.Null()], { description: 'null drops it' })),
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
    sources: Type.Optional(Type.Union([ExtraSources, Type.Null()], { description: 'replace the current ones; null drops them' })),
    renderers: Type.Optional(Type.Union([PathRenderers, Type.Null()], { description: 'replace the current ones; null drops them' })),
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

/** Plural's component states: RUNNING ready, PENDING not ready yet, FAILED failed, PAUSED paused. */
export const COMPONENT_STATES = ['RUNNING', 'PENDING', 'FAILED', 'PAUSED'] as const;
export const ComponentStateSchema = LiteralUnion(COMPONENT_STATES);
export type ComponentState = Static<typeof ComponentStateSchema>;

/**
 * How an object differs from what the agent applied: MISSING deleted, CHANGED edited (`fields`, by the field managers
 * that own them now), CONFLICT edited again and again after repairs, which stopped (no fight loop).
 */
export const DRIFT_STATES = ['MISSING', 'CHANGED', 'CONFLICT'] as const;
export const DriftStateSchema = LiteralUnion(DRIFT_STATES);

export const ComponentDriftSchema = Type.Object(
  {
    state: DriftStateSchema,
    fields: Type.Array(Type.String({ maxLength: 1000 }), {
      maxItems: 20,
      description: 'fields whose live value differs from the applied one, written as Kluctl writes paths (first 20)',
    }),
    managers: Type.Array(Type.String({ maxLength: 256 }), {
      maxItems: 20,
      description: "the live object's field managers that own those fields",
    }),
  },
  { additionalProperties: false },
);
export type ComponentDrift = Static<typeof ComponentDriftSchema>;

/** The longest component message an agent sends (a longer reason is cut). */
export const COMPONENT_MESSAGE_MAX = 1000;

/** One object of a service, as its agent reports it. */
export const ComponentSchema = Type.Object({
  group: Type.String(),
  version: Type.String(),
  kind: Type.String(),
  namespace: Type.String(),
  name: Type.String(),
  state: ComponentStateSchema,
  message: Type.Optional(
    Type.String({ maxLength: COMPONENT_MESSAGE_MAX, description: "why it is not RUNNING: its readiness rule's reason (src/health)" }),
  ),
  synced: Type.Boolean(),
  drift: Type.Optional(ComponentDriftSchema),
});

/**
 * A service's status, as Plural derives it from its agent's reports: stale while a newer revision than the applied
 * one is current or objects are out of sync, synced when applied but not every object is ready, healthy when every
 * object is, failed when one failed or the agent reported an error.
 */
export const SERVICE_STATUSES = ['stale', 'synced', 'healthy', 'failed'] as const;
export const ServiceStatusSchema = LiteralUnion(SERVICE_STATUSES);
export type ServiceStatus = Static<typeof ServiceStatusSchema>;

export const ServiceErrorSchema = Type.Object({ source: Type.String(), message: Type.String() });

const AgentServer = Type.String({ pattern: '^https?://\\S+$', maxLength: 2048, description: 'the server URL the agent dials' });
const AgentTokenSecret = Type.String({
  pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$',
  description: "namespace/name of the Secret holding its deploy token; the namespace is the Deployment's",
});

/**
 * How an agent runs when it is the install's Deployment (src/install/agent.ts), as it says in its ping: the server
 * URL it dials and its token Secret. The server renders the agent's own service (gantry-agent) with them; the agent
 * applies that service only while they are still its own, so a leaked deploy token cannot point it elsewhere.
 */
export const AgentDeploymentSchema = Type.Object({ server: AgentServer, tokenSecret: AgentTokenSecret }, { additionalProperties: false });
export type AgentDeployment = Static<typeof AgentDeploymentSchema>;

/** The source of a cluster's own agent service: its Deployment as the agent reported it, at the image the server chose. */
export const AgentSourceSchema = Type.Object({
  image: Type.String({
    description: "the image the server wants it to run: its --agent-image repository, tagged with the cluster's wanted version",
  }),
  server: AgentServer,
  tokenSecret: AgentTokenSecret,
});
export type AgentSource = Static<typeof AgentSourceSchema>;

export const RevisionSchema = Type.Object({
  id: Type.String(),
  number: Type.Integer(),
  commit: Type.Union([Type.String(), Type.Null()]),
  digest: Type.Union([Type.String(), Type.Null()], { description: 'sha256 of the source tarball' }),
  chartVersion: Type.Union([Type.String(), Type.Null()], { description: "the chart version a helm source's version resolved to" }),
  sourceCommits: Type.Optional(
    Type.Array(Type.String(), { description: "the commit each of the service's extra sources resolved to, in their order" }),
  ),
  namespace: Type.String(),
  git: Type.Union([GitSourceSchema, Type.Null()]),
  helm: Type.Union([HelmSourceSchema, Type.Null()]),
  /** Set on the revisions of the cluster's own agent (gantry-agent). */
  agent: Type.Optional(AgentSourceSchema),
  renderer: RendererSchema,
  contexts: Type.Array(Type.String()),
  version: Type.Union([Type.String(), Type.Null()], { description: "the service's version when the revision was made" }),
  message: Type.Union([Type.String(), Type.Null()]),
  createdBy: Type.Union([Type.String(), Type.Null()]),
  createdAt: Time,
  rejected: Type.Optional(
    Type.Object(
      { id: Type.String(), reason: Type.String(), by: Type.String(), at: Time },
      {
        description: 'set in revision lists when its content is rejected for the service: it never runs again',
      },
    ),
  ),
});

export const ServiceSchema = Type.Object({
  id: Type.String(),
  cluster: Type.String(),
  name: Type.String(),
  namespace: Type.String(),
  repository: Type.Union([Type.Object({ id: Type.String(), url: Type.String() }), Type.Null()]),
  syncConfig: Type.Optional(SyncConfigSchema),
  templated: Type.Boolean({ description: 'whether *.liquid files are rendered' }),
  version: Type.Optional(Type.String({ description: "Plural's version, as its owners last gave it" })),
  docsPath: Type.Optional(Type.String({ description: 'the folder of its source holding its docs (GET …/docs)' })),
  git: Type.Union([GitSourceSchema, Type.Null()]),
  helm: Type.Union([HelmSourceSchema, Type.Null()]),
  renderer: RendererSchema,
  sources: Type.Optional(
    Type.Array(
      Type.Object({ path: Type.String(), repository: Type.Object({ id: Type.String(), url: Type.String() }), git: GitSourceSchema }),
      { description: 'its extra git sources, when it has them' },
    ),
  ),
  renderers: Type.Optional(Type.Array(PathRendererSchema, { description: 'its renderers per folder, when it has them' })),
  /** Set on the cluster's own agent (gantry-agent), which the server keeps: what its Deployment runs. */
  agent: Type.Optional(AgentSourceSchema),
  provisions: Type.Optional(
    Type.String({ description: 'the fleet cluster whose Cluster API objects it holds, which the server keeps (cluster create --class)' }),
  ),
  configuration: Type.Array(Type.String(), { description: 'configuration keys; values are never returned' }),
  secretValues: Type.Array(Type.String(), { description: 'top-level keys of the secret helm values; values are never returned' }),
  contexts: Type.Array(Type.String(), { description: 'bound service contexts' }),
  dependencies: Type.Array(Type.String()),
  protect: Type.Boolean(),
  status: ServiceStatusSchema,
  errors: Type.Array(ServiceErrorSchema),
  revision: RevisionSchema,
  pinned: Type.Union([Type.Object({ by: Type.String(), at: Time }), Type.Null()], {
    description: 'set while a rollback pins the service at its revision (who, when): newer revisions wait until POST …/release',
  }),
  pendingRevision: Type.Union([Type.Integer(), Type.Null()], {
    description: 'number of the newest revision while it waits for the release of a pin; null otherwise',
  }),
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
export const ServiceDocsSchema = Type.Object({
  docsPath: Type.Union([Type.String(), Type.Null()], { description: "the service's docsPath; null: it has no docs" }),
  revision: Type.Integer({ description: 'the revision whose source the docs are read from (the current one)' }),
  files: Type.Array(
    Type.Object({ path: Type.String({ description: 'below docsPath' }), content: Type.String({ description: 'Markdown' }) }),
    { description: 'the Markdown files below docsPath, by path' },
  ),
  truncated: Type.Boolean({ description: 'more files than the 100 (or 1 MiB) returned' }),
});

export const RollbackSchema = Type.Object({ revision: Type.Integer({ minimum: 1 }) }, { additionalProperties: false });

export const RevisionParams = Type.Object({
  cluster: Type.String(),
  name: Type.String(),
  number: Type.String({ pattern: '^[1-9][0-9]*$', description: 'the revision number' }),
});

export const RejectSchema = Type.Object(
  {
    reason: Type.String({ minLength: 1, maxLength: 1000, description: 'why it must not run, for those who see it refused' }),
    fleetWide: Type.Optional(
      Type.Boolean({ description: 'every service of the repository folder, not only this one (admins); default false' }),
    ),
  },
  { additionalProperties: false },
);

export const RejectionSchema = Type.Object({
  id: Type.String(),
  repository: Type.String({ description: 'the repository URL' }),
  folder: Type.String(),
  commit: Type.String({ description: 'the commit the rejected content was found at' }),
  digest: Type.String({ description: "sha256 of the folder's tarball: what is rejected, at this commit or any other" }),
  service: Type.Union([Type.Object({ cluster: Type.String(), name: Type.String() }), Type.Null()], {
    description: 'the service it is rejected for; null: every service of the folder',
  }),
  reason: Type.String(),
  by: Type.String(),
  at: Time,
});

export const RejectOutcomeSchema = Type.Object({
  rejection: RejectionSchema,
  movedBack: Type.Array(Type.Object({ cluster: Type.String(), name: Type.String(), from: Type.Integer(), to: Type.Integer() }), {
    description: 'services that ran it, each moved back to its newest earlier revision not rejected',
  }),
  stuck: Type.Array(Type.Object({ cluster: Type.String(), name: Type.String() }), {
    description: 'services that run it with no earlier revision to go back to',
  }),
});
export const DeleteServiceQuery = Type.Object({
  // A string: query values are not coerced (see src/server/app.ts), and "true"/"false" is what a URL carries.
  detach: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'forget the service but leave its objects in the cluster' }),
  ),
});
