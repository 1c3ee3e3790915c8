/** Every release pipeline: its stages in order, the gates waiting for a decision, when it last changed. */
import { useState } from 'react';
import { Link } from 'react-router';
import { usePipelines } from '../api/queries.ts';
import type { Pipeline } from '../api/types.ts';
import { Count } from '../ui/count.tsx';
import { EmptyRow } from '../ui/empty-row.tsx';
import { QueryView } from '../ui/query-view.tsx';
import { SearchBox } from '../ui/search-box.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';

export function PipelinesPage() {
  const pipelines = usePipelines();
  const [text, setText] = useState('');
  return (
    <>
      <h1>Pipelines</h1>
      <div className="toolbar">
        <SearchBox value={text} onChange={setText} placeholder="Search pipelines, stages" />
      </div>
      <QueryView query={pipelines} what="pipelines">
        {(all) => {
          const shown = all.filter((pipeline) => matches(pipeline, text));
          return (
            <>
              <h2>
                Pipelines <Count shown={shown.length} total={all.length} />
              </h2>
              <table>
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Stages</th>
                    <th>Waiting gates</th>
                    <th>Changed</th>
                  </tr>
                </thead>
                <tbody>
                  {shown.map((pipeline) => (
                    <tr key={pipeline.id}>
                      <td>
                        <Link to={`/pipelines/${pipeline.name}`}>{pipeline.name}</Link>
                      </td>
                      <td>{pipeline.stages.map((stage) => stage.name).join(', ')}</td>
                      <td>
                        <WaitingGates pipeline={pipeline} />
                      </td>
                      <td>
                        <TimeAgo time={pipeline.updatedAt} />
                      </td>
                    </tr>
                  ))}
                  {shown.length === 0 && <EmptyRow columns={4} text={all.length === 0 ? 'No pipelines yet.' : undefined} />}
                </tbody>
              </table>
            </>
          );
        }}
      </QueryView>
    </>
  );
}

function WaitingGates({ pipeline }: { pipeline: Pipeline }) {
  const pending = pipeline.edges.flatMap((edge) => edge.gates).filter((gate) => gate.state === 'PENDING').length;
  return pending === 0 ? <span className="muted">none</span> : <span className="tag warn">{pending} pending</span>;
}

function matches(pipeline: Pipeline, text: string): boolean {
  const haystack = [pipeline.name, ...pipeline.stages.map((stage) => stage.name)].join(' ').toLowerCase();
  return text
    .toLowerCase()
    .split(/\s+/)
    .every((word) => haystack.includes(word));
}
