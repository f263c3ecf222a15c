/**
 * Owns the values Sluice writes into structured header fields (RFC 9651): an sf-string holds
 * printable ASCII only, with `\` and `"` escaped, so no value can close its string and forge a
 * parameter or a second list member; a header name is a token.
 */
import { invalidOption } from '@sluice/core/web'

/** Printable ASCII (%x20-7E): all an sf-string may hold. */
const SF_STRING_TEXT = /^[\x20-\x7e]*$/
/** RFC 9110 token characters: a field name. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i

/** True when `text` may be written as an sf-string (after escaping). */
export function isSfStringText(text: string): boolean {
  return SF_STRING_TEXT.test(text)
}

/** Refuses, at creation, a value that cannot be an sf-string: a ConfigError naming `option`. */
export function checkSfStringText(text: string, option: string): void {
  if (!isSfStringText(text)) {
    invalidOption(option, text, 'printable ASCII (a structured-header string holds nothing else)')
  }
}

/**
 * `text` as an sf-string: quoted, `\` and `"` escaped. Characters an sf-string cannot hold
 * (controls, non-ASCII) are written as `%XX` of their UTF-8 bytes, for names only known at
 * request time (rules); names given as options are refused at creation instead.
 */
export function sfString(text: string): string {
  const printable = isSfStringText(text) ? text : text.replace(/[^\x20-\x7e]+/g, percentEncoded)
  return `"${printable.replace(/[\\"]/g, '\\$&')}"`
}

const utf8 = new TextEncoder()

/** `%XX` per UTF-8 byte (a lone surrogate as U+FFFD's bytes; encodeURIComponent would throw). */
function percentEncoded(run: string): string {
  let out = ''
  for (const byte of utf8.encode(run)) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  return out
}

/** Refuses a header name that is no token (it would be written into every response). */
export function checkHeaderName(name: unknown, option: string): void {
  if (typeof name !== 'string' || !TOKEN.test(name)) {
    invalidOption(option, name, "a header name (letters, digits and !#$%&'*+.^_`|~-)")
  }
}
