/** A page's tabs as links, so each tab has its own URL. */
import { NavLink } from 'react-router';

export function Tabs({ tabs }: { tabs: { to: string; label: string; end?: boolean }[] }) {
  return (
    <nav className="tabs" aria-label="Tabs">
      {tabs.map((tab) => (
        <NavLink key={tab.to} to={tab.to} end={tab.end ?? false} role="tab">
          {tab.label}
        </NavLink>
      ))}
    </nav>
  );
}
