/**
 * Posting a notification to a receiver (Slack, a generic webhook), shared by the controller's Alerts and the
 * server's notification sinks: one POST with a timeout, repeated once after a network error, a timeout, a 429 or a
 * 5xx; the body signed as Flux's generic-hmac provider signs it; Slack's text escaped. Addresses are never put in errors: a Slack webhook
 * URL is itself a secret.
 */
import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { messageOf } from './problems.ts';

/** An HTTP request ready to send. */
export interface WebhookRequest {
  address: string;
  headers: Record<string, string>;
  body: string;
}

export interface PostOptions {
  /** Limit of one POST (connect to end of response), in ms. */
  timeoutMs: number;
  /** Pause before the single retry, in ms. */
  retryDelayMs: number;
}

/** The `X-Signature` value of `body`: `sha256=<hex HMAC-SHA256>`, as Flux's generic-hmac provider sends it. */
export function hmacSignature(body: string, key: string): string {
  return `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
}

/** @throws Error saying why the receiver did not take it (its status and the start of its answer, or no answer). */
export async function postWithRetry(prepared: WebhookRequest, options: PostOptions): Promise<void> {
  const first = await attempt(prepared, options);
  if (first === undefined) return;
  if (!first.retry) throw new Error(first.message);
  await sleep(options.retryDelayMs);
  const second = await attempt(prepared, options);
  if (second !== undefined) throw new Error(`${second.message} (after one retry)`);
}

/** @returns undefined on success, else why it failed and whether another attempt may succeed. */
async function attempt(prepared: WebhookRequest, options: PostOptions): Promise<{ message: string; retry: boolean } | undefined> {
  try {
    const response = await request(prepared.address, {
      method: 'POST',
      headers: prepared.headers,
      body: prepared.body,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const text = await response.body.text();
    if (response.statusCode < 300) return undefined;
    return {
      message: `the receiver answered ${response.statusCode}${text ? `: ${text.slice(0, 200).trim()}` : ''}`,
      retry: response.statusCode === 429 || response.statusCode >= 500,
    };
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    return {
      message: timedOut ? `no answer within ${options.timeoutMs}ms` : `cannot reach the receiver: ${messageOf(error)}`,
      retry: true,
    };
  }
}

/** Slack's three control characters in message text (Slack's "Escaping text" docs). */
export function slackEscape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
