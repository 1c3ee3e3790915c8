/**
 * `gantry pipeline set|list|get|approve|reject|force|preview|logs|history|rollout|delete`: release pipelines on the
 * Gantry server (Plural's Pipeline). `get` draws the DAG as text: each stage with the promotion context it is at, its
 * services and its rollout, each edge with its gates' states. A gate is named by its name alone, or with `--edge FROM:TO` when two edges have
 * a gate of that name.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import type { ApiPipeline, FleetClient, GateDecision } from '../client/fleet-client.ts';
import type { PipelineUpsertBody } from '../api/pipelines.ts';
import { parseYaml } from '../yaml.ts';
import { parseDuration } from '../duration.ts';
import { awaitPreviews, formatPreview, previewExitCode, previewSummary } from './preview-output.ts';
import { formatRollout, rolloutActions } from './rollout-output.ts';
import { addFleetOutputFlag, type FleetOutput, formatTable, printFleet, withFleetClient } from './fleet-output.ts';

interface GateFlags {
  edge?: string;
  output: FleetOutput;
}

export function pipelineCommand(): Command {
  const pipeline = new Command('pipeline');

  pipeline.addCommand(
    addFleetOutputFlag(
      new Command('set')
        .description('create a pipeline or replace it whole, from a YAML or JSON file of {stages, edges}')
        .argument('<name>')
        .requiredOption(
          '--from-file <file>',
          'the pipeline: stages [{name, services [{cluster, name, criteria}], rollout}], edges [{from, to, gates}]',
        ),
    ).action((name: string, flags: { fromFile: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const saved = await client.setPipeline(
          name,
          (parseYaml(await readFile(flags.fromFile, 'utf8'), flags.fromFile) ?? {}) as PipelineUpsertBody,
        );
        printFleet(flags.output, saved, () => formatPipeline(saved));
      }),
    ),
  );

  pipeline.addCommand(
    addFleetOutputFlag(new Command('list').description('list pipelines with their stages and gates waiting')).action(
      (flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const pipelines = await client.listPipelines();
          printFleet(flags.output, pipelines, () =>
            formatTable(
              ['NAME', 'STAGES', 'PENDING GATES'],
              pipelines.map((p) => [
                p.name,
                p.stages.map((stage) => stage.name).join(' → '),
                String(p.edges.flatMap((edge) => edge.gates).filter((gate) => gate.state === 'PENDING' && gate.contextId).length),
              ]),
            ),
          );
        }),
    ),
  );

  pipeline.addCommand(
    addFleetOutputFlag(
      new Command('get').description('show a pipeline as text: stages, their contexts, edges and gates').argument('<name>'),
    ).action((name: string, flags: { output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const found = await client.getPipeline(name);
        printFleet(flags.output, found, () => formatPipeline(found));
      }),
    ),
  );

  const decisions: Array<[GateDecision, string]> = [
    ['approve', 'open an APPROVAL gate for its stage’s current context (admins and approvers)'],
    ['reject', 'close an APPROVAL gate for its stage’s current context (admins and approvers)'],
    ['force', 'open any gate for its stage’s current context, recorded as forced (admins)'],
  ];
  for (const [decision, description] of decisions) {
    pipeline.addCommand(
      addFleetOutputFlag(
        new Command(decision)
          .description(description)
          .argument('<pipeline>')
          .argument('<gate>')
          .option('--edge <from:to>', 'the edge of the gate, when its name is on several edges'),
      ).action((name: string, gate: string, flags: GateFlags) =>
        withFleetClient(async (client) => {
          const edge = await gateEdge(client, name, gate, flags.edge);
          const decided = await client.decideGate(name, edge, gate, decision);
          printFleet(flags.output, decided, () => formatPipeline(decided));
        }),
      ),
    );
  }

  pipeline.addCommand(
    addFleetOutputFlag(
      new Command('logs')
        .description("print a JOB gate's Job's logs, as its agent read them when the Job finished")
        .argument('<pipeline>')
        .argument('<gate>')
        .option('--edge <from:to>', 'the edge of the gate, when its name is on several edges'),
    ).action((name: string, gate: string, flags: GateFlags) =>
      withFleetClient(async (client) => {
        const { from, to } = await gateEdge(client, name, gate, flags.edge);
        const edge = (await client.getPipeline(name)).edges.find((candidate) => candidate.from === from && candidate.to === to);
        const found = edge?.gates.find((candidate) => candidate.name === gate);
        if (!found) throw new Error(`pipeline ${name} has no gate ${gate} on ${from} → ${to}`);
        if (found.type !== 'JOB') throw new Error(`gate ${gate} is ${found.type}: only JOB gates have logs`);
        const logs = found.logs ?? '';
        printFleet(flags.output, { gate, from, to, state: found.state, logs: found.logs }, () =>
          logs ? `${logs.trimEnd()}\n` : `gate ${gate} has no logs yet: its Job has not finished for the current context\n`,
        );
      }),
    ),
  );

  pipeline.addCommand(
    addFleetOutputFlag(
      new Command('preview')
        .description("what promoting the source stage's current context would do on each target cluster: the agents' server-side dry runs")
        .argument('<pipeline>')
        .option('--edge <from:to>', 'the edge, when the pipeline has several')
        .option('--timeout <duration>', 'how long to wait for the agents', '5m'),
    ).action((name: string, flags: { edge?: string; timeout: string; output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const edge = await onlyEdge(client, name, flags.edge);
        const started = await client.previewPromotion(name, edge);
        const previews = await awaitPreviews(client, started, parseDuration(flags.timeout));
        printFleet(flags.output, previews, () =>
          previews.length > 0
            ? previews.map(formatPreview).join('')
            : `${edge.from} → ${edge.to}: nothing to promote, every target with criteria already runs its source\n`,
        );
        process.exitCode = previewExitCode(previews);
      }),
    ),
  );

  pipeline.addCommand(
    addFleetOutputFlag(new Command('history').description('list the promotions of a pipeline, newest first').argument('<name>')).action(
      (name: string, flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const promotions = await client.listPromotions(name);
          printFleet(flags.output, promotions, () =>
            formatTable(
              ['WHEN', 'EDGE', 'SERVICES', 'GATES'],
              promotions.map((promotion) => [
                promotion.createdAt,
                `${promotion.from} → ${promotion.to}`,
                promotion.services
                  .map((s) => `${s.cluster}/${s.name}@${shortCommit(s.commit) ?? s.chartVersion ?? '?'} rev ${s.revision}`)
                  .join(', ') || 'nothing to promote',
                promotion.gates.map((g) => `${g.name}${g.forced ? ' (forced)' : ''}${g.decidedBy ? ` by ${g.decidedBy}` : ''}`).join(', '),
              ]),
            ),
          );
        }),
    ),
  );

  pipeline.addCommand(stageRolloutCommand());

  pipeline.addCommand(
    new Command('delete')
      .description('delete a pipeline with its history; its services stay as they are')
      .argument('<name>')
      .action((name: string) =>
        withFleetClient(async (client) => {
          await client.deletePipeline(name);
          process.stderr.write(`pipeline ${name} deleted\n`);
        }),
      ),
  );
  return pipeline;
}

/** The edge FROM:TO, or the pipeline's only edge. @throws Error when it has several and no --edge says which. */
/** `gantry pipeline rollout status|pause|resume|abort NAME STAGE`. */
function stageRolloutCommand(): Command {
  const rollout = new Command('rollout').description("a stage's progressive rollout of the revisions a promotion brings it");
  rollout.addCommand(
    addFleetOutputFlag(
      new Command('status').description('which clusters are at which revision, and why it waits').argument('<name>').argument('<stage>'),
    ).action((name: string, stage: string, flags: { output: FleetOutput }) =>
      withFleetClient(async (client) => {
        const found = await client.getStageRollout(name, stage);
        printFleet(flags.output, found, () => formatRollout(found));
      }),
    ),
  );
  for (const [action, description] of rolloutActions) {
    rollout.addCommand(
      addFleetOutputFlag(
        new Command(action).description(`${description} (those who may approve the pipeline)`).argument('<name>').argument('<stage>'),
      ).action((name: string, stage: string, flags: { output: FleetOutput }) =>
        withFleetClient(async (client) => {
          const changed = await client.stageRolloutAction(name, stage, action);
          printFleet(flags.output, changed, () => formatRollout(changed));
        }),
      ),
    );
  }
  return rollout;
}

