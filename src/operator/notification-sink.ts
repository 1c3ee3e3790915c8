/**
 * NotificationSink → the server's notification sink `spec.name` (default metadata.name), as Plural's: a Slack or
 * Teams incoming webhook, or a generic JSON webhook. The address comes from the `secretRef` Secret's `url` (and
 * `hmacKey` signing a webhook's body), or from `configuration.slack.url` / `.teams.url` / `.webhook.url` as Plural
 * keeps it; the
 * server seals both and never returns them, and they never appear in status (only the sha of what was sent). A
 * change of the Secret resyncs. A sink made elsewhere is adopted read-only.
 */
import { createHash } from 'node:crypto';
import type { ApiSink, FleetClient } from '../client/fleet-client.ts';
import { NotificationSinkSpecSchema, type NotificationSinkSpec, type NotificationSinkStatus } from '../api/fleet.ts';
import type { Cluster } from '../kube/cluster.ts';
import type { SinkUpsertBody } from '../api/notifications.ts';
import { type FleetKind, InvalidSpec } from './fleet-object.ts';
import { notFound } from './git-repository.ts';
import { secretOf } from './references.ts';

/** The server's sink type of each resource type (PLURAL blocks before this: the Supported condition says why). */
const SINK_TYPES = { SLACK: 'slack', TEAMS: 'teams', WEBHOOK: 'webhook' } as const;

interface DesiredSink {
  /** What the status sha covers: the sink's name, type and a digest of its address and key. */
  attributes: { name: string; type: SinkUpsertBody['type']; digest: string };
  body: SinkUpsertBody;
}

export function notificationSinkKind(
  client: FleetClient,
  cluster: Cluster,
): FleetKind<NotificationSinkSpec, NotificationSinkStatus, DesiredSink, ApiSink> {
  const set = async ({ attributes, body }: DesiredSink) => await client.setSink(attributes.name, body);
  return {
    kind: 'NotificationSink',
    schema: NotificationSinkSpecSchema,
    async desired(resource) {
      const { spec } = resource;
      const type = SINK_TYPES[spec.type as keyof typeof SINK_TYPES];
      const secret = spec.secretRef
        ? await secretOf(cluster, spec.secretRef, resource.metadata.namespace ?? 'default', 'spec.secretRef')
        : {};
      const url = secret['url'] ?? spec.configuration?.[type]?.url;
      if (!url)
        throw new InvalidSpec(
          spec.secretRef
            ? `Secret ${spec.secretRef.name} (spec.secretRef) needs the key url`
            : `give spec.secretRef (keys url, hmacKey) or spec.configuration.${type}.url`,
        );
      const hmacKey = secret['hmacKey'];
      const body: SinkUpsertBody = { type, url, ...(hmacKey && type === 'webhook' ? { hmacKey } : {}) };
      const digest = createHash('sha256').update(JSON.stringify(body)).digest('hex');
      return { attributes: { name: spec.name ?? resource.metadata.name, type, digest }, body };
    },
    find: async ({ attributes }) => (await client.listSinks()).find((sink) => sink.name === attributes.name),
    create: set,
    update: async (_remote, desired) => await set(desired),
    async remove(resource) {
      const remote = (await client.listSinks()).find((sink) => sink.id === resource.status?.id);
      if (remote) await client.deleteSink(remote.name).catch(notFound);
      return true;
    },
    id: (remote) => remote.id,
    observe: (remote) => ({ status: {}, readiness: { ready: true, reason: 'Synced', message: `${remote.type} sink ${remote.name}` } }),
  };
}
