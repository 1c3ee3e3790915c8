/**
 * `gantry context set|list|get|delete`: service contexts on the Gantry server (Plural's ServiceContext), named JSON
 * configuration that services bind with `--context NAME` and read in Liquid templates as `contexts.NAME`. Setting a
 * context that services bind gives each of them a new revision. Contexts are not secret: every reader sees them.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import type { ApiServiceContext } from '../client/fleet-client.ts';
import { parseYaml } from '../yaml.ts';
import { addFleetOutputFlag, type FleetOutput, formatTable, keyValueArg, printFleet, withFleetClient } from './fleet-output.ts';

interface SetFlags {
  fromFile?: string;
  set: Record<string, string>;
  output: FleetOutput;
}

export function contextCommand(): Command {
  const context = new Command('context');

  context.addCommand(
    addFleetOutputFlag(
      new Command('set')
        .description('create a context or replace its configuration; services bound to it get a new revision')
        .argument('<name>')
        .option('--from-file <file>', 'the configuration: a YAML or JSON object')
        .option('--set <key=value>', 'a string value (repeatable; applied over --from-file)', keyValueArg, {}),
    ).action((name: string, flags: SetFlags) =>
      withFleetClient(async (client) => {
        const saved = await client.setContext(name, { configuration: await configurationFromFlags(flags) });
        printFleet(flags.output, saved, () => formatContext(saved));
      }),
    ),
  );

  context.addCommand(
    addFleetOutputFlag(new Command('list').description('list contexts and what binds them')).action((flags: { output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const contexts = await client.listContexts();
        printFleet(flags.output, contexts, () =>
          formatTable(
            ['NAME', 'KEYS', 'BOUND BY', 'UPDATED'],
            contexts.map((c) => [c.name, Object.keys(c.configuration).sort().join(','), c.boundBy.join(','), c.updatedAt]),
          ),
        );
      }),
    ),
  );

  context.addCommand(
    addFleetOutputFlag(new Command('get').description('show a context and its configuration').argument('<name>')).action(
      (name: string, flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const found = await client.getContext(name);
          printFleet(flags.output, found, () => formatContext(found));
        }),
    ),
  );

  context.addCommand(
    new Command('delete')
      .description('delete a context no service or global service binds')
      .argument('<name>')
      .action((name: string) =>
        withFleetClient(async (client) => {
          await client.deleteContext(name);
          process.stderr.write(`context ${name} deleted\n`);
        }),
      ),
  );
  return context;
}

/** @throws Error when neither flag is given, or the file does not hold a YAML or JSON object. */
async function configurationFromFlags(flags: SetFlags): Promise<Record<string, unknown>> {
  if (flags.fromFile === undefined && Object.keys(flags.set).length === 0) throw new Error('set needs --from-file or --set key=value');
  const fromFile = flags.fromFile === undefined ? {} : parseYaml(await readFile(flags.fromFile, 'utf8'), flags.fromFile);
  if (typeof fromFile !== 'object' || fromFile === null || Array.isArray(fromFile)) {
    throw new Error(`${flags.fromFile}: the configuration must be an object of keys and values`);
  }
  return { ...(fromFile as Record<string, unknown>), ...flags.set };
}

function formatContext(context: ApiServiceContext): string {
  const head = [
    ['name', context.name],
    ['bound by', context.boundBy.join(', ') || 'nothing'],
    ['updated', context.updatedAt],
  ]
    .map(([key, value]) => `${`${key}:`.padEnd(10)}${value}\n`)
    .join('');
  return `${head}configuration:\n${JSON.stringify(context.configuration, null, 2).replace(/^/gm, '  ')}\n`;
}
