import type { FixedImage } from '../project/fixed-images.ts';
import type { Inclusion } from '../project/inclusion.ts';
import type { Values } from '../values.ts';

/**
 * What to render, as plain data: the CLI builds it from its flags (src/cli/options.ts), the controller from a
 * KluctlDeployment's spec, the agent from a service.
 */
export interface TargetRequest {
  projectDir: string;
  /** The target's name; undefined for a project without targets. */
  target?: string | undefined;
  /** Kluctl's `-T`: the target's name as templates and the discriminator see it. */
  targetNameOverride?: string | undefined;
  /** Args, over the target's own (Kluctl's `-a`, already parsed). */
  args: Values;
  /** Overrides the target's context. */
  context?: string | undefined;
  /** Overrides the project's and the target's discriminator. */
  discriminator?: string | undefined;
  /** Tag and folder selection; items outside it are neither rendered nor deployed. */
  inclusion: Inclusion;
  /** Fixed images after the target's own (later entries win). */
  fixedImages: readonly FixedImage[];
}
