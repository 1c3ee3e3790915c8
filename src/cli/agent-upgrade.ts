/**
 * `gantry agent upgrade` and `gantry agent rollout status|pause|resume|abort`: the agents the server keeps moved to a
 * version wave by wave (POST /v1/agents/rollout): a canary cluster first, then the rest in batches; a cluster whose
 * new agent does not ping with the version within `--timeout` fails the rollout, and the clusters it changed go back.
 */
import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import type { RolloutSpec } from '../api/rollouts.ts';
import type { ApiRollout, FleetClient } from '../client/fleet-client.ts';
import { sleep } from '../sleep.ts';
import { parseYaml } from '../yaml.ts';
import { addFleetOutputFlag, type FleetOutput, printFleet, withFleetClient } from './fleet-output.ts';
import { durationArg, positiveIntegerArg } from './options.ts';
import { formatRollout, rolloutActions } from './rollout-output.ts';

interface UpgradeFlags {
  canary: string[];
  batchSize?: number;
  timeout: string;
  soak: string;
  onFailure: 'rollback' | 'pause';
  rolloutFile?: string;
  wait?: boolean;
  output: FleetOutput;
}

/** The states a rollout ends in. */
const ENDED = new Set(['DONE', 'FAILED', 'ABORTED', 'SUPERSEDED']);

export function agentUpgradeCommand(): Command {
  return addFleetOutputFlag(
    new Command('upgrade')
      .description(
        'upgrade every agent the server keeps (its service gantry-agent) to a version, a canary cluster first, then the rest in batches (admins)',
      )
      .argument('[version]', "the agents' version (an image tag); default the server's own")
      .option('--canary <cluster>', 'a cluster of the first wave (repeatable); default the first cluster by name', collect, [])
      .option('--batch-size <count>', 'clusters upgraded at once after the canary (default a quarter of them)', positiveIntegerArg)
      .option(
        '--timeout <duration>',
        "how long a cluster's new agent has to ping with the version before the rollout fails",
        durationText,
        '5m',
      )
      .option('--soak <duration>', 'how long each wave stays healthy before the next starts', durationText, '0s')
      .addOption(
        new Option('--on-failure <what>', 'rollback: the changed clusters go back; pause: stop where it failed')
          .choices(['rollback', 'pause'])
          .default('rollback'),
      )
      .option('--rollout-file <file>', 'the whole rollout (waves, batchSize, soak, progressDeadline, onFailure) from YAML or JSON instead')
      .option('--wait', 'return once the rollout is done (exit 0) or failed, aborted or superseded (exit 1)'),
  ).action((version: string | undefined, flags: UpgradeFlags) =>
    withFleetClient(async (client) => {
      const rollout = flags.rolloutFile
        ? (parseYaml(await readFile(flags.rolloutFile, 'utf8'), flags.rolloutFile) as RolloutSpec)
        : await defaultSpec(client, flags);
      const started = await client.startAgentRollout({ ...(version ? { version } : {}), rollout });
      const shown = flags.wait ? await rolloutEnded(client, started) : started;
      printFleet(flags.output, shown, () => formatRollout(shown));
      if (flags.wait && shown.state !== 'DONE') process.exitCode = 1;
    }),
  );
}

/** `gantry agent rollout status|pause|resume|abort`. */
export function agentRolloutCommand(): Command {
  const rollout = new Command('rollout').description("the agents' newest upgrade, wave by wave (admins)");
  rollout.addCommand(
    addFleetOutputFlag(new Command('status').description('which clusters run which version, and why it waits')).action(
      (flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const found = await client.getAgentRollout();
          printFleet(flags.output, found, () => formatRollout(found));
        }),
    ),
  );
  for (const [action, description] of rolloutActions) {
    rollout.addCommand(
      addFleetOutputFlag(new Command(action).description(description)).action((flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const changed = await client.agentRolloutAction(action);
          printFleet(flags.output, changed, () => formatRollout(changed));
        }),
      ),
    );
  }
  return rollout;
}

/**
 * The rollout the flags describe: the canary wave (the named clusters, else the first cluster by name whose agent the
 * server keeps), then the rest in batches.
 * @throws Error when no canary is named and no cluster has an agent service.
 */
async function defaultSpec(client: FleetClient, flags: UpgradeFlags): Promise<RolloutSpec> {
  const canary =
    flags.canary.length > 0
      ? flags.canary
      : (await client.listServices())
          .filter((service) => service.agent)
          .map((service) => service.cluster)
          .sort()
          .slice(0, 1);
  if (canary.length === 0) throw new Error("no cluster's agent runs as the install's Deployment: there is no agent to upgrade");
  return {
    waves: [{ name: 'canary', clusters: canary }],
    ...(flags.batchSize ? { batchSize: flags.batchSize } : { maxUnavailable: '25%' }),
    soak: flags.soak,
    progressDeadline: flags.timeout,
    onFailure: flags.onFailure,
  };
}

/** The rollout once it ended, looked at every second, with each change of state or wave on stderr. */
async function rolloutEnded(client: FleetClient, started: ApiRollout): Promise<ApiRollout> {
  let last = '';
  for (let rollout = started; ; rollout = await client.getAgentRollout()) {
    const now = `${rollout.state} ${rollout.waves[rollout.wave] ?? ''}`;
    if (now !== last)
      process.stderr.write(
        `rollout of the agents to ${rollout.agentVersion}: ${rollout.state}, wave ${rollout.waves[rollout.wave] ?? 'none'}\n`,
      );
    last = now;
    if (ENDED.has(rollout.state) && rollout.id === started.id) return rollout;
    if (rollout.id !== started.id)
      return { ...started, state: 'SUPERSEDED', reason: `superseded by the rollout to ${rollout.agentVersion}` };
    await sleep(1_000);
  }
}

/** A duration as the API takes it (Go's form, e.g. 5m), checked here. */
function durationText(text: string): string {
  durationArg(text);
  return text;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
