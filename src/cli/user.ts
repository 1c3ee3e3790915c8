/**
 * `gantry user create|list|update|delete` and `gantry rolebinding set|list|delete`: people and their rights on the
 * server (admins only; see docs/access.md); `gantry user password`: a user's own password. Passwords are read from
 * stdin, never argv.
 */
import { text } from 'node:stream/consumers';
import { Command, InvalidArgumentError } from 'commander';
import type { RoleBindingBody } from '../client/fleet-client.ts';
import { addFleetOutputFlag, type FleetOutput, formatTable, keyValueArg, printFleet, withFleetClient } from './fleet-output.ts';

const ROLES = ['admin', 'writer', 'approver', 'reader'];

export function userCommand(): Command {
  const user = new Command('user');
  user.addCommand(
    addFleetOutputFlag(
      new Command('create')
        .description('create a user; the password is read from stdin')
        .argument('<name>', 'user name')
        .option('--group <group>', 'a group the user is in (repeatable)', collect, []),
    ).action((name: string, flags: { group: string[]; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const created = await client.createUser({ name, password: await passwordFromStdin(), groups: flags.group });
        printFleet(flags.output, created, () => `user ${created.name} created\n`);
      }),
    ),
  );
  user.addCommand(
    addFleetOutputFlag(new Command('list').description('list users and their groups')).action((flags: { output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const users = await client.listUsers();
        printFleet(flags.output, users, () =>
          formatTable(
            ['NAME', 'GROUPS', 'CREATED'],
            users.map((u) => [u.name, u.groups.join(','), u.createdAt]),
          ),
        );
      }),
    ),
  );
  user.addCommand(
    addFleetOutputFlag(
      new Command('update')
        .description("change a user's groups, or (with --password-stdin) password")
        .argument('<name>', 'user name')
        .option('--group <group>', 'the groups the user is in from now on (repeatable)', collect)
        .option('--password-stdin', 'read a new password from stdin'),
    ).action((name: string, flags: { group?: string[]; passwordStdin?: boolean; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const updated = await client.updateUser(name, {
          ...(flags.group ? { groups: flags.group } : {}),
          ...(flags.passwordStdin ? { password: await passwordFromStdin() } : {}),
        });
        printFleet(flags.output, updated, () => `user ${updated.name} updated\n`);
      }),
    ),
  );
  user.addCommand(
    addFleetOutputFlag(
      new Command('password').description(
        'change your own password: the current one and the new one on two lines of stdin; your other sessions end',
      ),
    ).action((flags: { output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const [current, next] = await passwordsFromStdin();
        await client.changeOwnPassword(current, next);
        printFleet(flags.output, { passwordChanged: true }, () => 'password changed; your other sessions have ended\n');
      }),
    ),
  );
  user.addCommand(
    new Command('delete')
      .description('delete a user, ending their sessions and revoking their tokens')
      .argument('<name>', 'user name')
      .action((name: string) =>
        withFleetClient(async (client) => {
          await client.deleteUser(name);
          process.stderr.write(`user ${name} deleted\n`);
        }),
      ),
  );
  return user;
}

interface BindingFlags {
  role: string;
  user: string[];
  group: string[];
  cluster: string[];
  clusterTag: Record<string, string>;
  service: string[];
  pipeline: string[];
  repository: string[];
  output: FleetOutput;
}

