/** Owns how a problem in a rules document is located: its path, as the file would spell it. */

/** A problem found in a rules document, before it is given a line. */
export interface Issue {
  readonly path: (string | number)[]
  readonly message: string
}

/** Longest key shown in a path: a file that is not rules may have a line for a key. */
const MAX_KEY_SHOWN = 40

/** A key as a path shows it, cut short when long. */
export function shownKey(key: string): string {
  return key.length > MAX_KEY_SHOWN ? `${key.slice(0, MAX_KEY_SHOWN)}...` : key
}

/** `['descriptors', 0, 'rate_limit']` as `descriptors[0].rate_limit`. */
export function pathLabel(path: readonly (string | number)[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? shownKey(part) : `.${shownKey(part)}`
  }
  return out
}
