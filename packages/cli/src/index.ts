/**
 * The simulator's public API: run a limiter over a trace, draw the result.
 */
export { simulate } from './simulate/simulate'
export type {
  Trace,
  TraceRequest,
  SimulateOptions,
  SimulatedRequest,
  SimulationResult,
} from './simulate/simulate'
export { renderSvg, SVG_COLORS } from './simulate/svg'
export type { RenderOptions } from './simulate/svg'
export { makeTrace, seededRandom, TRACE_NAMES } from './simulate/traces'
export type { TraceName, TraceOptions } from './simulate/traces'
export { runSimulateCommand } from './simulate/command'
export type { CommandIo } from './simulate/command'
