/**
 * Bearer tokens (deploy tokens of clusters, users' API tokens): 256 random bits after a prefix that says what the
 * token is for, stored only as a SHA-256. A fast hash is enough for that much entropy; passwords, which people
 * choose, will need a slow one.
 */
import { createHash, randomBytes } from 'node:crypto';

export function newToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/** Hex SHA-256 of the token, the only form the database holds. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
