/**
 * `gantry service create|update|list|get|revisions|rollback|delete`: a cluster's services on the Gantry server,
 * as Plural's `plural cd services …`. `--wait` waits until the service is healthy at its newest revision and, on
 * timeout, says why not (status, errors, components not running).
 */
import { Command, InvalidArgumentError } from 'commander';
import { type ApiRejectOutcome, type ApiService, type ApiServiceDocs, type FleetClient } from '../client/fleet-client.ts';
import path from 'node:path';
import { parseDuration } from '../duration.ts';
import { sleep } from '../sleep.ts';
import { awaitPreviews, formatPreview, previewExitCode } from './preview-output.ts';
import { addFleetOutputFlag, type FleetOutput, formatTable, printFleet, withFleetClient } from './fleet-output.ts';
import {
  addSourceFlags,
  helmFromFlags,
  rendererFromFlags,
  requiredSource,
  secretValuesFromFlags,
  type SourceFlags,
} from './source-flags.ts';

interface ServiceFlags extends SourceFlags {
  dependsOn: string[];
  protect?: boolean;
  selfHeal?: boolean;
}

interface WaitFlags {
  wait?: boolean;
  timeout: string;
  output: FleetOutput;
}

const DEFAULT_TIMEOUT = '5m';

export function serviceCommand(): Command {
  const service = new Command('service');

  service.addCommand(
    withWait(
      withSource(
        new Command('create')
          .description('create a service on a cluster: its source is a folder at a git ref or a Helm chart; a new revision starts at once')
          .argument('<name>')
          .requiredOption('--cluster <name>', 'the cluster that runs it'),
      ),
    ).action((name: string, flags: ServiceFlags & WaitFlags & { cluster: string }) =>
      withFleetClient(async (client) => {
        const created = await client.createService(flags.cluster, {
          name,
          ...(await requiredSource(flags)),
          renderer: rendererFromFlags(flags),
          configuration: flags.config,
          dependencies: flags.dependsOn,
          protect: flags.protect ?? false,
          ...(flags.selfHeal === undefined ? {} : { syncConfig: { selfHeal: flags.selfHeal } }),
        });
        await finish(client, created, flags);
      }),
    ),
  );

  service.addCommand(
    withWait(
      withSource(
        new Command('update')
          .description('change a service; a change of source or configuration makes a new revision')
          .argument('<name>')
          .requiredOption('--cluster <name>'),
      ),
    ).action((name: string, flags: ServiceFlags & WaitFlags & { cluster: string }) =>
      withFleetClient(async (client) => {
        const git = flags.ref !== undefined || flags.folder !== undefined ? { ref: flags.ref, folder: flags.folder } : undefined;
        // The API replaces syncConfig whole: the flag changes one field of the current one.
        const syncConfig =
          flags.selfHeal === undefined
            ? undefined
            : { ...(await client.getService(flags.cluster, name)).syncConfig, selfHeal: flags.selfHeal };
        const updated = await client.updateService(flags.cluster, name, {
          namespace: flags.namespace,
          repository: flags.repo,
          git,
          helm: await helmFromFlags(flags),
          secretValues: await secretValuesFromFlags(flags),
          renderer: flags.renderer || flags.target || Object.keys(flags.arg).length > 0 ? rendererFromFlags(flags) : undefined,
          configuration: Object.keys(flags.config).length > 0 ? flags.config : undefined,
          contexts: flags.context.length > 0 ? flags.context : undefined,
          dependencies: flags.dependsOn.length > 0 ? flags.dependsOn : undefined,
          protect: flags.protect,
          syncConfig,
        });
        await finish(client, updated, flags);
      }),
    ),
  );

  service.addCommand(
    addFleetOutputFlag(
      new Command('list').description('list services with their status').option('--cluster <name>', 'only this cluster'),
    ).action((flags: { cluster?: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const services = await client.listServices(flags.cluster);
        printFleet(flags.output, services, () =>
          formatTable(
            ['CLUSTER', 'NAME', 'NAMESPACE', 'STATUS', 'REVISION', 'APPLIED', 'COMPONENTS'],
            services.map((s) => [
              s.cluster,
              s.name,
              s.namespace,
              s.status,
              String(s.revision.number),
              s.appliedRevision === null ? '-' : String(s.appliedRevision),
              componentSummary(s),
            ]),
          ),
        );
      }),
    ),
  );

  service.addCommand(
    addFleetOutputFlag(
      new Command('get').description('show a service and its components').argument('<name>').requiredOption('--cluster <name>'),
    ).action((name: string, flags: { cluster: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const found = await client.getService(flags.cluster, name);
        printFleet(flags.output, found, () => formatService(found));
      }),
    ),
  );

  service.addCommand(
    addFleetOutputFlag(
      new Command('docs')
        .description("print a service's docs: the Markdown files below its docsPath, at its current revision")
        .argument('<name>')
        .requiredOption('--cluster <name>'),
    ).action((name: string, flags: { cluster: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const docs = await client.serviceDocs(flags.cluster, name);
        printFleet(flags.output, docs, () => formatDocs(name, docs));
      }),
    ),
  );

  service.addCommand(
    addFleetOutputFlag(
      new Command('revisions')
        .description("list a service's revisions, newest first")
        .argument('<name>')
        .requiredOption('--cluster <name>'),
    ).action((name: string, flags: { cluster: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const revisions = await client.listRevisions(flags.cluster, name);
        printFleet(flags.output, revisions, () =>
          formatTable(
            ['REVISION', 'VERSION', 'COMMIT', 'REF', 'CHART', 'CREATED', 'BY', 'MESSAGE'],
            revisions.map((r) => [
              String(r.number),
              r.version ?? '',
              (r.commit ?? '').slice(0, 12),
              r.git?.ref ?? '',
              r.helm ? `${r.helm.chart} ${r.chartVersion ?? r.helm.version}` : '',
              r.createdAt,
              r.createdBy ?? '',
              r.message ?? '',
            ]),
          ),
        );
      }),
    ),
  );

  service.addCommand(
    withWait(
      new Command('rollback')
        .description(
          'make a new revision with the content of an older one and pin the service there: newer revisions wait until `service release`',
        )
        .argument('<name>')
        .requiredOption('--cluster <name>')
        .requiredOption('--revision <n>', 'the revision to go back to', positiveInteger),
    ).action((name: string, flags: WaitFlags & { cluster: string; revision: number }) =>
      withFleetClient(async (client) => {
        await finish(client, await client.rollbackService(flags.cluster, name, flags.revision), flags);
      }),
    ),
  );

  service.addCommand(
    addFleetOutputFlag(
      new Command('reject')
        .description(
          "reject a revision's content: services running it move back to their newest earlier revision, and it never runs again (until `gantry rejection delete`)",
        )
        .argument('<name>')
        .requiredOption('--cluster <name>')
        .requiredOption('--revision <n>', 'the revision whose content is rejected', positiveInteger)
        .requiredOption('--reason <text>', 'why, for those who see it refused')
        .option('--fleet-wide', 'for every service of the repository folder, not only this one (admins)'),
    ).action((name: string, flags: { cluster: string; revision: number; reason: string; fleetWide?: boolean; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const outcome = await client.rejectRevision(flags.cluster, name, flags.revision, {
          reason: flags.reason,
          fleetWide: flags.fleetWide ?? false,
        });
        printFleet(flags.output, outcome, () => formatRejectOutcome(outcome));
      }),
    ),
  );

  service.addCommand(
    addFleetOutputFlag(
      new Command('preview')
        .description("what the service's source at another ref would do to its cluster: its agent's server-side dry run")
        .argument('<name>')
        .requiredOption('--cluster <name>')
        .requiredOption('--ref <ref>', 'a branch, tag or commit of its repository (a chart version for a helm source without git)')
        .option('--timeout <duration>', 'how long to wait for the agent', DEFAULT_TIMEOUT),
    ).action((name: string, flags: { cluster: string; ref: string; timeout: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const started = await client.createPreview(flags.cluster, name, flags.ref);
        const [preview] = await awaitPreviews(client, [started], parseDuration(flags.timeout));
        printFleet(flags.output, preview, () => formatPreview(preview!));
        process.exitCode = previewExitCode([preview!]);
      }),
    ),
  );

  service.addCommand(
    withWait(
      new Command('release')
        .description("end a rollback's pin: the newest revision (one that waited, if any) is applied")
        .argument('<name>')
        .requiredOption('--cluster <name>'),
    ).action((name: string, flags: WaitFlags & { cluster: string }) =>
      withFleetClient(async (client) => {
        await finish(client, await client.releaseService(flags.cluster, name), flags);
      }),
    ),
  );

  service.addCommand(
    new Command('delete')
      .description('delete a service; its agent deletes the objects it applied (with --detach they stay)')
      .argument('<name>')
      .requiredOption('--cluster <name>')
      .option('--detach', 'forget the service and leave its objects in the cluster')
      .action((name: string, flags: { cluster: string; detach?: boolean }) =>
        withFleetClient(async (client) => {
          const deleting = await client.deleteService(flags.cluster, name, flags.detach ?? false);
          process.stderr.write(deleting ? `service ${name} is being deleted by its agent\n` : `service ${name} detached\n`);
        }),
      ),
  );
  return service;
}

