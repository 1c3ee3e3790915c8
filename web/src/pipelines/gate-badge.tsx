/** A gate's state: PENDING waits (amber), OPEN lets promotions through (green), CLOSED holds them (red). */
import type { Gate } from '../api/types.ts';

export function GateBadge({ gate }: { gate: Gate }) {
  const detail = [gate.reason, gate.decidedBy && `decided by ${gate.decidedBy}`, gate.forced && 'forced'].filter(Boolean).join('; ');
  return (
    <span className={`badge gate-${gate.state.toLowerCase()}`} title={detail || undefined}>
      <span className="dot" aria-hidden="true" />
      {gate.state}
    </span>
  );
}
