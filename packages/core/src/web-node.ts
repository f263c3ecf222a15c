/**
 * @sluice/core/web as Node resolves it (the `node` export condition): the same names as web.ts,
 * built with the other entries (one ConfigError class with the main entry's), and the pipeline
 * whose `rules` may be a file path or a document, as in the Node adapters.
 */
export * from './web'
export { createHttpLimiter } from './http/node'
