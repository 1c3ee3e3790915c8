/** What stands for a secret value the UI never shows (or, for configuration, never receives). */
export const MASK = '••••••••';
