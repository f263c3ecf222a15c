import fc from 'fast-check'
import { decodeState, encodeState } from '../src/rows'

test('a state vector survives its byte form exactly (-0 as 0), whatever its numbers', () => {
  const numbers = fc.oneof(fc.nat(), fc.maxSafeNat(), fc.integer(), fc.double({ noNaN: true }))
  fc.assert(
    fc.property(fc.array(numbers), fc.nat(8), (state, extra) => {
      const bytes = Buffer.from(encodeState(state), 'hex')
      const expected = [...state.map((x) => (x === 0 ? 0 : x)), ...new Array(extra).fill(0)]
      expect(decodeState(bytes, state.length + extra)).toEqual(expected)
    }),
    { numRuns: 2000 },
  )
})

test('whole numbers take a few bytes: a fixed-window state of an hour window is 4', () => {
  // [window number since the epoch (1 h), count]
  expect(Buffer.from(encodeState([494_000, 1]), 'hex')).toHaveLength(4)
  expect(encodeState([7, 0, 0])).toBe(encodeState([7]))
})

test('bytes this store did not write are refused', () => {
  expect(decodeState(Buffer.from([0x81]), 1)).toBeUndefined() // a varint cut short
  expect(decodeState(Buffer.from([3]), 1)).toBeUndefined() // an odd tag
  expect(decodeState(Buffer.from([1, 0, 0]), 1)).toBeUndefined() // a float64 cut short
})
