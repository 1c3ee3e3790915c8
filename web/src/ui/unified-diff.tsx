/** A unified diff as text, its added and removed lines coloured and its hunk headers set apart. */
export function UnifiedDiff({ diff, label }: { diff: string; label?: string }) {
  return (
    <pre className="code diff" aria-label={label}>
      {diff.split('\n').map((line, index) => (
        <span key={index} className={lineClass(line)}>
          {`${line}\n`}
        </span>
      ))}
    </pre>
  );
}

function lineClass(line: string): string | undefined {
  if (line.startsWith('+++') || line.startsWith('---')) return 'file';
  if (line.startsWith('+')) return 'added';
  if (line.startsWith('-')) return 'removed';
  if (line.startsWith('@@')) return 'hunk';
  return undefined;
}
