/** A health as a coloured badge (health.ts decides which); the detail, when given, is its tooltip. */
import type { Health } from '../health.ts';
import { Spinner } from './spinner.tsx';

export function StatusBadge({ health, label, detail }: { health: Health; label?: string; detail?: string }) {
  return (
    <span className={`badge badge-${health.toLowerCase()}`} title={detail}>
      {health === 'Progressing' ? <Spinner label={label ?? health} /> : <span className="dot" aria-hidden="true" />}
      {label ?? health}
    </span>
  );
}
