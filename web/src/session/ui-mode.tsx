/**
 * Where the UI runs: on a fleet server (`gantry server`: every page, every cluster the user may read), or served by
 * `gantry webui` for one kubeconfig (only the KluctlDeployments and Live pages, for cluster `local`). `gantry
 * webui` answers GET /v1/ui-config; a fleet server has no such route and answers 404.
 */
import { useQuery } from '@tanstack/react-query';
import { createContext, type ReactNode, useContext } from 'react';
import { ApiError } from '../../../src/client/fleet-client.ts';
import type { UiConfig } from '../api/types.ts';
import { ErrorMessage } from '../ui/error-message.tsx';
import { LoadingPage } from '../ui/spinner.tsx';

export type UiMode = { kind: 'fleet' } | { kind: 'local'; config: UiConfig };

const UiModeContext = createContext<UiMode>({ kind: 'fleet' });

export function UiModeGate({ children }: { children: ReactNode }) {
  const mode = useQuery({ queryKey: ['ui-config'], queryFn: uiMode, staleTime: Infinity });
  if (mode.isPending) return <LoadingPage what="Gantry" />;
  if (mode.isError) return <ErrorMessage error={mode.error} />;
  return <UiModeContext.Provider value={mode.data}>{children}</UiModeContext.Provider>;
}

export function useUiMode(): UiMode {
  return useContext(UiModeContext);
}

async function uiMode(): Promise<UiMode> {
  const response = await fetch('/v1/ui-config', { credentials: 'same-origin' });
  if (response.status === 404) return { kind: 'fleet' };
  if (!response.ok) throw new ApiError(response.status, `GET /v1/ui-config: HTTP ${response.status}`);
  return { kind: 'local', config: (await response.json()) as UiConfig };
}