async function onlyEdge(client: FleetClient, name: string, edgeFlag: string | undefined): Promise<{ from: string; to: string }> {
  if (edgeFlag) return parseEdge(edgeFlag);
  const edges = (await client.getPipeline(name)).edges;
  if (edges.length !== 1)
    throw new Error(`pipeline ${name} has edges ${edges.map((e) => `${e.from}:${e.to}`).join(', ') || 'none'}: give --edge`);
  return edges[0]!;
}

function parseEdge(edgeFlag: string): { from: string; to: string } {
  const [from, to, ...rest] = edgeFlag.split(':');
  if (!from || !to || rest.length > 0) throw new Error(`--edge ${edgeFlag} is not FROM:TO`);
  return { from, to };
}

/** The edge of the named gate. @throws Error when no edge or several have it and --edge does not say which. */
async function gateEdge(
  client: FleetClient,
  name: string,
  gate: string,
  edgeFlag: string | undefined,
): Promise<{ from: string; to: string }> {
  if (edgeFlag) return parseEdge(edgeFlag);
  const edges = (await client.getPipeline(name)).edges.filter((edge) => edge.gates.some((candidate) => candidate.name === gate));
  if (edges.length === 0) throw new Error(`pipeline ${name} has no gate ${gate}`);
  if (edges.length > 1) throw new Error(`gate ${gate} is on edges ${edges.map((e) => `${e.from}:${e.to}`).join(', ')}: give --edge`);
  return edges[0]!;
}

