/**
 * Plural's read and write bindings of a resource (binding_types.go) as the server's role bindings: one per access,
 * named `operator.<kind>.<namespace>.<name>.<read|write>`, `read` as the reader role and `write` as the kind's write
 * role, within the scope of the server object the resource owns (a service on its cluster, a cluster, a pipeline;
 * rights.ts decides what that scope allows). Subjects are users by `userEmail` (Gantry's user names) and groups by
 * `groupName`; Plural's console ids (`id`, `UserID`, `groupID`) name nobody here, so an entry with only those is
 * named as not acted on. Only a resource that owns its server object binds (fleet-object.ts): an adopted one was not
 * made by whoever wrote the resource, who could otherwise grant themselves rights on someone else's cluster.
 */
import { ApiError, type FleetClient, type RoleBindingBody } from '../client/fleet-client.ts';
import type { Role, ScopeSelector } from '../rights.ts';
import type { UnsupportedField } from './unsupported-fields.ts';

/** Plural's Bindings. */
export interface PluralBindings {
  read?: PluralBinding[] | undefined;
  write?: PluralBinding[] | undefined;
}

interface PluralBinding {
  id?: string | undefined;
  UserID?: string | undefined;
  userEmail?: string | undefined;
  groupID?: string | undefined;
  groupName?: string | undefined;
}

/** What a kind's bindings cover: the scope of its server object, and the role `write` grants there. */
export interface BindingTarget {
  scope: ScopeSelector;
  writeRole: Role;
}

const ACCESSES = ['read', 'write'] as const;
type Access = (typeof ACCESSES)[number];

/** The role bindings of a resource, by access; `unmapped` are the entries naming nobody Gantry knows. */
export interface DesiredBindings {
  subjects: Record<Access, RoleBindingBody['subjects']>;
  unmapped: UnsupportedField[];
}

/** The subjects each access names, from the spec's `bindings`. */
export function desiredBindings(bindings: PluralBindings | undefined): DesiredBindings {
  const unmapped: UnsupportedField[] = [];
  const subjectsOf = (access: Access) =>
    (bindings?.[access] ?? []).flatMap((binding, index) => {
      const subjects: RoleBindingBody['subjects'] = [
        ...(binding.userEmail ? [{ kind: 'user' as const, name: binding.userEmail }] : []),
        ...(binding.groupName ? [{ kind: 'group' as const, name: binding.groupName }] : []),
      ];
      if (subjects.length === 0) {
        unmapped.push({
          path: `spec.bindings.${access}[${index}]`,
          reason: "names no user (userEmail) or group (groupName): ids of Plural's console name nobody here",
          blocks: false,
        });
      }
      return subjects;
    });
  return { subjects: { read: subjectsOf('read'), write: subjectsOf('write') }, unmapped };
}

/** The role binding name of a resource's access. */
export function bindingName(kind: string, namespace: string, name: string, access: Access): string {
  return `operator.${kind.toLowerCase()}.${namespace}.${name}.${access}`;
}

/**
 * Puts the role binding of each access that names subjects, and deletes that of each access that names none.
 * @param names the role binding name of each access (bindingName)
 */
export async function syncBindings(
  client: FleetClient,
  names: (access: Access) => string,
  desired: DesiredBindings,
  target: BindingTarget,
): Promise<void> {
  for (const access of ACCESSES) {
    const subjects = desired.subjects[access];
    if (subjects.length === 0) await deleteBinding(client, names(access));
    else
      await client.setRoleBinding(names(access), { role: access === 'read' ? 'reader' : target.writeRole, subjects, scope: target.scope });
  }
}

/** Deletes the role bindings of every access (the resource is deleted). */
export async function deleteBindings(client: FleetClient, names: (access: Access) => string): Promise<void> {
  for (const access of ACCESSES) await deleteBinding(client, names(access));
}

async function deleteBinding(client: FleetClient, name: string): Promise<void> {
  await client.deleteRoleBinding(name).catch((error: unknown) => {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
  });
}
