/**
 * The fleet API as the UI calls it: the CLI's own client (src/client/fleet-client.ts), without a token, so the
 * browser's session cookie authenticates each call; plus the few calls only a browser makes, in the same way.
 */
import { ApiError, FleetClient } from '../../../src/client/fleet-client.ts';
import type { AccessCheck, Identity } from './types.ts';

export const fleet = new FleetClient({ server: window.location.origin });

/** Whether `error` says the caller is not (or no longer) logged in. */
export function isUnauthenticated(error: unknown): boolean {
  return error instanceof ApiError && error.status === 401;
}

/** Checks the user name and password; the answer sets the HttpOnly session cookie. */
export function logIn(username: string, password: string): Promise<Identity> {
  return call('POST', '/v1/login', { username, password });
}

export function logOut(): Promise<void> {
  return call('POST', '/v1/logout');
}

/** Changes the logged-in user's password; the server ends their other sessions and keeps this one. */
export function changePassword(current: string, next: string): Promise<void> {
  return call('POST', '/v1/me/password', { currentPassword: current, newPassword: next });
}

/** Whether the user may do each of `checks`, in order (POST /v1/access-review). */
export async function reviewAccess(checks: readonly AccessCheck[]): Promise<boolean[]> {
  return (await call<{ allowed: boolean[] }>('POST', '/v1/access-review', { checks })).allowed;
}

/** Where the cluster's Kubernetes API `path` is reached through the auth proxy. */
export function clusterUrl(cluster: string, path: string): string {
  return `/v1/clusters/${encodeURIComponent(cluster)}/proxy${path}`;
}

/** A GET of the cluster's Kubernetes API through the auth proxy, as the logged-in user; `accept` picks a form. */
export function clusterGet<T>(cluster: string, path: string, accept?: string): Promise<T> {
  return call('GET', clusterUrl(cluster, path), undefined, accept ? { accept } : {});
}

/** A JSON merge patch (RFC 7386) of an object through the auth proxy, as `kubectl patch --type merge` sends it. */
export function clusterMergePatch<T>(cluster: string, path: string, patch: unknown): Promise<T> {
  return call('PATCH', clusterUrl(cluster, path), patch, { 'content-type': 'application/merge-patch+json' });
}

/** @throws ApiError with the server's message (the proxy's Kubernetes Status has one too). */
async function call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as T;
  const answer = (await response.json().catch(() => undefined)) as (T & { message?: string; field?: string }) | undefined;
  if (!response.ok) throw new ApiError(response.status, answer?.message ?? `${method} ${path}: HTTP ${response.status}`, answer?.field);
  return answer as T;
}
