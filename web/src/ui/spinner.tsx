/** Progress: a small spinner beside what is under way, and a page-sized one while a page's data loads. */

export function Spinner({ label }: { label?: string }) {
  return <span className="spinner" role="progressbar" aria-label={label ?? 'working'} />;
}

export function LoadingPage({ what }: { what: string }) {
  return (
    <div className="loading" aria-busy="true">
      <Spinner label={`loading ${what}`} /> Loading {what}…
    </div>
  );
}
