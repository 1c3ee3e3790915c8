/**
 * What promoting each edge's source stage's current context would do on its target clusters, as their agents found
 * with a server-side dry run against the live cluster (issue 43, part 1): per target, the objects a sync would
 * create, change (with the diff; Secrets masked by the agent) and prune, and the render or admission errors. The
 * server makes these when a context waits for approval, so the approver reads them before deciding; those who may
 * decide can ask again (a result is reused while nothing on the cluster changed). Edges without previews are left out.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { fleet } from '../api/fleet.ts';
import type { Edge, Pipeline } from '../api/types.ts';
import { Spinner } from '../ui/spinner.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';

type Preview = Edge['previews'][number];

export function EdgePreviews({ pipeline, mayAsk }: { pipeline: Pipeline; mayAsk: boolean }) {
  const edges = pipeline.edges.filter((edge) => edge.previews.length > 0 && !edge.promoted);
  if (edges.length === 0) return null;
  return (
    <section aria-label="Promotion preview">
      <h2>Promotion preview</h2>
      {edges.map((edge) => (
        <div key={`${edge.from}/${edge.to}`} className="edge-previews" data-edge={`${edge.from}/${edge.to}`}>
          <h3>
            {edge.from} → {edge.to}
            {mayAsk && <AskAgain pipeline={pipeline.name} edge={edge} />}
          </h3>
          {edge.previews.map((preview) => (
            <PreviewView key={preview.id} preview={preview} />
          ))}
        </div>
      ))}
    </section>
  );
}

function PreviewView({ preview }: { preview: Preview }) {
  const result = preview.result;
  return (
    <div className="preview" data-preview={`${preview.cluster}/${preview.service}`}>
      <p>
        <strong>
          {preview.cluster}/{preview.service}
        </strong>{' '}
        at <code>{preview.commit.slice(0, 12) || preview.ref}</code>: {preview.state === 'PENDING' ? <Spinner /> : null}
        {preview.state === 'PENDING' ? 'its agent is running the dry run' : outcome(preview)}
        {preview.finishedAt && (
          <span className="muted">
            {' '}
            (<TimeAgo time={preview.finishedAt} />)
          </span>
        )}
      </p>
      {result && (
        <ul className="preview-objects">
          {result.create.map((object) => (
            <li key={`+${object}`} className="added">
              create {object}
            </li>
          ))}
          {result.change.map(({ object, diff }) => (
            <li key={`~${object}`}>
              <details open>
                <summary>change {object}</summary>
                <pre className="code diff">
                  {diff.split('\n').map((line, index) => (
                    <span key={index} className={/^\s*\+/.test(line) ? 'added' : /^\s*-/.test(line) ? 'removed' : undefined}>
                      {line}
                      {'\n'}
                    </span>
                  ))}
                </pre>
              </details>
            </li>
          ))}
          {result.delete.map((object) => (
            <li key={`-${object}`} className="removed">
              prune {object}
            </li>
          ))}
          {result.errors.map((error) => (
            <li key={`!${error}`} className="error" role="alert">
              {error}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** `failed`, `no changes`, or what it would do: `1 to create, 2 to change`. */
function outcome(preview: Preview): string {
  const result = preview.result;
  if (preview.state === 'FAILED' || !result) return 'failed';
  const counts = [
    [result.create.length, 'to create'],
    [result.change.length, 'to change'],
    [result.delete.length, 'to prune'],
    [result.errors.length, 'errors'],
  ] as const;
  return (
    counts
      .filter(([count]) => count > 0)
      .map(([count, what]) => `${count} ${what}`)
      .join(', ') || 'no changes'
  );
}

function AskAgain({ pipeline, edge }: { pipeline: string; edge: Edge }) {
  const queryClient = useQueryClient();
  const ask = useMutation({
    mutationFn: () => fleet.previewPromotion(pipeline, edge),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['pipelines', pipeline] }),
  });
  return (
    <>
      {' '}
      <button type="button" disabled={ask.isPending} onClick={() => ask.mutate()}>
        {ask.isPending && <Spinner />} Preview again
      </button>
      {ask.isError && (
        <span className="error" role="alert">
          {ask.error.message}
        </span>
      )}
    </>
  );
}
