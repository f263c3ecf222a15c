import { defineConfig } from 'tsup'
import base from '../../tsup.base'

// Two entries: the store, and the `sluice postgres` command core's CLI loads on demand.
export default defineConfig({
  ...base,
  entry: { index: 'src/index.ts', cli: 'src/cli.ts' },
})
