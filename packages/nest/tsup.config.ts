import { defineConfig } from 'tsup'
import base from '../../tsup.base'

// Nest's decorators are TypeScript's legacy ones (experimentalDecorators, in ./tsconfig.json).
export default defineConfig({ ...base, tsconfig: 'tsconfig.json' })
