/**
 * Deploy tokens: an agent's credential for its cluster (crypto/tokens.ts), stored only as a SHA-256. A cluster may
 * hold several at once, so that an agent is re-keyed without a gap: the first request made with a token expires every
 * token of its cluster made before it, an overlap later (a second agent still on the old token, such as the old pod
 * of a rolling upgrade, finishes in that time; Plural keeps an old deploy token for 7 days after rotation).
 *
 * A token is rotated in one of two ways:
 * - an admin makes one (`gantry cluster token`) and installs it;
 * - or the agent rotates by itself. The server tells it in its ping's answer (rotationDue) when its token is older than
 *   the server's maximum age or an admin asked for a rotation (requestTokenRotation). The agent then fetches a new
 *   token (POST /v1/agent/token, insertDeployToken), stores it where it reads its token from, and switches. Its
 *   first request with the new token starts the old one's expiry.
 *
 * An agent that crashes between fetching and storing keeps its old token. It is asked again and fetches another, and
 * the unused one expires with the rest once a newer token is used.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { inChunks } from './database.ts';
import type { Database, DeployTokenTable } from './schema.ts';
import { hashToken, newToken } from '../crypto/tokens.ts';

export const DEPLOY_TOKEN_PREFIX = 'gantry-deploy-';

/** The server's rules for deploy tokens (`gantry server --deploy-token-overlap/--deploy-token-max-age`). */
export interface DeployTokenPolicy {
  /** Milliseconds an older token still works after a newer one's first use. */
  overlapMs: number;
  /** A token this many milliseconds old is due for rotation by its agent; 0: never by age. */
  maxAgeMs: number;
}

/** The deploy token a request was made with, as requireAgent found it. */
export interface DeployTokenUse {
  id: string;
  /** ISO time it was made. */
  createdAt: string;
  /** ISO time of the first request made with it, null before that request is recorded (recordFirstUse). */
  firstUsedAt: string | null;
}

/** Makes and stores a new token of the cluster. @returns the token (its only copy). */
export async function insertDeployToken(db: Kysely<Database>, clusterId: string, now = new Date()): Promise<string> {
  const token = newToken(DEPLOY_TOKEN_PREFIX);
  const row: Selectable<DeployTokenTable> = {
    id: randomUUID(),
    cluster_id: clusterId,
    token_hash: hashToken(token),
    created_at: now.toISOString(),
    revoked_at: null,
    first_used_at: null,
    expires_at: null,
  };
  await db.insertInto('deploy_tokens').values(row).execute();
  return token;
}

/**
 * Makes a new deploy token for the cluster; with `revokeOthers`, every earlier one stops working at once (a leaked
 * token), else they expire an overlap after the new one's first use.
 * @returns the new token (its only copy).
 */
export async function rotateDeployToken(
  db: Kysely<Database>,
  clusterId: string,
  options: { revokeOthers: boolean },
  now = new Date(),
): Promise<string> {
  return await db.transaction().execute(async (trx) => {
    if (options.revokeOthers) {
      await trx
        .updateTable('deploy_tokens')
        .set({ revoked_at: now.toISOString() })
        .where('cluster_id', '=', clusterId)
        .where('revoked_at', 'is', null)
        .execute();
    }
    return await insertDeployToken(trx, clusterId, now);
  });
}

/**
 * Records the first request made with `token`: every older token of its cluster then expires `overlapMs` later
 * (sooner ones keep their sooner expiry), and the cluster notes which token its agent uses. A second call for the
 * same token, from a request that raced the first, changes nothing.
 */
export async function recordFirstUse(
  db: Kysely<Database>,
  clusterId: string,
  token: DeployTokenUse,
  overlapMs: number,
  now = new Date(),
): Promise<void> {
  const time = now.toISOString();
  const expiresAt = new Date(now.getTime() + overlapMs).toISOString();
  await db.transaction().execute(async (trx) => {
    const first = await trx
      .updateTable('deploy_tokens')
      .set({ first_used_at: time })
      .where('id', '=', token.id)
      .where('first_used_at', 'is', null)
      .executeTakeFirst();
    if (first.numUpdatedRows === 0n) return;
    await trx
      .updateTable('deploy_tokens')
      .set({ expires_at: expiresAt })
      .where('cluster_id', '=', clusterId)
      .where('created_at', '<', token.createdAt)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', expiresAt)]))
      .execute();
    await trx
      .updateTable('clusters')
      .set({ deploy_token_created_at: token.createdAt })
      .where('id', '=', clusterId)
      .where((eb) => eb.or([eb('deploy_token_created_at', 'is', null), eb('deploy_token_created_at', '<', token.createdAt)]))
      .execute();
  });
}

/** Asks the cluster's agent to rotate its token at its next ping (an agent on a token made later has done so). */
export async function requestTokenRotation(db: Kysely<Database>, clusterId: string, now = new Date()): Promise<void> {
  await db.updateTable('clusters').set({ token_rotation_requested_at: now.toISOString() }).where('id', '=', clusterId).execute();
}

/**
 * Whether the agent using `token` is to rotate it: an admin asked for a rotation after the token was made, or the
 * token is `maxAgeMs` old or older (0: no maximum age). Never for a token a newer one has replaced: it only lives out
 * its overlap, and must not mint a successor that would cut off the agent on the newer one.
 */
export function rotationDue(
  cluster: { tokenRotationRequestedAt: string | null; deployTokenCreatedAt: string | null },
  token: DeployTokenUse,
  maxAgeMs: number,
  now = new Date(),
): boolean {
  if (cluster.deployTokenCreatedAt !== null && token.createdAt < cluster.deployTokenCreatedAt) return false;
  const requested = cluster.tokenRotationRequestedAt !== null && cluster.tokenRotationRequestedAt >= token.createdAt;
  const old = maxAgeMs > 0 && now.getTime() - Date.parse(token.createdAt) >= maxAgeMs;
  return requested || old;
}

/** Which of the tokens with these ids are still valid (neither revoked nor expired, their cluster not deleted). */
export async function validDeployTokens(db: Kysely<Database>, ids: readonly string[], now = new Date()): Promise<Set<string>> {
  const time = now.toISOString();
  const rows = await inChunks(ids, (chunk) =>
    db
      .selectFrom('deploy_tokens')
      .select('id')
      .where('id', 'in', chunk)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', time)]))
      .execute(),
  );
  return new Set(rows.map((row) => row.id));
}
