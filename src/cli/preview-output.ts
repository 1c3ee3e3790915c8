/**
 * What `gantry service preview`, `gantry pipeline preview` and `gantry globalservice preview` share: waiting for the
 * agents to run the previews (each is PENDING until its cluster's agent reports) and printing each as a diff list:
 * `+` objects a sync would create, `~` objects it would change with their diff, `-` objects it would prune, and the
 * errors of the render or the dry run.
 */
import type { ApiPreview, FleetClient } from '../client/fleet-client.ts';
import { sleep } from '../sleep.ts';

const POLL_MS = 500;

/**
 * The previews once none is PENDING.
 * @throws Error naming the clusters whose agents have not run theirs after `timeoutMs`.
 */
export async function awaitPreviews(client: FleetClient, started: readonly ApiPreview[], timeoutMs: number): Promise<ApiPreview[]> {
  const deadline = Date.now() + timeoutMs;
  let previews = [...started];
  for (;;) {
    const pending = previews.filter((preview) => preview.state === 'PENDING');
    if (pending.length === 0) return previews;
    if (Date.now() > deadline) {
      const where = pending.map((preview) => `${preview.cluster} (preview ${preview.id})`).join(', ');
      throw new Error(`the agents of ${where} did not run their previews in ${timeoutMs / 1000}s`);
    }
    await sleep(POLL_MS);
    previews = await Promise.all(
      previews.map((preview) => (preview.state === 'PENDING' ? client.getPreview(preview.cluster, preview.service, preview.id) : preview)),
    );
  }
}

export function formatPreview(preview: ApiPreview): string {
  const result = preview.result;
  const head = `preview of ${preview.cluster}/${preview.service} at ${preview.ref} (${preview.commit.slice(0, 12) || 'no git'}): ${preview.state}`;
  if (!result) return `${head}\n`;
  const lines = [
    head,
    ...result.create.map((object) => `+ ${object}`),
    ...result.change.flatMap(({ object, diff }) => [
      `~ ${object}`,
      ...diff
        .trimEnd()
        .split('\n')
        .map((line) => `    ${line}`),
    ]),
    ...result.delete.map((object) => `- ${object}`),
    ...result.errors.map((error) => `error: ${error}`),
  ];
  if (lines.length === 1) lines.push('no changes');
  return `${lines.join('\n')}\n`;
}

/** Exit code 1 when a preview failed or found errors (a render or admission error is what a preview is for). */
export function previewExitCode(previews: readonly ApiPreview[]): number {
  return previews.some((preview) => preview.state === 'FAILED' || (preview.result?.errors.length ?? 0) > 0) ? 1 : 0;
}

/** One line: the state and what it would do, e.g. `DONE: 1 to create, 2 to change` or `DONE: no changes`. */
export function previewSummary(preview: ApiPreview): string {
  const result = preview.result;
  if (!result) return preview.state;
  const counts = [
    [result.create.length, 'to create'],
    [result.change.length, 'to change'],
    [result.delete.length, 'to prune'],
    [result.errors.length, result.errors.length === 1 ? 'error' : 'errors'],
  ] as const;
  const said = counts.filter(([count]) => count > 0).map(([count, what]) => `${count} ${what}`);
  return `${preview.state}: ${said.join(', ') || 'no changes'}`;
}
