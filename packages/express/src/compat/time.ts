/** express-rate-limit's duration constants in ms, for readable `windowMs` values. */
export const SECOND = 1000
export const MINUTE = 60 * SECOND
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR
