/**
 * Owns running the HTTP scenarios on Fetch adapters (@sluice/fetch, @sluice/hono): served with
 * real sockets by @hono/node-server's request listener, and the scenarios' options given the
 * view of a request they are written against (`ip`, a header record, a path as `url`).
 */
import type { ServerResponse } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import type { HttpRequestLike } from '@sluice/http'
import { listen, type ScenarioApp, type ScenarioOptions } from './harness'

/** What @hono/node-server passes a fetch handler beside the request. */
export interface NodeBindings {
  incoming: { socket: { remoteAddress?: string } }
}

/**
 * Serves a Fetch handler on 127.0.0.1 and a free port; closing the app runs `onClose` (the
 * limiter's close) before the server closes.
 */
export async function serveFetch(
  fetch: (request: Request, env: NodeBindings) => Response | Promise<Response>,
  onClose: () => void = () => {},
): Promise<ScenarioApp> {
  const served = await listen(getRequestListener(fetch as Parameters<typeof getRequestListener>[0]))
  return {
    server: served.server,
    close: () => {
      onClose()
      return served.close()
    },
  }
}

/**
 * The client address the Node adapters would see: the socket's, or with `trustProxy` (one
 * trusted loopback hop) the last X-Forwarded-For entry.
 */
export function scenarioIp(request: Request, socketIp: string | undefined, trustProxy: boolean) {
  const forwarded = request.headers.get('x-forwarded-for')
  if (!trustProxy || forwarded === null) return socketIp
  const hops = forwarded.split(',')
  return hops[hops.length - 1].trim()
}

/** The scenarios' view of a request: its address, headers as a record, its path and query. */
function viewOf(request: Request, ip: string | undefined): HttpRequestLike {
  const url = new URL(request.url)
  return {
    ip,
    headers: Object.fromEntries(request.headers),
    url: url.pathname + url.search,
  }
}

type Fn = (...args: never[]) => unknown

/**
 * The scenarios' options for an adapter whose functions get `Req`: every request-taking function
 * is called with the view of `requestOf(req)`; `requestWasSuccessful` with a `statusCode`.
 */
export function fetchScenarioOptions<Req, Opts>(
  options: ScenarioOptions,
  requestOf: (req: Req) => Request,
  ipOf: (req: Req) => string | undefined,
): Opts {
  const view = (req: Req) => viewOf(requestOf(req), ipOf(req))
  const wrapped: Record<string, unknown> = { ...options }
  for (const name of ['key', 'skip', 'cost', 'limit', 'message', 'onLimited', 'descriptors']) {
    const fn = (options as Record<string, unknown>)[name]
    if (typeof fn === 'function') {
      wrapped[name] = (req: Req, ...rest: unknown[]) =>
        (fn as Fn)(...([view(req), ...rest] as never[]))
    }
  }
  for (const name of ['allowList', 'denyList']) {
    const fn = (options as Record<string, unknown>)[name]
    if (typeof fn === 'function') {
      wrapped[name] = (req: Req, key: string) => (fn as Fn)(...([view(req), key] as never[]))
    }
  }
  const succeeded = options.requestWasSuccessful
  if (succeeded !== undefined) {
    wrapped.requestWasSuccessful = (req: Req, response: Response) =>
      succeeded(view(req), { statusCode: response.status } as ServerResponse)
  }
  return wrapped as Opts
}
