/** The login form: a user name and password, checked by POST /v1/login, which sets the session cookie. */
import { type FormEvent, useState } from 'react';
import { Spinner } from '../ui/spinner.tsx';
import { useLogIn } from './session.tsx';

export function LoginPage() {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const logIn = useLogIn();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    logIn.mutate({ username, password });
  };
  return (
    <main className="login">
      <form className="login-card" onSubmit={submit} aria-label="Log in">
        <h1 className="brand">Gantry</h1>
        <p className="muted">Continuous delivery for your Kubernetes fleet</p>
        <label>
          User name
          <input name="username" autoComplete="username" value={username} onChange={(event) => setUsername(event.target.value)} required />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(event) => setPassword(event.target.value)}
            required
          />
        </label>
        {logIn.isError && (
          <p className="error" role="alert">
            {logIn.error.message}
          </p>
        )}
        <button type="submit" className="primary" disabled={logIn.isPending}>
          {logIn.isPending && <Spinner />} Log in
        </button>
      </form>
    </main>
  );
}