/** The DAG as text: stages in order with context and services, then edges with their gates and what they wait for. */
export function formatPipeline(pipeline: ApiPipeline): string {
  const lines = [`pipeline ${pipeline.name}`];
  for (const stage of pipeline.stages) {
    const context = stage.context ? `at context ${stage.context.id.slice(0, 8)} (${stage.context.createdAt})` : 'no context yet';
    lines.push(`  stage ${stage.name}: ${context}`);
    const rollout = stage.rolloutStatus;
    if (rollout) lines.push(`    rollout (${rollout.cause}): ${rollout.state}${rollout.reason ? `: ${rollout.reason}` : ''}`);
    for (const service of stage.services) {
      const at = stage.context?.services.find((s) => s.cluster === service.cluster && s.name === service.name);
      const pinned = at ? ` context rev ${at.revision} ${shortCommit(at.commit) ?? at.chartVersion ?? ''}`.trimEnd() : '';
      const from = service.criteria ? ` ← ${service.criteria.cluster}/${service.criteria.name}` : '';
      const secrets = service.criteria?.secrets.length ? ` [${service.criteria.secrets.join(', ')}]` : '';
      lines.push(`    ${service.cluster}/${service.name}: ${service.status} rev ${service.revision ?? '-'}${pinned}${from}${secrets}`);
    }
  }
  for (const edge of pipeline.edges) {
    lines.push(`  edge ${edge.from} → ${edge.to}${edge.promoted ? ': promoted' : ''}`);
    for (const gate of edge.gates) {
      const by = gate.decidedBy ? ` by ${gate.decidedBy}${gate.forced ? ' (forced)' : ''}` : '';
      const reason = gate.reason ? `: ${gate.reason}` : '';
      const timeout = gate.timeout ? ` [timeout ${gate.timeout}]` : '';
      lines.push(`    gate ${gate.name} (${gate.type})${timeout}: ${gate.contextId ? gate.state : 'waiting for a context'}${by}${reason}`);
    }
    for (const line of edge.waitingFor) lines.push(`    waiting for: ${line}`);
    for (const preview of edge.previews) lines.push(`    preview ${preview.cluster}/${preview.service}: ${previewSummary(preview)}`);
  }
  return `${lines.join('\n')}\n`;
}

function shortCommit(commit: string | null): string | undefined {
  return commit ? commit.slice(0, 7) : undefined;
}
