/** Key-value tags (clusters') as chips. */
export function Tags({ tags }: { tags: Record<string, string> }) {
  const entries = Object.entries(tags);
  if (entries.length === 0) return <span className="muted">—</span>;
  return (
    <span className="tags">
      {entries.map(([key, value]) => (
        <span key={key} className="tag">
          {key}={value}
        </span>
      ))}
    </span>
  );
}
