/**
 * The previews loop (issue 43, part 1): the poll lists the cluster's pending previews (a service's source at another
 * ref) and wakes this loop, which downloads each preview's source by digest, renders it as a sync would and runs a
 * server-side dry run against the live cluster through the Cluster's dry-run view, whose client refuses any write
 * that is not a dry run. What a sync would create, change (with the diff, Secrets and the service's configuration
 * values masked) and prune goes back to the server; a render error is the preview's result.
 */
import path from 'node:path';
import type { AgentService } from '../../api/agent.ts';
import type { AgentPreview, PreviewReport } from '../../api/previews.ts';
import { SensitiveValues } from '../../project/sensitive.ts';
import { deployTarget } from '../../deploy/deploy.ts';
import type { CommandResult } from '../../deploy/result.ts';
import { formatRef } from '../../kube/object.ts';
import { messageOf } from '../../problems.ts';
import type { AgentState } from '../agent-state.ts';
import type { Loop } from '../supervise.ts';
import { prepareService } from '../sync.ts';

/** When the poll found none, the loop waits this long (it is woken as soon as one comes). */
const IDLE_MS = 10 * 60_000;

export function previewsLoop(state: AgentState): Loop {
  return {
    name: 'previews',
    work: () => runPreviews(state),
    wait: (ms) => state.previewsWakeup.wait(ms, state.signal),
    interval: () => IDLE_MS,
  };
}

async function runPreviews(state: AgentState): Promise<void> {
  const previews = state.previews;
  state.previews = [];
  for (const preview of previews) {
    if (state.signal.aborted) return;
    const report = await previewOf(state, preview).catch((error: unknown): PreviewReport => failed(messageOf(error)));
    await state.options.client.reportPreview(preview.id, report, state.signal).catch((error: { status?: number }) => {
      // 409: done already (another agent's copy ran it); anything else is logged, and the next poll lists it again.
      if (error.status !== 409) state.log.warn({ preview: preview.id, error: messageOf(error) }, 'preview not reported');
    });
  }
}

async function previewOf(state: AgentState, preview: AgentPreview): Promise<PreviewReport> {
  const { service } = preview;
  const { digest } = service.revision;
  const dir =
    (await state.sources.find(digest)) ??
    (await state.sources.add(
      digest,
      await state.options.client.tarball(service.id, digest, state.signal, state.sources.limits.maxTarballBytes),
    ));
  const workDir = path.join(state.context.workDir, `preview-${preview.id}`);
  const prepared = await prepareService(service, dir, state.context, workDir);
  if ('error' in prepared) return failed(prepared.error);
  const result = await deployTarget(prepared.rendered, state.cluster.dryRun(), {
    fieldManager: state.context.fieldManager,
    dryRun: true,
    prune: false,
    wait: false,
    timeoutMs: state.options.syncTimeoutMs,
    behaviour: { forceApply: false, replaceOnError: false, forceReplaceOnError: false, abortOnError: false, readinessTimeoutMs: 0 },
    progress: state.context.progress,
    signal: state.signal,
  });
  return { state: 'DONE', result: resultOf(result, configurationValues(state, service)) };
}

/**
 * The service's configuration and secret values, those the preview renders with and those it runs with now: a diff
 * shows the object as the cluster has it too, rendered with the values of now. A preview is read by more people than
 * the service's configuration (a pipeline's approvers and readers), so these are masked as sensitive vars are.
 */
function configurationValues(state: AgentState, service: AgentService): SensitiveValues {
  const sensitive = new SensitiveValues();
  const current = state.known?.find((known) => known.id === service.id);
  for (const values of [service, current]) {
    sensitive.add(values?.configuration ?? {});
    sensitive.add(values?.secretValues ?? {});
  }
  return sensitive;
}

function resultOf(result: CommandResult, sensitive: SensitiveValues): PreviewReport['result'] {
  return {
    create: result.newObjects.map(formatRef),
    change: result.changedObjects.map(({ diff, ...ref }) => ({ object: formatRef(ref), diff: sensitive.mask(diff).slice(0, 65_536) })),
    delete: result.orphanObjects.map(formatRef),
    errors: result.errors.map((error) => sensitive.mask(error.object ? `${formatRef(error.object)}: ${error.message}` : error.message)),
  };
}

function failed(message: string): PreviewReport {
  return { state: 'FAILED', result: { create: [], change: [], delete: [], errors: [message] } };
}
