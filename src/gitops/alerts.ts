/**
 * Alerts: the controller tells AlertDispatcher about each KluctlDeployment event worth a notification (a change,
 * a failure), and the dispatcher posts it to every Alert resource (src/api/alert.ts) that watches that deployment,
 * is not suspended and whose eventSeverity lets it through — as the Flux Kluctl controller's events reached Flux's
 * notification-controller providers:
 * - `generic`: the event as JSON, in the shape of Flux's event (involvedObject, severity, timestamp, reason,
 *   message, metadata, reportingController) plus `summary`, the counts of the result; with the Secret's `token`
 *   as `Authorization: Bearer`, with its `hmacKey` signed as Flux's generic-hmac provider signs
 *   (`X-Signature: sha256=<hex HMAC-SHA256 of the body>`);
 * - `slack`: a Slack message (incoming webhook, or chat.postMessage with a bot token and spec.channel): fallback
 *   `text` plus an attachment coloured by severity with the deployment, reason, message, revision and changes.
 * Alerts are listed once, with the first event, and then watched, as Flux's notification-controller keeps them in
 * its cache: an event costs no request to the API server beyond its posts. Each post has a timeout and at most one
 * retry; nothing here ever throws to the caller, failures are logged and shown in the Alert's Ready condition.
 * Addresses never appear in logs or status: a Slack webhook URL is itself a secret.
 */
import {
  GROUP,
  KIND as ALERT_KIND,
  PLURAL,
  SECRET_KEYS,
  SIGNATURE_HEADER,
  VERSION,
  type Alert,
  type AlertEventSource,
} from '../api/alert.ts';
import { API_VERSION, KIND as KLUCTL_DEPLOYMENT_KIND, type Condition } from '../api/kluctl-deployment.ts';
import type { Logger } from '../logger.ts';
import { KubeApiError } from '../kube/client.ts';
import type { Cluster } from '../kube/cluster.ts';
import { readSecret } from '../kube/secrets.ts';
import { Watcher } from '../kube/watcher.ts';
import { hmacSignature, postWithRetry, slackEscape, type WebhookRequest } from '../webhook-post.ts';
import { messageOf } from '../problems.ts';

export type Severity = 'info' | 'error';

/** Counts of a command result, for the "changes" of a notification. */
export interface ChangeSummary {
  newObjects?: number;
  changedObjects?: number;
  deletedObjects?: number;
  orphanObjects?: number;
  warnings?: number;
  errors?: number;
}

/** One event about a KluctlDeployment. */
export interface AlertEvent {
  deployment: { namespace: string; name: string; labels?: Record<string, string> };
  /** `error` for failures; `info` for changes (and successes worth telling). */
  severity: Severity;
  /** A short CamelCase word, e.g. Kluctl's condition reasons (ReconciliationSucceeded, DeployFailed). */
  reason: string;
  message: string;
  /** The deployed source revision, e.g. `main@sha1:<commit>`. */
  revision?: string;
  summary?: ChangeSummary;
}

export interface AlertDispatcherOptions {
  log: Logger;
  /** Limit of one POST (connect to end of response); 10s when unset. */
  timeoutMs?: number;
  /** Pause before the single retry; 1s when unset. */
  retryDelayMs?: number;
  /** Field manager of the Alert status patches; `gantry-controller` when unset. */
  fieldManager?: string;
  /** An event equal to one sent less than this long ago is dropped, in ms; 5 min when unset, 0 sends every one. */
  repeatIntervalMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_RETRY_DELAY_MS = 1000;
const DEFAULT_REPEAT_INTERVAL_MS = 5 * 60_000;
const REPORTING_CONTROLLER = 'gantry-controller';

/**
 * The alert sender of one controller and cluster: it watches the cluster's Alerts from the first notify() on, and
 * drops an event equal to one sent within `repeatIntervalMs`. notify() may be called concurrently and never rejects.
 * Its owner calls close() once at shutdown, which stops the watch; later events are logged as not sent.
 */
export class AlertDispatcher {
  private readonly cluster: Cluster;
  private readonly options: AlertDispatcherOptions;
  /** When each distinct event was last sent (epoch ms), for dropping repeats. */
  private readonly sentAt = new Map<string, number>();
  private watcher: Watcher | undefined;
  private closed = false;

  constructor(cluster: Cluster, options: AlertDispatcherOptions) {
    this.cluster = cluster;
    this.options = options;
  }

  /**
   * Sends `event` to every matching Alert, in parallel. Never rejects; it resolves when every post finished or
   * gave up (at most about 2 × timeout + retry delay), so a caller may await it or not.
   */
  async notify(event: AlertEvent): Promise<void> {
    if (this.isRepeat(event)) return;
    let alerts: Alert[];
    try {
      alerts = await this.currentAlerts();
    } catch (error) {
      this.options.log.warn(
        { err: error, namespace: event.deployment.namespace, name: event.deployment.name },
        'cannot list Alerts; the event is not sent',
      );
      return;
    }
    const targets = alerts.filter(
      (alert) => !alert.spec.suspend && severityAllowed(alert, event.severity) && alertWatches(alert, event.deployment),
    );
    await Promise.all(targets.map((alert) => this.deliver(alert, event)));
  }

