/**
 * The frame of every page: the navigation on the left, and on top who is logged in and whether live updates flow.
 * Under `gantry webui` there is no fleet and no login: only the KluctlDeployments and Live pages, and on top the
 * kubeconfig context they show.
 */
import type { ReactNode } from 'react';
import { Link, NavLink } from 'react-router';
import { useLiveStatus } from '../api/live-updates.tsx';
import type { UiConfig } from '../api/types.ts';
import { PASSWORD_PATH } from '../session/password-page.tsx';
import { useIdentity, useLogOut } from '../session/session.tsx';
import { useUiMode } from '../session/ui-mode.tsx';
import { Spinner } from '../ui/spinner.tsx';

export function Shell({ children }: { children: ReactNode }) {
  const mode = useUiMode();
  return (
    <div className="shell">
      <nav className="sidebar" aria-label="Main">
        <div className="brand">Gantry</div>
        {mode.kind === 'fleet' && (
          <>
            <NavLink to="/fleet">Fleet</NavLink>
            <NavLink to="/pipelines">Pipelines</NavLink>
            <NavLink to="/globalservices">Global services</NavLink>
          </>
        )}
        <NavLink to="/kluctl">KluctlDeployments</NavLink>
        <NavLink to="/live">Live</NavLink>
      </nav>
      <div className="main">
        <header className="topbar">
          {mode.kind === 'local' ? (
            <LocalContext config={mode.config} />
          ) : (
            <>
              <LiveIndicator />
              <UserMenu />
            </>
          )}
        </header>
        <main className="content">{children}</main>
      </div>
    </div>
  );
}

function LocalContext({ config }: { config: UiConfig }) {
  return (
    <span className="user" title="gantry webui: no login; whoever reaches it acts with the kubeconfig's credentials">
      <span>
        Context <strong>{config.context}</strong> <span className="muted">({config.server})</span>
      </span>
      <span className="tag warn">local, no login</span>
    </span>
  );
}

function LiveIndicator() {
  const status = useLiveStatus();
  const text = { live: 'Live', connecting: 'Connecting…', offline: 'Reconnecting… (polling)' }[status];
  return (
    <span className={`live live-${status}`} title="updates from the server as they happen">
      <span className="dot" aria-hidden="true" />
      {text}
    </span>
  );
}

function UserMenu() {
  const identity = useIdentity();
  const logOut = useLogOut();
  const roles = [...new Set(identity.grants.map((grant) => grant.role))].join(', ') || 'no role';
  return (
    <span className="user">
      <span>
        <strong>{identity.name}</strong> <span className="muted">({roles})</span>
      </span>
      {/* A token's identity has no password to change. */}
      {identity.kind === 'user' && <Link to={PASSWORD_PATH}>Update password</Link>}
      <button type="button" onClick={() => logOut.mutate()} disabled={logOut.isPending}>
        {logOut.isPending && <Spinner />} Log out
      </button>
    </span>
  );
}
