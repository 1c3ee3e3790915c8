/**
 * Why each edge has not promoted its source stage's current context yet, as the server words it (pipeline/explain.ts):
 * the stage's services not healthy, a gate waiting for an approver, a Job running, a window closed until when, a
 * closed gate and why, a target pinned by a rollback. Edges with nothing waiting are left out.
 */
import type { Pipeline } from '../api/types.ts';

export function EdgeWaits({ pipeline }: { pipeline: Pipeline }) {
  const waiting = pipeline.edges.filter((edge) => edge.waitingFor.length > 0);
  if (waiting.length === 0) return null;
  return (
    <section aria-label="Waiting for">
      <h2>Waiting for</h2>
      {waiting.map((edge) => (
        <div key={`${edge.from}/${edge.to}`} className="edge-waits" data-edge={`${edge.from}/${edge.to}`}>
          <h3>
            {edge.from} → {edge.to}
          </h3>
          <ul>
            {edge.waitingFor.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </div>
      ))}
    </section>
  );
}