  /**
   * True for an event equal to one sent within the repeat interval: a deployment that keeps failing is retried
   * with backoff, and each retry would otherwise post the same failure again (Flux's notification-controller drops
   * such duplicates the same way, for 5 minutes).
   */
  private isRepeat(event: AlertEvent): boolean {
    const interval = this.options.repeatIntervalMs ?? DEFAULT_REPEAT_INTERVAL_MS;
    const now = Date.now();
    for (const [key, at] of this.sentAt) if (now - at >= interval) this.sentAt.delete(key);
    const { deployment, severity, reason, message, revision } = event;
    const key = JSON.stringify([deployment.namespace, deployment.name, severity, reason, message, revision]);
    if (this.sentAt.has(key)) return true;
    if (interval > 0) this.sentAt.set(key, now);
    return false;
  }

  /** Stops watching Alerts; events from then on are not sent. */
  async close(): Promise<void> {
    this.closed = true;
    await this.watcher?.stop();
  }

  /**
   * Every Alert as of the watch: listed at the first call, current from then on within the watch's delay. Until the
   * first list succeeds, fails as a list would (Watcher.listed).
   */
  private async currentAlerts(): Promise<Alert[]> {
    if (this.closed) throw new Error('the alert dispatcher is closed');
    const watcher = (this.watcher ??= this.startWatch());
    await watcher.listed();
    return [...watcher.cache.values()] as unknown as Alert[];
  }

  private startWatch(): Watcher {
    const watcher = new Watcher({
      client: this.cluster.client,
      resource: { group: GROUP, version: VERSION, plural: PLURAL },
      log: this.options.log.child({ resource: `${PLURAL}.${GROUP}` }),
      // Without the Alert CRD, or a role that may not list Alerts, there is no Alert to send to.
      syncedDespite: (error) => error instanceof KubeApiError && (error.status === 403 || error.status === 404),
      onChange: () => undefined,
    });
    watcher.start();
    return watcher;
  }

  private async deliver(alert: Alert, event: AlertEvent): Promise<void> {
    const log = this.options.log.child({
      alert: `${alert.metadata.namespace}/${alert.metadata.name}`,
      namespace: event.deployment.namespace,
      name: event.deployment.name,
    });
    let failure: string | undefined;
    try {
      const secret = alert.spec.secretRef ? await readSecret(this.cluster, alert.metadata.namespace, alert.spec.secretRef.name) : {};
      const prepared = buildAlertRequest(alert, event, secret, new Date());
      await postWithRetry(prepared, {
        timeoutMs: this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        retryDelayMs: this.options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS,
      });
      log.debug('alert sent');
    } catch (error) {
      failure = messageOf(error);
      log.warn({ error: failure }, 'sending an alert failed');
    }
    await this.recordOutcome(alert, failure).catch((error: unknown) => log.debug({ err: error }, "cannot update the Alert's status"));
  }

