/**
 * Owns the Responses the Fetch adapters send: a refusal (status, headers, JSON body) and an
 * admitted request's Response with the rate-limit headers added.
 */
import { JSON_CONTENT_TYPE, type HeaderList, type RejectVerdict } from '@sluice/http'

/** A refused request's Response: its status, headers and JSON body, as the Node adapters send it. */
export function refusalResponse(verdict: RejectVerdict, json: string | undefined): Response {
  const headers = new Headers(verdict.headers as Array<[string, string]>)
  headers.set('Content-Type', JSON_CONTENT_TYPE)
  return new Response(json ?? JSON.stringify(verdict.body), { status: verdict.status, headers })
}

/**
 * `response` with those of `headers` it does not carry yet. A header it has was set nearer the
 * handler: by an inner limiter (whose 429 must say why it refused, not what this one has left)
 * or the handler itself, and is kept, as on Express, where the last writer wins. Responses whose
 * headers are immutable (from `fetch()`, `Response.redirect()`) are copied first; the body is
 * passed on, never read.
 */
export function withHeaders(response: Response, headers: HeaderList): Response {
  if (headers.length === 0) return response
  try {
    addMissing(response.headers, headers)
    return response
  } catch {
    const copy = new Response(response.body, response)
    addMissing(copy.headers, headers)
    return copy
  }
}

/** Sets each of `headers` that `target` does not have (an immutable `target` throws at the first). */
function addMissing(target: Headers, headers: HeaderList): void {
  for (const [name, value] of headers) if (!target.has(name)) target.set(name, value)
}
