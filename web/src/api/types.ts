/**
 * The API's shapes as the server's own schemas define them (through the fleet client's names), as types only: the
 * UI speaks the contract the server validates and documents.
 */
import type { Static } from 'typebox';
import type {
  ApiCluster,
  ApiGlobalService,
  ApiIdentity,
  ApiPipeline,
  ApiPromotion,
  ApiRevision,
  ApiRollout,
  ApiService,
} from '../../../src/client/fleet-client.ts';
import type { AccessReviewSchema } from '../../../src/api/users.ts';

export type { GateDecision } from '../../../src/client/fleet-client.ts';
export type { FleetChange } from '../../../src/api/events.ts';

export type Cluster = ApiCluster;
export type Service = ApiService;
export type Component = Service['components'][number];
export type Revision = ApiRevision;
export type Pipeline = ApiPipeline;
export type GlobalService = ApiGlobalService;
export type Rollout = ApiRollout;
export type Stage = Pipeline['stages'][number];
export type Edge = Pipeline['edges'][number];
export type Gate = Edge['gates'][number];
export type Promotion = ApiPromotion;
export type Identity = ApiIdentity;
export type AccessCheck = Static<typeof AccessReviewSchema>['checks'][number];
export type { UiConfig } from '../../../src/webui/ui-config.ts';
