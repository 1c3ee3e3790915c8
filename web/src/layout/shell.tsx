/**
 * The frame of every page: the navigation on the left (KluctlDeployments and Live are to come and shown as such),
 * and on top who is logged in and whether live updates flow.
 */
import type { ReactNode } from 'react';
import { NavLink } from 'react-router';
import { useLiveStatus } from '../api/live-updates.tsx';
import { useIdentity, useLogOut } from '../session/session.tsx';
import { Spinner } from '../ui/spinner.tsx';

export function Shell({ children }: { children: ReactNode }) {
  return (
    <div className="shell">
      <nav className="sidebar" aria-label="Main">
        <div className="brand">Gantry</div>
        <NavLink to="/fleet">Fleet</NavLink>
        <NavLink to="/pipelines">Pipelines</NavLink>
        <span className="nav-later" title="coming later">
          KluctlDeployments
        </span>
        <span className="nav-later" title="coming later">
          Live
        </span>
      </nav>
      <div className="main">
        <header className="topbar">
          <LiveIndicator />
          <UserMenu />
        </header>
        <main className="content">{children}</main>
      </div>
    </div>
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
      <button type="button" onClick={() => logOut.mutate()} disabled={logOut.isPending}>
        {logOut.isPending && <Spinner />} Log out
      </button>
    </span>
  );
}
