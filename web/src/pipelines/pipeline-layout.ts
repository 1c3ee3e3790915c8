/**
 * Where the pipeline's stages and edges go: dagre's layered layout, left to right or top to bottom, of boxes sized
 * for their content (a stage's services, an edge's gates), so the drawing is HTML boxes over SVG edges.
 */
import { Graph, layout } from '@dagrejs/dagre';
import type { Edge, Pipeline, Stage } from '../api/types.ts';

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PipelineLayout {
  width: number;
  height: number;
  stages: { stage: Stage; box: Box }[];
  edges: { edge: Edge; points: { x: number; y: number }[]; label: Box }[];
}

const STAGE_WIDTH = 280;
const EDGE_LABEL_WIDTH = 230;
/** Pixel heights of the parts of a stage box and an edge label, as styles.css draws them. */
const STAGE_HEADER = 40;
const STAGE_SERVICE = 30;
const STAGE_FOOTER = 34;
const GATE_LINE = 30;
const PROMOTION_LINE = 26;
/** Borders, top and bottom. */
const FRAME = 4;

export function pipelineLayout(pipeline: Pipeline, direction: 'LR' | 'TB'): PipelineLayout {
  const graph = new Graph();
  graph.setGraph({ rankdir: direction, nodesep: 40, ranksep: direction === 'LR' ? 60 : 36, marginx: 16, marginy: 16 });
  for (const stage of pipeline.stages)
    graph.setNode(stage.name, { width: STAGE_WIDTH, height: STAGE_HEADER + STAGE_SERVICE * stage.services.length + STAGE_FOOTER + FRAME });
  for (const edge of pipeline.edges)
    graph.setEdge(edge.from, edge.to, {
      width: EDGE_LABEL_WIDTH,
      height: GATE_LINE * edge.gates.length + PROMOTION_LINE + FRAME,
      labelpos: 'c',
    });
  layout(graph);
  const size = graph.graph() as { width: number; height: number };
  return {
    width: size.width,
    height: size.height,
    stages: pipeline.stages.map((stage) => ({ stage, box: centred(graph.node(stage.name)) })),
    edges: pipeline.edges.map((edge) => {
      const label = graph.edge(edge.from, edge.to) as {
        points: { x: number; y: number }[];
        x: number;
        y: number;
        width: number;
        height: number;
      };
      return { edge, points: label.points, label: centred(label) };
    }),
  };
}

/** dagre gives centres; boxes are placed by their top left corner. */
function centred(node: { x: number; y: number; width: number; height: number }): Box {
  return { x: node.x - node.width / 2, y: node.y - node.height / 2, width: node.width, height: node.height };
}
