/**
 * `gantry audit`: the server's audit log, newest first (admins): who did what, on what, and what the server
 * answered.
 */
import { Command, InvalidArgumentError } from 'commander';
import { addFleetOutputFlag, type FleetOutput, formatTable, printFleet, withFleetClient } from './fleet-output.ts';

export function auditCommand(): Command {
  return addFleetOutputFlag(new Command('audit').option('--limit <n>', 'at most this many events', limitArg, 50)).action(
    (flags: { limit: number; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const events = await client.listAuditEvents(flags.limit);
        printFleet(flags.output, events, () =>
          formatTable(
            ['TIME', 'ACTOR', 'ACTION', 'TARGET', 'STATUS'],
            events.map((e) => [e.at, e.actor, e.action.split(' ')[0] ?? e.action, e.target, String(e.status)]),
          ),
        );
      }),
  );
}

function limitArg(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new InvalidArgumentError(`'${value}' is not a number from 1 to 10000`);
  return limit;
}
