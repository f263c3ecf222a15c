/**
 * @sluice/fetch as Node (and Deno and Bun, by their `node` condition) resolves it: the same
 * names as index.ts, with `rules` that may also be a file path (loaded and watched) or a
 * document, through @sluice/rules. Its types are index.ts's.
 */
import { createHttpLimiter } from '@sluice/rules'
import { useHttpHost } from './host'

useHttpHost(createHttpLimiter)

export * from './index'
export { default } from './index'
