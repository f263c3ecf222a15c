/** Milliseconds since the Unix epoch. Tests inject a fake one so algorithm tests are exact and instant. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()
