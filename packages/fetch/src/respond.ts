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
 * `response` with `headers` set. Responses whose headers are immutable (from `fetch()`,
 * `Response.redirect()`) are copied first; the body is passed on, never read.
 */
export function withHeaders(response: Response, headers: HeaderList): Response {
  if (headers.length === 0) return response
  try {
    for (const [name, value] of headers) response.headers.set(name, value)
    return response
  } catch {
    const copy = new Response(response.body, response)
    for (const [name, value] of headers) copy.headers.set(name, value)
    return copy
  }
}
