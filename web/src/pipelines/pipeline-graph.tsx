/**
 * The pipeline drawn: stages as boxes with their services' health and revision and the context they are at,
 * edges as arrows coloured by where the promotion stands, each with its gates' states. Left to right as pipelines
 * are read, unless that is wider than the page: then top to bottom, which scrolls as pages do.
 */
import { useMemo } from 'react';
import { useClusters } from '../api/queries.ts';
import type { Cluster, Edge, Pipeline, Stage } from '../api/types.ts';
import { serviceHealth } from '../health.ts';
import { shortRef } from '../service/source-text.ts';
import { Spinner } from '../ui/spinner.tsx';
import { StatusBadge } from '../ui/status-badge.tsx';
import { TimeAgo } from '../ui/time-ago.tsx';
import { useWidth } from '../ui/width.ts';
import { GateBadge } from './gate-badge.tsx';
import { type Box, pipelineLayout } from './pipeline-layout.ts';

export function PipelineGraph({ pipeline }: { pipeline: Pipeline }) {
  const [frame, width] = useWidth<HTMLDivElement>();
  const clusters = useClusters().data ?? [];
  const drawn = useMemo(() => {
    const wide = pipelineLayout(pipeline, 'LR');
    return width !== undefined && wide.width > width ? pipelineLayout(pipeline, 'TB') : wide;
  }, [pipeline, width]);
  return (
    <div className="graph-scroll" ref={frame}>
      <div className="graph" style={{ width: drawn.width, height: drawn.height }} role="group" aria-label={`Pipeline ${pipeline.name}`}>
        <svg width={drawn.width} height={drawn.height} aria-hidden="true">
          <defs>
            {EDGE_TONES.map((tone) => (
              <marker key={tone} id={`arrow-${tone}`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto">
                <path d="M0,0 L10,5 L0,10 z" className={`arrow-${tone}`} />
              </marker>
            ))}
          </defs>
          {drawn.edges.map(({ edge, points }) => (
            <path
              key={`${edge.from}/${edge.to}`}
              d={points.map((point, index) => `${index === 0 ? 'M' : 'L'}${point.x},${point.y}`).join(' ')}
              className={`edge edge-${edgeTone(edge)}`}
              markerEnd={`url(#arrow-${edgeTone(edge)})`}
            />
          ))}
        </svg>
        {drawn.stages.map(({ stage, box }) => (
          <StageBox key={stage.name} stage={stage} box={box} clusters={clusters} />
        ))}
        {drawn.edges.map(({ edge, label }) => (
          <EdgeLabel key={`${edge.from}/${edge.to}`} edge={edge} box={label} />
        ))}
      </div>
    </div>
  );
}

const EDGE_TONES = ['promoted', 'pending', 'closed', 'idle'] as const;

function edgeTone(edge: Edge): (typeof EDGE_TONES)[number] {
  if (edge.promoted) return 'promoted';
  if (edge.gates.some((gate) => gate.state === 'CLOSED')) return 'closed';
  if (edge.gates.some((gate) => gate.state === 'PENDING')) return 'pending';
  return 'idle';
}

function StageBox({ stage, box, clusters }: { stage: Stage; box: Box; clusters: Cluster[] }) {
  const commits = [
    ...new Set(stage.context?.services.map((service) => (service.commit ? shortRef(service.commit) : service.chartVersion))),
  ];
  return (
    <section className="stage" style={place(box)} aria-label={`Stage ${stage.name}`}>
      <h3>{stage.name}</h3>
      <ul>
        {stage.services.map((service) => (
          <li key={`${service.cluster}/${service.name}`}>
            <StatusBadge
              {...serviceHealth(
                { status: service.status, deleting: false },
                clusters.find((cluster) => cluster.name === service.cluster),
              )}
            />
            <span className="stage-service">
              {service.cluster}/{service.name}
            </span>
            <span className="muted">{service.revision === null ? '' : `#${service.revision}`}</span>
          </li>
        ))}
      </ul>
      <p className="stage-context muted">
        {stage.context ? (
          <>
            at <span className="source">{commits.join(', ')}</span>, <TimeAgo time={stage.context.createdAt} />
          </>
        ) : (
          'not healthy at a revision yet'
        )}
      </p>
    </section>
  );
}

function EdgeLabel({ edge, box }: { edge: Edge; box: Box }) {
  const open = edge.gates.every((gate) => gate.state === 'OPEN');
  return (
    <div className="edge-label" style={place(box)} aria-label={`Edge ${edge.from} to ${edge.to}`}>
      {edge.gates.map((gate) => (
        <div key={gate.name} className="gate-line">
          <span title={gate.type}>{gate.name}</span> <GateBadge gate={gate} />
        </div>
      ))}
      <div className="promotion-line">
        {edge.promoted ? (
          <span className="ok">✓ promoted</span>
        ) : open && edge.gates.length > 0 ? (
          <span>
            <Spinner /> promoting…
          </span>
        ) : (
          <span className="muted">
            {edge.gates.some((gate) => gate.type === 'APPROVAL' && gate.state === 'PENDING') ? 'waiting for approval' : 'waiting'}
          </span>
        )}
      </div>
    </div>
  );
}

function place(box: Box) {
  return { left: box.x, top: box.y, width: box.width, height: box.height };
}
