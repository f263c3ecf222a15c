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
export { renderSvg } from './simulate/svg'
export type { RenderOptions } from './simulate/svg'
export {
  escapeXml,
  HALO,
  num,
  SVG_COLORS,
  SVG_PALETTE,
  svgBackground,
  svgOpen,
  svgRect,
  svgText,
} from './simulate/svg-primitives'
export { makeTrace, seededRandom, TRACE_NAMES } from './simulate/traces'
export type { TraceName, TraceOptions } from './simulate/traces'
export { runSimulateCommand } from './simulate/command'
export type { CommandIo } from './simulate/command'
