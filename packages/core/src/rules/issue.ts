/** Owns how a problem in a rules document is located: its path, as the file would spell it. */

/** A problem found in a rules document, before it is given a line. */
export interface Issue {
  readonly path: (string | number)[]
  readonly message: string
}

/** `['descriptors', 0, 'rate_limit']` as `descriptors[0].rate_limit`. */
export function pathLabel(path: readonly (string | number)[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? part : `.${part}`
  }
  return out
}
