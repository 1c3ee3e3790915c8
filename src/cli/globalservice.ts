/**
 * `gantry globalservice create|list|get|preview|rollout|delete`: services kept on every cluster whose tags (and distro) match, as
 * Plural's GlobalService. A change that would delete more than the server's share of one global service's copies is
 * held (the server names them); `--confirm` goes ahead.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import type { GlobalServiceUpdateBody } from '../api/global-services.ts';
import type { ApiGlobalService, ApiRollout } from '../client/fleet-client.ts';
import type { RolloutSpec } from '../api/rollouts.ts';
import { parseDuration } from '../duration.ts';
import { parseYaml } from '../yaml.ts';
import { awaitPreviews, formatPreview, previewExitCode } from './preview-output.ts';
import { formatRollout, rolloutActions } from './rollout-output.ts';
import { addFleetOutputFlag, type FleetOutput, formatTable, keyValueArg, printFleet, withFleetClient } from './fleet-output.ts';
import { addSourceFlags, rendererFromFlags, requiredSource, type SourceFlags } from './source-flags.ts';

interface CreateFlags extends SourceFlags {
  tag: Record<string, string>;
  rolloutFile?: string;
  distro?: string;
  ignoreCluster: string[];
  serviceName?: string;
  output: FleetOutput;
}

export function globalServiceCommand(): Command {
  const command = new Command('globalservice');

  command.addCommand(
    addFleetOutputFlag(
      addSourceFlags(
        new Command('create')
          .description('create a global service: a copy of the service goes to every selected cluster, now and later')
          .argument('<name>')
          .option('--tag <key=value>', 'select clusters with this tag (repeatable; all must match)', keyValueArg, {})
          .option('--distro <distro>', 'select only clusters of this distro')
          .option(
            '--ignore-cluster <handle>',
            'leave out this cluster, whatever its tags (repeatable)',
            (value: string, previous: string[]) => [...previous, value],
            [],
          )
          .option('--service-name <name>', 'name of the copies (default: the global service name)')
          .option(
            '--rollout-file <file>',
            'new revisions go wave by wave: {waves, batchSize|maxUnavailable, soak, onFailure}, YAML or JSON',
          ),
      ),
    ).action((name: string, flags: CreateFlags) =>
      withFleetClient(async (client) => {
        const created = await client.createGlobalService({
          name,
          tags: flags.tag,
          distro: flags.distro,
          ...(flags.ignoreCluster.length > 0 ? { ignoreClusters: flags.ignoreCluster } : {}),
          template: {
            name: flags.serviceName ?? name,
            ...(await requiredSource(flags)),
            renderer: rendererFromFlags(flags),
            configuration: flags.config,
          },
          ...(flags.rolloutFile ? { rollout: await readRollout(flags.rolloutFile) } : {}),
        });
        printFleet(flags.output, created, () => formatGlobalService(created));
      }),
    ),
  );

  command.addCommand(
    addFleetOutputFlag(new Command('list').description('list global services and where their copies are')).action(
      (flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const globals = await client.listGlobalServices();
          printFleet(flags.output, globals, () =>
            formatTable(
              ['NAME', 'SELECTOR', 'SERVICE', 'CLUSTERS'],
              globals.map((g) => [
                g.name,
                selector(g),
                `${g.template.namespace}/${g.template.name}`,
                g.services.map((s) => s.cluster).join(','),
              ]),
            ),
          );
        }),
    ),
  );

  command.addCommand(
    addFleetOutputFlag(new Command('get').description('show a global service').argument('<name>')).action(
      (name: string, flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const found = await client.getGlobalService(name);
          printFleet(flags.output, found, () => formatGlobalService(found));
        }),
    ),
  );

  command.addCommand(
    addFleetOutputFlag(
      new Command('preview')
        .description("what a template edit would do on every copy's cluster: the agents' server-side dry runs; nothing is changed")
        .argument('<name>')
        .requiredOption('--from-file <file>', 'the whole new template, YAML or JSON, as PATCH /v1/globalservices/NAME takes it')
        .option('--timeout <duration>', 'how long to wait for the agents', '5m'),
    ).action((name: string, flags: { fromFile: string; timeout: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const template = parseYaml(await readFile(flags.fromFile, 'utf8'), flags.fromFile) as GlobalServiceUpdateBody['template'];
        const previews = await awaitPreviews(client, await client.previewGlobalService(name, template), parseDuration(flags.timeout));
        printFleet(flags.output, previews, () => previews.map(formatPreview).join('') || `global service ${name} has no copies\n`);
        process.exitCode = previewExitCode(previews);
      }),
    ),
  );

  command.addCommand(rolloutCommand());

  command.addCommand(
    new Command('delete')
      .description('delete a global service and, unless --detach, its copies (their agents delete the objects)')
      .argument('<name>')
      .option('--detach', 'forget the copies and leave their objects running')
      .option('--confirm', 'go ahead even when that deletes more than the allowed share of copies')
      .action((name: string, flags: { detach?: boolean; confirm?: boolean }) =>
        withFleetClient(async (client) => {
          await client.deleteGlobalService(name, { detach: flags.detach ?? false, confirm: flags.confirm ?? false });
          process.stderr.write(`global service ${name} deleted\n`);
        }),
      ),
  );
  return command;
}

/** `gantry globalservice rollout status|pause|resume|abort|set|unset NAME`. */
function rolloutCommand(): Command {
  const rollout = new Command('rollout').description("a global service's progressive rollout of its new revisions");
  rollout.addCommand(
    addFleetOutputFlag(
      new Command('status').description('which clusters are at which revision, and why it waits').argument('<name>'),
    ).action((name: string, flags: { output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const found = await client.getRollout(name);
        printFleet(flags.output, found, () => formatRollout(found));
      }),
    ),
  );
  for (const [action, description] of rolloutActions) {
    rollout.addCommand(
      addFleetOutputFlag(new Command(action).description(`${description} (admins)`).argument('<name>')).action(
        (name: string, flags: { output: FleetOutput }) =>
          withFleetClient(async (client) => {
            const changed = await client.rolloutAction(name, action);
            printFleet(flags.output, changed, () => formatRollout(changed));
          }),
      ),
    );
  }
  rollout.addCommand(
    addFleetOutputFlag(
      new Command('set')
        .description("declare how the global service's new revisions roll out, from a YAML or JSON file")
        .argument('<name>')
        .requiredOption(
          '--from-file <file>',
          '{waves [{name, tags|clusters}], batchSize|maxUnavailable, soak, interval, prometheus, progressDeadline, onFailure}',
        ),
    ).action((name: string, flags: { fromFile: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const updated = await client.updateGlobalService(name, { rollout: await readRollout(flags.fromFile) }, false);
        printFleet(flags.output, updated, () => formatGlobalService(updated));
      }),
    ),
  );
  rollout.addCommand(
    addFleetOutputFlag(new Command('unset').description('new revisions go to every copy at once again').argument('<name>')).action(
      (name: string, flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const updated = await client.updateGlobalService(name, { rollout: null }, false);
          printFleet(flags.output, updated, () => formatGlobalService(updated));
        }),
    ),
  );
  return rollout;
}

async function readRollout(file: string): Promise<RolloutSpec> {
  return parseYaml(await readFile(file, 'utf8'), file) as RolloutSpec;
}

function selector(global: ApiGlobalService): string {
  const tags = Object.entries(global.tags).map(([key, value]) => `${key}=${value}`);
  const ignored = global.ignoreClusters.map((handle) => `not ${handle}`);
  return [...tags, ...(global.distro ? [`distro=${global.distro}`] : []), ...ignored].join(',');
}

function formatGlobalService(global: ApiGlobalService): string {
  const rows: Array<[string, string]> = [
    ['name', global.name],
    ['selector', selector(global)],
    ['service', `${global.template.namespace}/${global.template.name}`],
    ...(global.template.git ? [['source', `${global.template.git.ref} ${global.template.git.folder}`] as [string, string]] : []),
    ...(global.template.helm
      ? [['chart', `${global.template.helm.chart} ${global.template.helm.version} from ${global.template.helm.url}`] as [string, string]]
      : []),
    ['clusters', global.services.map((s) => `${s.cluster} (${s.deleting ? 'deleting' : s.status})`).join(', ')],
  ];
  return rows.map(([key, value]) => `${`${key}:`.padEnd(10)}${value}\n`).join('');
}
