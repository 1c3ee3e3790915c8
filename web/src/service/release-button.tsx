/**
 * Ending a rollback's pin, once confirmed: the newest revision (one that waited, if any) becomes current and the
 * agent applies it; the service page then shows it being applied.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { fleet } from '../api/fleet.ts';
import type { Service } from '../api/types.ts';
import { ConfirmButton } from '../ui/confirm-button.tsx';

export function ReleaseButton({ service }: { service: Service }) {
  const queryClient = useQueryClient();
  const release = useMutation({
    mutationFn: () => fleet.releaseService(service.cluster, service.name),
    onSuccess: (updated) => {
      queryClient.setQueryData(['services', service.cluster, service.name], updated);
      void queryClient.invalidateQueries({ queryKey: ['services'] });
    },
  });
  const label = service.pendingRevision === null ? 'Release the pin' : `Release: apply #${service.pendingRevision}`;
  return (
    <ConfirmButton
      label={label}
      confirmLabel={`Confirm: ${label.toLowerCase()}`}
      run={() => release.mutateAsync()}
      pending={release.isPending}
      error={release.error}
    />
  );
}
