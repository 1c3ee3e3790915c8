/**
 * The UI's build: `vite build` (run by scripts/setup/web.ts) writes web/dist, which `gantry server` serves.
 * `vite web` serves it for development with the API proxied to a local `gantry server` on its default port.
 */
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const SERVER = 'http://127.0.0.1:8090';

export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
  server: { proxy: { '/v1': SERVER, '/healthz': SERVER } },
});
