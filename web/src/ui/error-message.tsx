/** An error as the server worded it, in a box that stands out from data. */
export function ErrorMessage({ error }: { error: Error }) {
  return (
    <div className="error-box" role="alert">
      {error.message}
    </div>
  );
}
