/**
 * Owns telling Cloudflare Workers apart, by their documented user agent: there a request's
 * timers and pending I/O end with it (core's per-call deadlines, the Upstash client's requests).
 */
export function onCloudflareWorkers(): boolean {
  const agent = (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent
  return agent === 'Cloudflare-Workers'
}
