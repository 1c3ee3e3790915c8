/**
 * The CustomResourceDefinitions of the fleet's resources, from the TypeBox schemas in src/api/fleet.ts (as the
 * KluctlDeployment CRD is made from its schema), with the printer columns `kubectl get` shows.
 */
import {
  ClusterSpecSchema,
  ClusterStatusSchema,
  FLEET_GROUP,
  FLEET_VERSION,
  GitRepositorySpecSchema,
  GitRepositoryStatusSchema,
  GlobalServiceSpecSchema,
  HelmRepositorySpecSchema,
  HelmRepositoryStatusSchema,
  NotificationRouterSpecSchema,
  NotificationRouterStatusSchema,
  NotificationSinkSpecSchema,
  NotificationSinkStatusSchema,
  GlobalServiceStatusSchema,
  PipelineSpecSchema,
  PipelineStatusSchema,
  ServiceContextSpecSchema,
  ServiceContextStatusSchema,
  ServiceDeploymentSpecSchema,
  ServiceDeploymentStatusSchema,
} from '../api/fleet.ts';
import { customResourceDefinition, type PrinterColumn } from '../api/crd.ts';

const condition = (type: string) => `.status.conditions[?(@.type=="${type}")]`;
const common: PrinterColumn[] = [
  { name: 'Id', type: 'string', jsonPath: '.status.id' },
  { name: 'Synchronized', type: 'string', jsonPath: `${condition('Synchronized')}.status` },
  { name: 'Ready', type: 'string', jsonPath: `${condition('Ready')}.status` },
  { name: 'Readonly', type: 'string', jsonPath: '.status.readonly', priority: 1 },
  { name: 'Message', type: 'string', jsonPath: `${condition('Ready')}.message`, priority: 1 },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

export function fleetCrds(): Array<Record<string, unknown>> {
  return [
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'GitRepository',
      plural: 'gitrepositories',
      singular: 'gitrepository',
      scope: 'Cluster',
      description: "A git repository of the fleet's server (Plural's GitRepository); one that exists already is adopted read-only.",
      versions: [
        {
          name: FLEET_VERSION,
          spec: GitRepositorySpecSchema,
          status: GitRepositoryStatusSchema,
          printerColumns: [
            { name: 'Url', type: 'string', jsonPath: '.spec.url' },
            { name: 'Health', type: 'string', jsonPath: '.status.health' },
            ...common,
          ],
        },
      ],
    }),
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'Cluster',
      plural: 'clusters',
      singular: 'cluster',
      scope: 'Namespaced',
      description: "A cluster of the fleet (Plural's Cluster): made in the server, or adopted read-only by handle.",
      versions: [
        {
          name: FLEET_VERSION,
          spec: ClusterSpecSchema,
          status: ClusterStatusSchema,
          printerColumns: [
            { name: 'Health', type: 'string', jsonPath: '.status.health' },
            { name: 'Version', type: 'string', jsonPath: '.status.currentVersion' },
            ...common,
          ],
        },
      ],
    }),
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'ServiceDeployment',
      plural: 'servicedeployments',
      singular: 'servicedeployment',
      shortNames: ['svcdeploy'],
      scope: 'Namespaced',
      description: "A service on one cluster of the fleet (Plural's ServiceDeployment), deployed by that cluster's agent.",
      versions: [
        {
          name: FLEET_VERSION,
          spec: ServiceDeploymentSpecSchema,
          status: ServiceDeploymentStatusSchema,
          printerColumns: [
            { name: 'Cluster', type: 'string', jsonPath: '.spec.clusterRef.name' },
            { name: 'Revision', type: 'integer', jsonPath: '.status.revision' },
            { name: 'Applied', type: 'integer', jsonPath: '.status.appliedRevision' },
            ...common,
          ],
        },
      ],
    }),
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'GlobalService',
      plural: 'globalservices',
      singular: 'globalservice',
      scope: 'Namespaced',
      description: "A service every cluster with the given tags gets (Plural's GlobalService).",
      versions: [
        {
          name: FLEET_VERSION,
          spec: GlobalServiceSpecSchema,
          status: GlobalServiceStatusSchema,
          printerColumns: [{ name: 'Service', type: 'string', jsonPath: '.spec.serviceRef.name' }, ...common],
        },
      ],
    }),
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'ServiceContext',
      plural: 'servicecontexts',
      singular: 'servicecontext',
      scope: 'Namespaced',
      description: "Configuration shared by the services naming it in `contexts` (Plural's ServiceContext).",
      versions: [{ name: FLEET_VERSION, spec: ServiceContextSpecSchema, status: ServiceContextStatusSchema, printerColumns: common }],
    }),
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'Pipeline',
      plural: 'pipelines',
      singular: 'pipeline',
      scope: 'Namespaced',
      description: "A release pipeline (Plural's Pipeline): stages of ServiceDeployments, edges with gates.",
      versions: [{ name: FLEET_VERSION, spec: PipelineSpecSchema, status: PipelineStatusSchema, printerColumns: common }],
    }),
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'NotificationSink',
      plural: 'notificationsinks',
      singular: 'notificationsink',
      scope: 'Namespaced',
      description: "Where fleet notifications go (Plural's NotificationSink): Slack, or a signed webhook.",
      versions: [
        {
          name: FLEET_VERSION,
          spec: NotificationSinkSpecSchema,
          status: NotificationSinkStatusSchema,
          printerColumns: [{ name: 'Type', type: 'string', jsonPath: '.spec.type' }, ...common],
        },
      ],
    }),
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'NotificationRouter',
      plural: 'notificationrouters',
      singular: 'notificationrouter',
      scope: 'Namespaced',
      description: "Which fleet events go to which sinks (Plural's NotificationRouter).",
      versions: [
        { name: FLEET_VERSION, spec: NotificationRouterSpecSchema, status: NotificationRouterStatusSchema, printerColumns: common },
      ],
    }),
    customResourceDefinition({
      group: FLEET_GROUP,
      kind: 'HelmRepository',
      plural: 'helmrepositories',
      singular: 'helmrepository',
      scope: 'Namespaced',
      description: "A Helm repository and its credentials (Plural's HelmRepository), used by the server for charts at its URL.",
      versions: [
        {
          name: FLEET_VERSION,
          spec: HelmRepositorySpecSchema,
          status: HelmRepositoryStatusSchema,
          printerColumns: [{ name: 'Url', type: 'string', jsonPath: '.spec.url' }, ...common],
        },
      ],
    }),
  ];
}
