import { defineConfig } from 'tsup'
import base from '../../tsup.base'

// Two entries: index (web platforms) and node (the same names, rules files through @sluice/rules).
export default defineConfig({ ...base, entry: ['src/index.ts', 'src/node.ts'] })
