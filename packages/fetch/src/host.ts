/**
 * Owns which HTTP pipeline host the Fetch adapters build on. Where only web APIs exist it is
 * @sluice/http's, whose `rules` are compiled (a RuleSet or a RulesWatcher); the `node` entry
 * (node.ts) swaps in @sluice/rules' host, whose `rules` may also be a file path or a document,
 * as in the Node adapters. The swap happens once, when that entry loads, before any limiter.
 */
import { createHttpLimiter as webHost } from '@sluice/http'

type HttpHost = typeof webHost

let host: HttpHost = webHost

export function useHttpHost(nodeHost: HttpHost): void {
  host = nodeHost
}

export const createHttpLimiter: HttpHost = (...args) => host(...args)
