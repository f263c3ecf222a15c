import { defineConfig } from 'tsup'
import base from '../../tsup.base'

// The main entry and @fastify/rate-limit's drop-in (`@sluice/fastify/compat`).
export default defineConfig({
  ...base,
  entry: { index: 'src/index.ts', compat: 'src/compat/index.ts' },
})
