/**
 * Owns the Node build's createHttpLimiter: the pipeline with rules that may be a file path
 * (loaded and watched) or a document.
 */
import { createRulesLimiter } from '../rules/open'
import { httpLimiterFactory } from './pipeline'

export const createHttpLimiter = httpLimiterFactory(createRulesLimiter)
