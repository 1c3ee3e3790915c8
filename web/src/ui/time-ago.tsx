/** A time as "12 s ago", kept current while shown; the exact time is its tooltip. */
import { useEffect, useState } from 'react';

const TICK_MS = 5_000;

export function TimeAgo({ time }: { time: string | null }) {
  const now = useNow();
  if (time === null) return <span className="muted">never</span>;
  return (
    <time dateTime={time} title={new Date(time).toLocaleString()}>
      {ago(now - Date.parse(time))}
    </time>
  );
}

function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), TICK_MS);
    return () => clearInterval(timer);
  }, []);
  return now;
}

function ago(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}