export function roleBindingCommand(): Command {
  const bindings = new Command('rolebinding');
  bindings.addCommand(
    addFleetOutputFlag(
      new Command('set')
        .description('create or replace a role binding; without a scope flag it covers everything')
        .argument('<name>', 'binding name')
        .requiredOption('--role <role>', ROLES.join(', '), roleArg)
        .option('--user <name>', 'a user it binds (repeatable)', collect, [])
        .option('--group <name>', 'a group it binds (repeatable)', collect, [])
        .option('--cluster <name>', 'scope: a cluster by name (repeatable)', collect, [])
        .option('--cluster-tag <key=value>', 'scope: clusters with all these tags (repeatable)', keyValueArg, {})
        .option(
          '--service <name>',
          'scope: services by name; with --cluster/--cluster-tag only there, else existing ones anywhere (repeatable)',
          collect,
          [],
        )
        .option('--pipeline <name>', 'scope: a pipeline by name (repeatable)', collect, [])
        .option(
          '--repository <id-or-url>',
          'scope: a git repository or Helm chart URL services may be pointed at (repeatable)',
          collect,
          [],
        ),
    ).action((name: string, flags: BindingFlags) =>
      withFleetClient(async (client) => {
        const binding = await client.setRoleBinding(name, bindingBody(flags));
        printFleet(flags.output, binding, () => `role binding ${binding.name} set: ${binding.role} ${describeScope(binding.scope)}\n`);
      }),
    ),
  );
  bindings.addCommand(
    addFleetOutputFlag(new Command('list').description('list role bindings')).action((flags: { output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const all = await client.listRoleBindings();
        printFleet(flags.output, all, () =>
          formatTable(
            ['NAME', 'ROLE', 'SUBJECTS', 'SCOPE'],
            all.map((b) => [b.name, b.role, b.subjects.map((s) => `${s.kind}:${s.name}`).join(','), describeScope(b.scope)]),
          ),
        );
      }),
    ),
  );
  bindings.addCommand(
    new Command('delete')
      .description('delete a role binding')
      .argument('<name>', 'binding name')
      .action((name: string) =>
        withFleetClient(async (client) => {
          await client.deleteRoleBinding(name);
          process.stderr.write(`role binding ${name} deleted\n`);
        }),
      ),
  );
  return bindings;
}

function bindingBody(flags: BindingFlags): RoleBindingBody {
  const subjects = [
    ...flags.user.map((name) => ({ kind: 'user' as const, name })),
    ...flags.group.map((name) => ({ kind: 'group' as const, name })),
  ];
  if (subjects.length === 0) throw new InvalidArgumentError('give at least one --user or --group');
  const scope = {
    ...(flags.cluster.length ? { clusters: flags.cluster } : {}),
    ...(Object.keys(flags.clusterTag).length ? { clusterTags: flags.clusterTag } : {}),
    ...(flags.service.length ? { services: flags.service } : {}),
    ...(flags.pipeline.length ? { pipelines: flags.pipeline } : {}),
    ...(flags.repository.length ? { repositories: flags.repository } : {}),
  };
  return { role: flags.role as RoleBindingBody['role'], subjects, scope: Object.keys(scope).length ? scope : 'all' };
}

function describeScope(scope: RoleBindingBody['scope']): string {
  if (scope === 'all') return 'everywhere';
  const parts = [
    ...(scope.clusters ?? []).map((name) => `cluster ${name}`),
    ...Object.entries(scope.clusterTags ?? {}).map(([key, value]) => `clusters tagged ${key}=${value}`),
    ...(scope.services ?? []).map((name) => `service ${name}`),
    ...(scope.pipelines ?? []).map((name) => `pipeline ${name}`),
    ...(scope.repositories ?? []).map((name) => `repository ${name}`),
  ];
  return `on ${parts.join(', ')}`;
}

function roleArg(value: string): string {
  if (!ROLES.includes(value)) throw new InvalidArgumentError(`'${value}' is not one of ${ROLES.join(', ')}`);
  return value;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** @throws Error when stdin is a terminal (nothing piped) or empty. */
/** The current and the new password, the first two lines of stdin. */
async function passwordsFromStdin(): Promise<[string, string]> {
  if (process.stdin.isTTY) throw new Error('pipe the current and the new password in on two lines of stdin');
  const [current, next] = (await text(process.stdin)).split(/\r?\n/);
  if (!current || !next) throw new Error('give the current password on the first line of stdin and the new one on the second');
  return [current, next];
}

async function passwordFromStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new Error('pipe the password in on stdin (e.g. gantry user create NAME < password-file)');
  const password = (await text(process.stdin)).replace(/\r?\n$/, '');
  if (!password) throw new Error('no password on stdin');
  return password;
}
