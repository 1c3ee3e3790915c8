/** What a command changed, as chips: new, changed, deleted and orphan objects, errors and warnings; "no changes" when none. */
import type { ResultSummary } from './kluctl-resource.ts';

export function ResultCounts({ summary }: { summary: Omit<ResultSummary, 'id' | 'commandInfo' | 'objectsHash' | 'revision'> }) {
  const chips = [
    { count: summary.newObjects, word: 'new', tone: 'ok' },
    { count: summary.changedObjects, word: 'changed', tone: 'warn' },
    { count: summary.deletedObjects, word: 'deleted', tone: 'bad' },
    { count: summary.orphanObjects, word: 'orphan', tone: '' },
    { count: summary.errors.length, word: summary.errors.length === 1 ? 'error' : 'errors', tone: 'bad' },
    { count: summary.warnings.length, word: summary.warnings.length === 1 ? 'warning' : 'warnings', tone: 'warn' },
  ].filter((chip) => chip.count > 0);
  if (chips.length === 0) return <span className="muted">no changes</span>;
  return (
    <span className="counts">
      {chips.map((chip) => (
        <span key={chip.word} className={`tag ${chip.tone}`}>
          {chip.count} {chip.word}
        </span>
      ))}
    </span>
  );
}