function withSource(command: Command): Command {
  return addSourceFlags(command)
    .option(
      '--depends-on <service>',
      'a service of the same cluster that must be healthy first (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option('--protect', 'refuse deletion')
    .option('--self-heal', 'repair drift within seconds (the default)')
    .option('--no-self-heal', 'only report drift (objects deleted or changed in the cluster), until the next revision');
}

function withWait(command: Command): Command {
  return addFleetOutputFlag(
    command
      .option('--wait', 'wait until the service is healthy at its newest revision')
      .option('--timeout <duration>', 'how long --wait waits', DEFAULT_TIMEOUT),
  );
}

/** Prints the service, after waiting for it when asked. @throws Error saying why it is not healthy on timeout. */
async function finish(client: FleetClient, service: ApiService, flags: WaitFlags): Promise<void> {
  const final = flags.wait ? await waitHealthy(client, service, parseDuration(flags.timeout)) : service;
  printFleet(flags.output, final, () => formatService(final));
}

async function waitHealthy(client: FleetClient, service: ApiService, timeoutMs: number): Promise<ApiService> {
  const deadline = Date.now() + timeoutMs;
  let current = service;
  for (;;) {
    current = await client.getService(current.cluster, current.name);
    if (current.status === 'healthy' && current.appliedRevision === current.revision.number) return current;
    if (Date.now() > deadline)
      throw new Error(
        `service ${current.name} is not healthy at revision ${current.revision.number} after ${timeoutMs / 1000}s: ${whyNot(current)}`,
      );
    await sleep(1_000);
  }
}

function whyNot(service: ApiService): string {
  const reasons = [`status ${service.status}`, `applied revision ${service.appliedRevision ?? 'none'}`];
  for (const error of service.errors) reasons.push(`${error.source} error: ${error.message}`);
  for (const c of service.components.filter((c) => c.state !== 'RUNNING'))
    reasons.push(`${c.kind} ${c.namespace}/${c.name} is ${c.state}${c.message ? ` (${c.message})` : ''}`);
  for (const c of service.components.filter((c) => c.drift)) reasons.push(`${c.kind} ${c.namespace}/${c.name} drifted: ${driftText(c)}`);
  return reasons.join('; ');
}

function formatRejectOutcome(outcome: ApiRejectOutcome): string {
  const { rejection } = outcome;
  const scope = rejection.service ? `for ${rejection.service.cluster}/${rejection.service.name}` : 'fleet-wide';
  const lines = [`rejected ${rejection.folder || '.'} at ${rejection.commit.slice(0, 12)} ${scope} (rejection ${rejection.id})`];
  for (const moved of outcome.movedBack)
    lines.push(`${moved.cluster}/${moved.name}: moved back from revision ${moved.from} to ${moved.to}`);
  for (const stuck of outcome.stuck) lines.push(`${stuck.cluster}/${stuck.name}: runs it with no earlier revision to go back to`);
  return `${lines.join('\n')}\n`;
}

/** Who pinned the service when, and what waits for its release. */
function pinText(service: ApiService): string {
  const pinned = `at revision ${service.revision.number} by ${service.pinned!.by}, ${service.pinned!.at}`;
  const release = `gantry service release ${service.name} --cluster ${service.cluster}`;
  return service.pendingRevision === null
    ? `${pinned}; nothing waits (${release} ends the pin)`
    : `${pinned}; revision ${service.pendingRevision} waits for: ${release}`;
}

/** A component's drift in a word and its fields: `MISSING`, `CHANGED data.value by kubectl-patch`; '' without drift. */
function driftText(component: ApiService['components'][number]): string {
  const { drift } = component;
  if (!drift) return '';
  const by = drift.managers.length > 0 ? ` by ${drift.managers.join(',')}` : '';
  return [drift.state, drift.fields.join(',')].filter(Boolean).join(' ') + by;
}

/** The renderer, or each folder's (`path kind`, a chart's release) when the service has renderers. */
function rendererRow(service: ApiService): [string, string] {
  if (!service.renderers) return ['renderer', [service.renderer.kind, service.renderer.target].filter(Boolean).join(' target ')];
  const release = (renderer: { helm?: { release?: string } }) => (renderer.helm?.release ? ` (release ${renderer.helm.release})` : '');
  return ['renderers', service.renderers.map((renderer) => `${renderer.path} ${renderer.kind}${release(renderer)}`).join(', ')];
}

function componentSummary(service: ApiService): string {
  const running = service.components.filter((c) => c.state === 'RUNNING').length;
  return `${running}/${service.components.length}`;
}

function formatService(service: ApiService): string {
  const rows: Array<[string, string]> = [
    ['cluster', service.cluster],
    ['name', service.name],
    ['namespace', service.namespace],
    ...(service.version ? [['version', service.version] as [string, string]] : []),
    ...sourceRows(service),
    rendererRow(service),
    ['status', service.status + (service.deleting ? ' (deleting)' : '')],
    [
      'revision',
      `${service.revision.number} (${(service.revision.commit ?? '').slice(0, 12)}), applied: ${service.appliedRevision ?? 'none'}`,
    ],
    ...(service.pinned ? [['pinned', pinText(service)] as [string, string]] : []),
    ['config', service.configuration.join(', ')],
    ...(service.contexts.length > 0 ? [['contexts', service.contexts.join(', ')] as [string, string]] : []),
  ];
  const head = rows.map(([key, value]) => `${`${key}:`.padEnd(11)}${value}\n`).join('');
  const errors = service.errors.map((error) => `error (${error.source}): ${error.message}\n`).join('');
  const components =
    service.components.length === 0
      ? ''
      : `\n${formatTable(
          ['KIND', 'NAMESPACE', 'NAME', 'STATE', 'SYNCED', 'DRIFT', 'MESSAGE'],
          service.components.map((c) => [c.kind, c.namespace, c.name, c.state, c.synced ? 'yes' : 'no', driftText(c), c.message ?? '']),
        )}`;
  return head + errors + components;
}

/** Each Markdown file under a header naming it, or why there are none. */
function formatDocs(name: string, docs: ApiServiceDocs): string {
  if (docs.docsPath === null) return `service ${name} has no docsPath\n`;
  if (docs.files.length === 0) return `no Markdown files below ${docs.docsPath} at revision ${docs.revision}\n`;
  const files = docs.files.map((file) => `==> ${path.posix.join(docs.docsPath!, file.path)} <==\n${file.content.replace(/\n?$/, '\n')}`);
  return files.join('\n') + (docs.truncated ? '\n(more files left out: at most 100 files and 1 MiB are read)\n' : '');
}

/** Where the service comes from: the repository's folder (and its extra sources, at their paths), the chart and its resolved version, or both. */
function sourceRows(service: ApiService): Array<[string, string]> {
  const rows: Array<[string, string]> = [];
  const { repository, git, helm } = service;
  if (repository && git) rows.push(['source', `${repository.url} ${git.ref}${git.folder ? ` ${git.folder}` : ''}`]);
  for (const [index, source] of (service.sources ?? []).entries()) {
    const commit = service.revision.sourceCommits?.[index]?.slice(0, 12);
    rows.push([
      'source',
      `${source.repository.url} ${source.git.ref} ${source.git.folder || '.'} at ${source.path}${commit ? ` (${commit})` : ''}`,
    ]);
  }
  if (service.provisions) rows.push(['source', `the Cluster API objects of cluster ${service.provisions}, kept by the server`]);
  if (helm) {
    const version = service.revision.chartVersion ?? helm.version;
    const range = version === helm.version ? '' : ` (${helm.version})`;
    rows.push(['chart', `${helm.chart} ${version}${range} from ${helm.url}, release ${helm.release ?? service.name}`]);
  }
  return rows;
}

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError(`'${value}' is not a revision number`);
  return number;
}
