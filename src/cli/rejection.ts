/**
 * `gantry rejection list|delete`: the revisions rejected with `gantry service reject` (their folder content, for a
 * service or fleet-wide), and lifting one (admins); lifted content may run again when a commit or an update brings
 * it.
 */
import { Command } from 'commander';
import { addFleetOutputFlag, type FleetOutput, formatTable, printFleet, withFleetClient } from './fleet-output.ts';

export function rejectionCommand(): Command {
  const rejection = new Command('rejection');
  rejection.addCommand(
    addFleetOutputFlag(new Command('list').description('list rejected revisions, newest first (admins)')).action(
      (flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const rejections = await client.listRejections();
          printFleet(flags.output, rejections, () =>
            formatTable(
              ['ID', 'REPOSITORY', 'FOLDER', 'COMMIT', 'FOR', 'BY', 'AT', 'REASON'],
              rejections.map((r) => [
                r.id,
                r.repository,
                r.folder || '.',
                r.commit.slice(0, 12),
                r.service ? `${r.service.cluster}/${r.service.name}` : 'fleet-wide',
                r.by,
                r.at,
                r.reason,
              ]),
            ),
          );
        }),
    ),
  );
  rejection.addCommand(
    new Command('delete')
      .description('lift a rejection: the content may run again when a commit or an update brings it (admins)')
      .argument('<id>')
      .action((id: string) =>
        withFleetClient(async (client) => {
          await client.deleteRejection(id);
          process.stderr.write(`rejection ${id} lifted\n`);
        }),
      ),
  );
  return rejection;
}
