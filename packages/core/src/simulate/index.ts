/**
 * The simulator's public API: run a limiter over a trace, draw the result.
 */
export { simulate } from './simulate'
export type {
  Trace,
  TraceRequest,
  SimulateOptions,
  SimulatedRequest,
  SimulationResult,
} from './simulate'
export { renderSvg, SVG_COLORS } from './svg'
export type { RenderOptions } from './svg'
export { makeTrace, seededRandom, TRACE_NAMES } from './traces'
export type { TraceName, TraceOptions } from './traces'
export { runSimulateCommand } from './command'
export type { CommandIo } from './command'
