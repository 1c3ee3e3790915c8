/**
 * Fleet events to notification sinks, as Plural's console routes its events through NotificationRouters: each event
 * goes to the sinks of every router that names its type (or `*`) and whose filters let it through (no filters: all
 * events; else any filter whose given fields all match). A webhook sink gets the event as JSON, signed with its HMAC
 * key (`X-Signature: sha256=<hex>`, as Flux's generic-hmac provider); a Slack sink gets a message. Delivery runs in
 * the background with a timeout and one retry (webhook-post.ts) and never fails the request that caused the event;
 * failures are logged without the sink's address.
 */
import type { Kysely } from 'kysely';
import type { FleetEventType } from '../api/events.ts';
import type { Logger } from '../logger.ts';
import {
  listRouters,
  type NotificationRouter,
  type RouterFilter,
  sinksForDelivery,
  type SinkConfiguration,
  type SinkType,
} from '../store/notifications.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { hmacSignature, postWithRetry, slackEscape, type WebhookRequest } from '../webhook-post.ts';

export interface FleetEvent {
  type: FleetEventType;
  severity: 'info' | 'error';
  /** For cluster and service events. */
  cluster?: { id: string; name: string };
  /** For service events. */
  service?: { id: string; name: string; namespace: string; status: string; revision: number };
  /** For pipeline events: a gate waiting for approval, a promotion, a gate closed. */
  pipeline?: { id: string; name: string; edge: string; gate?: string };
  /** For rollout events: started, a wave done, paused, resumed, failed, aborted, done (the wave is the one under way). */
  rollout?: { id: string; subject: string; state: string; wave: string | null };
  message: string;
}

export interface NotifierOptions {
  db: Kysely<Database>;
  box: SecretBox;
  log: Logger;
  /** Per POST, in ms; default 10 s. */
  timeoutMs?: number;
  /** Before the one retry, in ms; default 1 s. */
  retryDelayMs?: number;
}

/**
 * The server's sender of fleet events: notify() returns at once and delivers in the background, reading routers and
 * sinks from the store at each event (a router changed a moment ago applies to the next event). Nothing to close;
 * at shutdown the owner awaits idle() so deliveries under way are not cut off.
 */
export class Notifier {
  readonly #options: NotifierOptions;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: NotifierOptions) {
    this.#options = options;
  }

  /** Delivers `event` in the background; never throws. */
  notify(event: FleetEvent): void {
    const delivery = this.#deliver(event).catch((error: unknown) =>
      this.#options.log.warn({ err: error, event: event.type }, 'notifications could not be sent'),
    );
    this.#inFlight.add(delivery);
    void delivery.finally(() => this.#inFlight.delete(delivery));
  }

  /** Resolves when every delivery under way has finished (at shutdown). */
  async idle(): Promise<void> {
    await Promise.all([...this.#inFlight]);
  }

  async #deliver(event: FleetEvent): Promise<void> {
    const routers = (await listRouters(this.#options.db)).filter((router) => routes(router, event));
    const names = [...new Set(routers.flatMap((router) => router.sinks))];
    const sinks = await sinksForDelivery(this.#options.db, this.#options.box, names);
    const now = new Date();
    await Promise.all(
      sinks.map(async (sink) => {
        try {
          await postWithRetry(sinkRequest(sink.type, sink.configuration, event, now), {
            timeoutMs: this.#options.timeoutMs ?? 10_000,
            retryDelayMs: this.#options.retryDelayMs ?? 1_000,
          });
        } catch (error) {
          this.#options.log.warn(
            { sink: sink.name, event: event.type, error: (error as Error).message },
            'a notification was not delivered',
          );
        }
      }),
    );
  }
}

/** Whether the router takes the event: its type named (or `*`), and no filters or one that matches. */
export function routes(router: NotificationRouter, event: FleetEvent): boolean {
  if (!router.events.includes(event.type) && !router.events.includes('*')) return false;
  return router.filters.length === 0 || router.filters.some((filter) => filterMatches(filter, event));
}

function filterMatches(filter: RouterFilter, event: FleetEvent): boolean {
  if (filter.clusterId !== undefined && filter.clusterId !== event.cluster?.id) return false;
  if (filter.serviceId !== undefined && filter.serviceId !== event.service?.id) return false;
  return filter.regex === undefined || new RegExp(filter.regex).test(subjectOf(event));
}

/**
 * What the event is about: `<cluster>/<service>`, `<cluster>`, `pipeline/<name>`, or a rollout's `globalservice/<name>`
 * or `pipeline/<name>/<stage>`.
 */
function subjectOf(event: FleetEvent): string {
  if (event.pipeline) return `pipeline/${event.pipeline.name}`;
  if (event.rollout) return event.rollout.subject;
  return event.service ? `${event.cluster?.name}/${event.service.name}` : (event.cluster?.name ?? '');
}

/** The POST for one sink. */
export function sinkRequest(type: SinkType, configuration: SinkConfiguration, event: FleetEvent, now: Date): WebhookRequest {
  const message =
    type === 'slack' ? slackMessage(event) : type === 'teams' ? teamsMessage(event) : { ...event, timestamp: now.toISOString() };
  const body = JSON.stringify(message);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'gantry-server' };
  if (type === 'webhook' && configuration.hmacKey) headers['x-signature'] = hmacSignature(body, configuration.hmacKey);
  return { address: configuration.url, headers, body };
}

/** What the message is about, for people: `service dev/web`, `cluster dev`, `pipeline/release`. */
function headlineSubject(event: FleetEvent): string {
  return event.pipeline || event.rollout ? subjectOf(event) : `${event.service ? 'service' : 'cluster'} ${subjectOf(event)}`;
}

/**
 * A Teams incoming webhook's message: one Adaptive Card (the format Microsoft's "Create Incoming Webhooks" docs post,
 * taken by both the Office 365 connector and the Workflows webhooks), plain text only, so nothing in the event is read
 * as markup.
 */
function teamsMessage(event: FleetEvent): Record<string, unknown> {
  const facts = event.service
    ? [
        { title: 'Status', value: event.service.status },
        { title: 'Revision', value: String(event.service.revision) },
      ]
    : [];
  const card = {
    type: 'AdaptiveCard',
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    version: '1.4',
    body: [
      {
        type: 'TextBlock',
        text: `${headlineSubject(event)}: ${event.type}`,
        weight: 'Bolder',
        color: event.severity === 'error' ? 'Attention' : 'Good',
        wrap: true,
      },
      { type: 'TextBlock', text: event.message, wrap: true },
      ...(facts.length > 0 ? [{ type: 'FactSet', facts }] : []),
    ],
  };
  return { type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', content: card }] };
}

function slackMessage(event: FleetEvent): Record<string, unknown> {
  const subject = headlineSubject(event);
  return {
    text: `${event.severity === 'error' ? ':red_circle:' : ':large_green_circle:'} ${slackEscape(subject)}: ${slackEscape(event.type)}`,
    attachments: [
      {
        color: event.severity === 'error' ? 'danger' : 'good',
        title: event.type,
        text: slackEscape(event.message),
        fields: event.service
          ? [
              { title: 'Status', value: event.service.status, short: true },
              { title: 'Revision', value: String(event.service.revision), short: true },
            ]
          : [],
        footer: 'gantry-server',
      },
    ],
  };
}
