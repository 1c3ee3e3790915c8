/**
 * The checks a service's sources pass before the server fetches them for a request (issue 39 §4): the caller's
 * right on the git repository and on the Helm chart URL (rights.ts `mayUseSource`), then the URL's addresses
 * (outbound.ts). Only sources the request changes are checked, so a writer changing a service's values keeps the
 * repository an admin chose for it.
 */
import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { mayUseSource } from '../rights.ts';
import { getRepository } from '../store/repositories.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { ServiceSpec } from '../store/services.ts';
import { requestUser } from './auth.ts';
import { HttpError } from '../http/errors.ts';
import { checkOutboundUrl, type OutboundPolicy } from './outbound.ts';

/**
 * @param spec the checked spec the request asks for; `current` the one stored before, on an update.
 * @param field the request's name of the source, e.g. `body` or `body.template`.
 * @throws HttpError 403 naming the repository or chart URL the caller has no right on; 400 naming `<field>.helm.url`
 *   and the address when it resolves to a special address the server's allow-list does not permit.
 */
export async function checkSourceRights(
  request: FastifyRequest,
  deps: { db: Kysely<Database>; box: SecretBox; outbound: OutboundPolicy },
  spec: ServiceSpec,
  current: ServiceSpec | undefined,
  field: string,
): Promise<void> {
  const user = requestUser(request);
  const refuse = (what: string) =>
    new HttpError(403, `${user.kind} ${user.name} may not use ${what}: it needs a role binding whose scope names it, or all`);
  if (spec.repositoryId !== undefined && spec.repositoryId !== current?.repositoryId) {
    const repository = await getRepository(deps.db, deps.box, spec.repositoryId);
    if (!mayUseSource(user.grants, repository)) throw refuse(`repository ${repository.url}`);
  }
  // Each extra source's repository too: a writer adding one must have a right on it, as on the service's own.
  const known = new Set(current?.sources?.map((source) => source.repositoryId));
  for (const repositoryId of new Set(spec.sources?.map((source) => source.repositoryId))) {
    if (known.has(repositoryId)) continue;
    const repository = await getRepository(deps.db, deps.box, repositoryId);
    if (!mayUseSource(user.grants, repository)) throw refuse(`repository ${repository.url}`);
  }
  if (spec.helm && spec.helm.url !== current?.helm?.url) {
    if (!mayUseSource(user.grants, { url: spec.helm.url })) throw refuse(`chart URL ${spec.helm.url}`);
    await checkOutboundUrl(spec.helm.url, deps.outbound, `${field}.helm.url`);
  }
}
