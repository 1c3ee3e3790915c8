/** Where a Live page is: Live › cluster › namespace › the object's kind and name, each a link up. */
import { Link } from 'react-router';
import { useUiMode } from '../session/ui-mode.tsx';
import { liveClusterPage, liveNamespacePage } from './live-paths.ts';

export function LiveBreadcrumb(props: { cluster: string; namespace?: string; object?: string }) {
  const local = useUiMode().kind === 'local';
  const { cluster, namespace, object } = props;
  return (
    <p className="breadcrumb">
      {!local && (
        <>
          <Link to="/live">Live</Link> ›{' '}
        </>
      )}
      {namespace ? <Link to={liveClusterPage(cluster)}>{cluster}</Link> : cluster}
      {namespace && <> › {object ? <Link to={liveNamespacePage(cluster, namespace)}>{namespace}</Link> : namespace}</>}
      {object && <> › {object}</>}
    </p>
  );
}
