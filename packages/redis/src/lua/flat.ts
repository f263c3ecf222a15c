/**
 * Owns the flat scripts' public surface: one policy's script per algorithm (frame.ts, meters.ts,
 * windows.ts in ./flat).
 */
export type { BakedPolicy } from './flat/frame'
export { bucketFlat, gcraFlat } from './flat/meters'
export {
  fixedWindowFlat,
  slidingLogFlat,
  slidingWindowFlat,
  slidingWindowPackedFlat,
} from './flat/windows'
