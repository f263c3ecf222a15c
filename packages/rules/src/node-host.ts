/**
 * Owns the Node adapters' createHttpLimiter: @sluice/http's pipeline, with rules that may also be
 * a file path (loaded and watched) or a document (validated). Express, Fastify, Koa and Nest
 * build on it; the Fetch adapters take @sluice/http's, which takes compiled rules only.
 */
import { httpLimiterFactory } from '@sluice/http'
import { createRulesLimiter } from './open'

export const createHttpLimiter = httpLimiterFactory(createRulesLimiter)
