/**
 * What the fleet tells of itself: the fleet events (Plural's names) that notification routers send to sinks, and
 * the change hints GET /v1/events streams to browsers for their live updates.
 */
import { Type, type Static } from 'typebox';
import { LiteralUnion } from './common.ts';

/**
 * The events routers may name: Plural's names, and `rollout.update` for a progressive rollout's steps (Gantry's own:
 * Plural has no rollouts).
 */
export const FLEET_EVENTS = ['service.update', 'cluster.create', 'cluster.delete', 'pipeline.update', 'rollout.update'] as const;
export const FleetEventTypeSchema = LiteralUnion(FLEET_EVENTS);
export type FleetEventType = Static<typeof FleetEventTypeSchema>;

/** What a router (and a NotificationRouter resource) names: fleet events, or * for all. */
export const RoutedEventSchema = Type.Union([...FleetEventTypeSchema.anyOf, Type.Literal('*')]);

/**
 * What changed in the fleet, for browsers to refetch (the data of GET /v1/events): a hint naming the kind and the
 * id or name, never the data itself, which the browser reads through the API with its own rights.
 */
export interface FleetChange {
  kind: 'cluster' | 'service' | 'pipeline' | 'globalservice';
  /** A cluster's or service's id. */
  id?: string;
  /** A pipeline's or global service's name. */
  name?: string;
}
