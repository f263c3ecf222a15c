/**
 * Owns bundling code for Vercel's edge runtime as Next.js bundles it: the published builds of
 * the packages (run `npm run build` first), resolved by the `edge-light` condition, for a
 * neutral platform, so a Node built-in anywhere on the path fails the build; as a classic script
 * that puts the entry's exports in one global, as edge-runtime's EdgeVM evaluates it.
 */
import { build } from 'esbuild'

/** The module at `entry` as a script that sets `globalThis[globalName]` to its exports. */
export async function bundleForEdge(entry: string, globalName: string): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['edge-light', 'worker', 'browser'],
    format: 'iife',
    globalName,
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  })
  return result.outputFiles[0].text
}
