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
export { renderSvg } from './svg'
export type { RenderOptions } from './svg'
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
} from './svg-primitives'
export { makeTrace, seededRandom, TRACE_NAMES } from './traces'
export type { TraceName, TraceOptions } from './traces'
export { runSimulateCommand } from './command'
export type { CommandIo } from './command'
