/**
 * Role bindings: a role granted to subjects (users and groups, by name) within a scope, as Kubernetes'
 * RoleBindings grant a role to subjects. What a role and a scope allow is rights.ts's to say.
 */
import type { Kysely } from 'kysely';
import type { Grant, Role, Scope } from '../rights.ts';
import { NotFoundError } from './errors.ts';
import type { Database, RoleBindingTable } from './schema.ts';

export interface Subject {
  kind: 'user' | 'group';
  name: string;
}

export interface RoleBinding {
  name: string;
  role: Role;
  subjects: Subject[];
  scope: Scope;
  createdAt: string;
  updatedAt: string;
}

/** Creates or replaces the binding `name`. */
export async function putRoleBinding(
  db: Kysely<Database>,
  name: string,
  binding: { role: Role; subjects: Subject[]; scope: Scope },
  now = new Date(),
): Promise<RoleBinding> {
  const time = now.toISOString();
  const values = { role: binding.role, subjects: JSON.stringify(binding.subjects), scope: JSON.stringify(binding.scope), updated_at: time };
  await db
    .insertInto('role_bindings')
    .values({ name, ...values, created_at: time })
    .onConflict((conflict) => conflict.column('name').doUpdateSet(values))
    .execute();
  return await getRoleBinding(db, name);
}

/** @throws NotFoundError */
export async function getRoleBinding(db: Kysely<Database>, name: string): Promise<RoleBinding> {
  const row = await db.selectFrom('role_bindings').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new NotFoundError('role binding', name);
  return toRoleBinding(row);
}

export async function listRoleBindings(db: Kysely<Database>): Promise<RoleBinding[]> {
  return (await db.selectFrom('role_bindings').selectAll().orderBy('name').execute()).map(toRoleBinding);
}

/** @throws NotFoundError */
export async function deleteRoleBinding(db: Kysely<Database>, name: string): Promise<void> {
  const deleted = await db.deleteFrom('role_bindings').where('name', '=', name).executeTakeFirst();
  if (Number(deleted.numDeletedRows) === 0) throw new NotFoundError('role binding', name);
}

/** What the bindings naming the user or one of their groups grant. */
export async function grantsOf(db: Kysely<Database>, user: { name: string; groups: readonly string[] }): Promise<Grant[]> {
  const bindings = await listRoleBindings(db);
  const names = (subject: Subject) => (subject.kind === 'user' ? subject.name === user.name : user.groups.includes(subject.name));
  return bindings.filter((binding) => binding.subjects.some(names)).map(({ role, scope }) => ({ role, scope }));
}

function toRoleBinding(row: RoleBindingTable): RoleBinding {
  return {
    name: row.name,
    role: row.role as Role,
    subjects: JSON.parse(row.subjects) as Subject[],
    scope: JSON.parse(row.scope) as Scope,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