  /** Sets the Alert's Ready condition from the last delivery, writing only when it changes. */
  private async recordOutcome(alert: Alert, failure: string | undefined): Promise<void> {
    const wanted =
      failure === undefined
        ? { status: 'True' as const, reason: 'Succeeded', message: 'The last notification was delivered.' }
        : { status: 'False' as const, reason: 'SendFailed', message: failure };
    const conditions = alert.status?.conditions ?? [];
    const current = conditions.find((condition) => condition.type === 'Ready');
    if (current && current.status === wanted.status && current.reason === wanted.reason && current.message === wanted.message) return;
    const ready: Condition = {
      type: 'Ready',
      ...wanted,
      ...(alert.metadata.generation !== undefined ? { observedGeneration: alert.metadata.generation } : {}),
      lastTransitionTime: current?.status === wanted.status ? current.lastTransitionTime : new Date().toISOString(),
    };
    await this.cluster.patchMerge(
      { group: GROUP, version: VERSION, kind: ALERT_KIND, namespace: alert.metadata.namespace, name: alert.metadata.name },
      { status: { conditions: [...conditions.filter((condition) => condition.type !== 'Ready'), ready] } },
      { fieldManager: this.options.fieldManager ?? REPORTING_CONTROLLER, subresource: 'status' },
    );
  }
}

/**
 * Whether one of the Alert's eventSources names the deployment: kind KluctlDeployment, namespace (the Alert's
 * own when unset) and name equal (`*` for any), and every matchLabels entry among the deployment's labels, as
 * Flux's Alert eventSources match.
 */
export function alertWatches(alert: Alert, deployment: AlertEvent['deployment']): boolean {
  return alert.spec.eventSources.some((source) => sourceMatches(source, alert.metadata.namespace, deployment));
}

/** `info` Alerts take every event, `error` Alerts only errors (Flux's eventSeverity; info when unset). */
export function severityAllowed(alert: Alert, severity: Severity): boolean {
  return (alert.spec.eventSeverity ?? 'info') === 'info' || severity === 'error';
}

/**
 * The POST for one Alert and event: address from the Secret's `address` or spec.address, body by spec.type,
 * `Authorization: Bearer <token>` with a token, `X-Signature` with an hmacKey (generic only).
 * @throws Error when the Alert has no address.
 */
export function buildAlertRequest(alert: Alert, event: AlertEvent, secret: Record<string, string>, now: Date): WebhookRequest {
  const address = secret[SECRET_KEYS.address]?.trim() || alert.spec.address;
  if (!address)
    throw new Error(`no address: set spec.address or the key '${SECRET_KEYS.address}' in Secret ${alert.spec.secretRef?.name ?? '(none)'}`);
  const body = JSON.stringify(alert.spec.type === 'slack' ? slackPayload(alert, event) : genericPayload(alert, event, now));
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': REPORTING_CONTROLLER };
  const token = secret[SECRET_KEYS.token]?.trim();
  if (token) headers['authorization'] = `Bearer ${token}`;
  const hmacKey = secret[SECRET_KEYS.hmacKey];
  if (hmacKey && alert.spec.type === 'generic') headers[SIGNATURE_HEADER.toLowerCase()] = hmacSignature(body, hmacKey);
  return { address, headers, body };
}

/** The generic JSON body: Flux's event shape, so receivers written for Flux's generic provider read it. */
export function genericPayload(alert: Alert, event: AlertEvent, now: Date): Record<string, unknown> {
  const metadata: Record<string, string> = {};
  if (event.revision) metadata['revision'] = event.revision;
  if (alert.spec.summary) metadata['summary'] = alert.spec.summary;
  return {
    involvedObject: {
      apiVersion: API_VERSION,
      kind: KLUCTL_DEPLOYMENT_KIND,
      namespace: event.deployment.namespace,
      name: event.deployment.name,
    },
    severity: event.severity,
    timestamp: now.toISOString(),
    reason: event.reason,
    message: event.message,
    metadata,
    ...(event.summary ? { summary: event.summary } : {}),
    reportingController: REPORTING_CONTROLLER,
  };
}

/** A Slack message (incoming webhooks and chat.postMessage take the same body); `channel` only when set. */
export function slackPayload(alert: Alert, event: AlertEvent): Record<string, unknown> {
  const subject = `${KLUCTL_DEPLOYMENT_KIND} ${event.deployment.namespace}/${event.deployment.name}`;
  const fields = [
    ...(event.revision ? [{ title: 'Revision', value: slackEscape(event.revision), short: true }] : []),
    ...(event.summary ? [{ title: 'Changes', value: formatSummary(event.summary), short: true }] : []),
  ];
  const text = alert.spec.summary ? `${slackEscape(event.message)}\n${slackEscape(alert.spec.summary)}` : slackEscape(event.message);
  return {
    ...(alert.spec.channel ? { channel: alert.spec.channel } : {}),
    text: `${event.severity === 'error' ? ':red_circle:' : ':large_green_circle:'} ${slackEscape(subject)}: ${slackEscape(event.reason)}`,
    attachments: [
      {
        color: event.severity === 'error' ? 'danger' : 'good',
        author_name: subject,
        title: event.reason,
        text,
        fields,
        mrkdwn_in: ['text'],
        footer: REPORTING_CONTROLLER,
      },
    ],
  };
}

function sourceMatches(source: AlertEventSource, alertNamespace: string, deployment: AlertEvent['deployment']): boolean {
  if (source.kind !== KLUCTL_DEPLOYMENT_KIND) return false;
  if ((source.namespace ?? alertNamespace) !== deployment.namespace) return false;
  if (source.name !== '*' && source.name !== deployment.name) return false;
  return Object.entries(source.matchLabels ?? {}).every(([key, value]) => deployment.labels?.[key] === value);
}

/** `1 new, 2 changed, 0 deleted` — only the counts that were given. */
function formatSummary(summary: ChangeSummary): string {
  const parts: Array<[number | undefined, string]> = [
    [summary.newObjects, 'new'],
    [summary.changedObjects, 'changed'],
    [summary.deletedObjects, 'deleted'],
    [summary.orphanObjects, 'orphan'],
    [summary.warnings, 'warnings'],
    [summary.errors, 'errors'],
  ];
  return (
    parts
      .filter(([count]) => count !== undefined)
      .map(([count, label]) => `${count} ${label}`)
      .join(', ') || 'none'
  );
}
