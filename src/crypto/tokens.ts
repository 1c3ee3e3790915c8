/**
 * Bearer tokens (deploy tokens of clusters, users' API tokens): 256 random bits after a prefix that says what the
 * token is for, stored only as a SHA-256. A fast hash is enough for that much entropy; passwords, which people
 * choose, will need a slow one. The makers of a server's tokens (the installer, `gantry up`) and the server itself share
 * the forms below, which is why they are not in store/.
 */
import { createHash, randomBytes } from 'node:crypto';

/** `prefix` and 256 random bits as 43 base64url characters. */
export function newToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/** Hex SHA-256 of the token, the only form the database holds. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** What every API token starts with (deploy tokens and sessions have their own prefixes). */
export const API_TOKEN_PREFIX = 'gantry-api-';

/** A new random API token (`gantry-api-` and 43 base64url characters), e.g. for an installer to hand to the server. */
export function newApiToken(): string {
  return newToken(API_TOKEN_PREFIX);
}

/** Whether `token` has the form of an API token a server makes. */
export function isApiTokenForm(token: string): boolean {
  return token.startsWith(API_TOKEN_PREFIX) && /^[A-Za-z0-9_-]{32,}$/.test(token.slice(API_TOKEN_PREFIX.length));
}
