/**
 * A button for an action that is not undone by a click: the first click asks, the second does it; a spinner
 * shows while it runs, and its error stays beside it.
 */
import { useState } from 'react';
import { Spinner } from './spinner.tsx';

export function ConfirmButton(props: {
  label: string;
  confirmLabel: string;
  run: () => Promise<unknown>;
  pending: boolean;
  error: Error | null;
}) {
  const [confirming, setConfirming] = useState(false);
  if (!confirming)
    return (
      <button type="button" onClick={() => setConfirming(true)}>
        {props.label}
      </button>
    );
  return (
    <span className="confirm">
      <button
        type="button"
        className="danger"
        disabled={props.pending}
        onClick={() =>
          void props.run().then(
            () => setConfirming(false),
            () => undefined,
          )
        }
      >
        {props.pending && <Spinner />} {props.confirmLabel}
      </button>
      <button type="button" onClick={() => setConfirming(false)} disabled={props.pending}>
        Cancel
      </button>
      {props.error && (
        <span className="error" role="alert">
          {props.error.message}
        </span>
      )}
    </span>
  );
}
