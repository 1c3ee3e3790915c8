/**
 * `gantry replica list`: the server replicas that are up and the git repositories each fetches (see
 * server/replica-set.ts for how they are spread).
 */
import { Command } from 'commander';
import { addFleetOutputFlag, type FleetOutput, formatTable, printFleet, withFleetClient } from './fleet-output.ts';

export function replicaCommand(): Command {
  const replica = new Command('replica');
  replica.addCommand(
    addFleetOutputFlag(new Command('list').description('list live replicas and the repositories each fetches')).action(
      (flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const replicas = await client.listReplicas();
          printFleet(flags.output, replicas, () =>
            formatTable(
              ['ID', 'URL', 'STARTED', 'HEARTBEAT', 'REPOSITORIES'],
              replicas.map((r) => [r.id, r.url, r.startedAt, r.heartbeatAt, String(r.repositories.length)]),
            ),
          );
        }),
    ),
  );
  return replica;
}
