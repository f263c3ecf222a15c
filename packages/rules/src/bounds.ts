/**
 * Owns the bounds every rules file is held to, so that no file, however hostile (a YAML alias
 * that refers to its own ancestor, an alias bomb, a deeply nested or a huge file), costs more
 * than a stated amount of time and memory to refuse. Each check reports the path it stopped at.
 */
import type { DescriptorConfig } from './schema'
import { pathLabel, type Issue } from '@sluice/http'

/** Largest rules file read or parsed: 8 MiB (a file of 58,220 rules is 7 MB). */
export const MAX_RULES_BYTES = 8 * 1024 * 1024
/**
 * Most values (mappings, lists and scalars) a rules document may hold, counted before parsing
 * by the marks that can start one and after YAML aliases are expanded. A rule is about 7.
 */
export const MAX_RULES_VALUES = 1_000_000
/** Most descriptors in a file, after YAML aliases are expanded. */
export const MAX_DESCRIPTORS = 100_000
/** Deepest nesting of descriptors (a top-level descriptor is level 1). */
export const MAX_DESCRIPTOR_DEPTH = 32
/**
 * Deepest nesting of values: the document, then a list and a descriptor per level, then a
 * descriptor's `rate_limit` and its scalars; two more, so that one descriptor too many is
 * reported as such.
 */
export const MAX_VALUE_DEPTH = 2 * MAX_DESCRIPTOR_DEPTH + 4

/** A path as messages name it: `descriptors[0].key`, or 'the rules' for the whole document. */
function subject(path: readonly (string | number)[]): string {
  return path.length === 0 ? 'the rules' : `\`${pathLabel(path)}\``
}

export const DEPTH_RULE = `values may nest at most ${MAX_VALUE_DEPTH} levels deep (descriptors at most ${MAX_DESCRIPTOR_DEPTH})`

/** How many of `text`'s characters can start a YAML value: line breaks and `- : , [ { ? *`. */
function valueMarks(text: string): number {
  let marks = 0
  for (let i = 0; i < text.length; i++) {
    switch (text.charCodeAt(i)) {
      case 10: // \n
      case 42: // *
      case 44: // ,
      case 45: // -
      case 58: // :
      case 63: // ?
      case 91: // [
      case 123: // {
        marks++
    }
  }
  return marks
}

/**
 * Refuses text too large to parse within the bounds: YAML parsing takes about 0.5 KB of memory
 * per value, so the values are bounded before parsing (by an upper estimate, 30 ms for 8 MB).
 */
export function checkTextBounds(text: string): Issue | undefined {
  if (text.length > MAX_RULES_BYTES) {
    return {
      path: [],
      message: `the file is ${text.length} characters long; a rules file may be at most ${MAX_RULES_BYTES} bytes (8 MiB)`,
    }
  }
  const marks = valueMarks(text)
  if (marks > MAX_RULES_VALUES) {
    return {
      path: [],
      message: `the file has ${marks} line breaks and \`- : , [ { ? *\` (the marks a value can start at); a rules file may have at most ${MAX_RULES_VALUES}, as it may hold at most ${MAX_RULES_VALUES} values`,
    }
  }
  return undefined
}

/** The problem found where the depth bound is passed. */
export function tooDeep(path: (string | number)[]): Issue {
  return { path, message: `${subject(path)} nests too deeply: ${DEPTH_RULE}` }
}

interface Step {
  readonly value: unknown
  readonly depth: number
  readonly parent: Step | undefined
  readonly label: string | number | undefined
}

function pathOf(step: Step): (string | number)[] {
  const path: (string | number)[] = []
  for (let at: Step | undefined = step; at?.label !== undefined; at = at.parent) {
    path.unshift(at.label)
  }
  return path
}

/**
 * Walks a parsed document as validation will (shared references once per place they appear,
 * as YAML aliases expand), without recursion, and stops at the first bound passed: a value
 * that contains itself, more than MAX_RULES_VALUES values or nesting past MAX_VALUE_DEPTH.
 * Costs at most MAX_RULES_VALUES steps whatever the document.
 */
export function checkValueBounds(document: unknown): Issue | undefined {
  let count = 0
  // The containers on the way from the root to the step being walked.
  const open = new Set<object>()
  const stack: (Step | { readonly leave: object })[] = [
    { value: document, depth: 0, parent: undefined, label: undefined },
  ]
  while (stack.length > 0) {
    const step = stack.pop() as Step | { readonly leave: object }
    if ('leave' in step) {
      open.delete(step.leave)
      continue
    }
    if (++count > MAX_RULES_VALUES) {
      const path = pathOf(step)
      return {
        path,
        message: `the rules hold more than ${MAX_RULES_VALUES} values once YAML aliases are expanded (the count passed it at ${subject(path)}); a rules file may hold at most ${MAX_RULES_VALUES}`,
      }
    }
    if (step.depth > MAX_VALUE_DEPTH) return tooDeep(pathOf(step))
    const { value } = step
    if (value === null || typeof value !== 'object') continue
    const entries: [string | number, unknown][] = Array.isArray(value)
      ? value.map((item, i) => [i, item])
      : Object.entries(value)
    open.add(value)
    stack.push({ leave: value })
    for (let i = entries.length - 1; i >= 0; i--) {
      const [label, child] = entries[i]
      const next: Step = { value: child, depth: step.depth + 1, parent: step, label }
      if (child !== null && typeof child === 'object' && open.has(child)) {
        const path = pathOf(next)
        return {
          path,
          message: `${subject(path)} contains itself (a YAML alias of an enclosing value, or a cycle in the object); rules must be a tree`,
        }
      }
      stack.push(next)
    }
  }
  return undefined
}

/** Refuses a schema-valid tree with more than MAX_DESCRIPTORS or nested past MAX_DESCRIPTOR_DEPTH. */
export function checkDescriptorBounds(descriptors: readonly DescriptorConfig[]): Issue | undefined {
  let count = 0
  const stack: { list: readonly DescriptorConfig[]; path: (string | number)[]; level: number }[] = [
    { list: descriptors, path: ['descriptors'], level: 1 },
  ]
  while (stack.length > 0) {
    const { list, path, level } = stack.pop() as (typeof stack)[number]
    for (let i = 0; i < list.length; i++) {
      const here = [...path, i]
      if (level > MAX_DESCRIPTOR_DEPTH) {
        return { path: here, message: `${subject(here)} nests too deeply: ${DEPTH_RULE}` }
      }
      if (++count > MAX_DESCRIPTORS) {
        return {
          path: here,
          message: `${subject(here)} is descriptor number ${count} once YAML aliases are expanded; a rules file may hold at most ${MAX_DESCRIPTORS}`,
        }
      }
      const children = list[i].descriptors
      if (children !== undefined && children.length > 0) {
        stack.push({ list: children, path: [...here, 'descriptors'], level: level + 1 })
      }
    }
  }
  return undefined
}
