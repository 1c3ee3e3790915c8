/**
 * The logged-in user's own password (POST /v1/me/password), as Argo CD's User Info → Update password: the current
 * one, which the server checks and counts as a login, and the new one twice, so a typo cannot lock the user out.
 * The server ends the user's other sessions and keeps this one.
 */
import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { changePassword } from '../api/fleet.ts';
import { ErrorMessage } from '../ui/error-message.tsx';
import { Spinner } from '../ui/spinner.tsx';

export const PASSWORD_PATH = '/account/password';

export function PasswordPage() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const change = useMutation({
    mutationFn: (passwords: { current: string; next: string }) => changePassword(passwords.current, passwords.next),
    // Nothing typed stays on the page once it served.
    onSuccess: () => {
      setCurrent('');
      setNext('');
      setAgain('');
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    change.reset();
    setMismatch(next !== again);
    if (next === again) change.mutate({ current, next });
  };
  const problem = mismatch ? new Error('the new passwords differ') : change.error;
  return (
    <>
      <h1>Update password</h1>
      <form className="password-form" onSubmit={submit} aria-label="Update password">
        <PasswordField label="Current password" autoComplete="current-password" value={current} onChange={setCurrent} />
        <PasswordField label="New password" autoComplete="new-password" value={next} onChange={setNext} />
        <PasswordField label="New password again" autoComplete="new-password" value={again} onChange={setAgain} />
        {problem && <ErrorMessage error={problem} />}
        {change.isSuccess && (
          <p className="success-box" role="status">
            Your password is changed. Your other sessions have ended; API tokens made for you still work.
          </p>
        )}
        <button type="submit" className="primary" disabled={change.isPending}>
          {change.isPending && <Spinner />} Update password
        </button>
      </form>
    </>
  );
}

function PasswordField(props: { label: string; autoComplete: string; value: string; onChange: (value: string) => void }) {
  return (
    <label>
      {props.label}
      <input
        type="password"
        autoComplete={props.autoComplete}
        value={props.value}
        onChange={(event) => props.onChange(event.target.value)}
        required
      />
    </label>
  );
}
