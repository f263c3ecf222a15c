/**
 * @sluice/core/web as Node resolves it (the `node` export condition): the same names as web.ts,
 * built with the other entries, so that its classes (ConfigError...) are the main entry's.
 */
export * from './web'
