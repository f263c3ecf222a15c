/**
 * Owns declaring a layer's options once: one table of each option's doc line, default and
 * check, from which the layer's known names, its defaults and its first pass of checks derive.
 * The table is typed by the layer's options interface, so the compiler holds the two to the
 * same names; a test holds each name to its JSDoc and to a line in docs/.
 */
import { ConfigError, describeValue } from './errors'

/** One option of a layer. */
export interface OptionSpec {
  /** What the option is, in one line (its docs/ entry says the same). */
  readonly doc: string
  /** Its value when unset; absent when there is none, or when it derives from other options. */
  readonly default?: unknown
  /**
   * Checks a given value on its own, once, at creation: a ConfigError naming the option and the
   * value. Absent when the value is checked with others (the layer's resolver says where).
   */
  readonly check?: (value: unknown, name: string) => unknown
  /** null counts as unset and takes the default (as `value ?? default` reads it). @default false */
  readonly orNull?: boolean
}

/** A spec for every option of `O`, no more and no fewer. */
export type OptionTable<O> = { readonly [K in keyof Required<O>]: OptionSpec }

/** A layer's declared options and what derives from them. */
export interface DeclaredOptions<O> {
  /** Who takes the options, as errors name it, e.g. 'createLimiter'. */
  readonly where: string
  readonly table: OptionTable<O>
  /** The option names the layer knows: the table's. */
  readonly names: readonly string[]
  /**
   * Checks `given` (an object of known names whose values pass their checks) and returns it
   * frozen, with every declared default filled in for an unset option (or a null one, `orNull`). `where` names the
   * taker in errors when it is not `this.where` (an adapter's framework, say).
   */
  resolve(given: O, where?: string): Readonly<O>
}

/** Rejects option names that no version of Sluice knows, so a typo is not silently ignored. */
export function checkKnownOptions(options: object, known: readonly string[], where: string): void {
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw new ConfigError(
        `unknown option \`${name}\` for ${where} (value ${describeValue((options as Record<string, unknown>)[name])})`,
      )
    }
  }
}

export function declareOptions<O extends object>(
  where: string,
  table: OptionTable<O>,
): DeclaredOptions<O> {
  const names = Object.freeze(Object.keys(table))
  const specs = table as Readonly<Record<string, OptionSpec>>
  return {
    where,
    table,
    names,
    resolve(given, taker = where) {
      checkKnownOptions(given, names, taker)
      const settings: Record<string, unknown> = {}
      for (const name of names) {
        const value = (given as Record<string, unknown>)[name]
        const spec = specs[name]!
        if (value === undefined || (value === null && spec.orNull === true)) {
          settings[name] = spec.default
        } else {
          spec.check?.(value, name)
          settings[name] = value
        }
      }
      return Object.freeze(settings) as Readonly<O>
    },
  }
}
