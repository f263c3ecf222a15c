/**
 * Hands the platform work that must finish after the response is sent: Cloudflare Workers'
 * `ctx.waitUntil`, Next.js's `event.waitUntil`. It must not throw (a throw is caught and
 * logged once per store). Declared here, below the options that take it, so the store calls
 * that use it import nothing above them.
 */
export type WaitUntil = (promise: Promise<unknown>) => void
