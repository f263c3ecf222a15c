/**
 * Owns turning a parsed YAML document into plain values, with each alias as a reference to its
 * anchor's value (a bomb of aliases stays the size of its text; checkValueBounds then bounds its
 * expansion) and an alias of an enclosing value refused. yaml's own toJS resolves each alias by
 * scanning every anchor before it (13 s for a 2 MB file of 20,000 aliases), and follows nesting
 * by recursion; this is one pass, without recursion.
 */
import { isAlias, isMap, isScalar, isSeq, type Document } from 'yaml'
import { MAX_VALUE_DEPTH, tooDeep } from './bounds'
import { pathLabel, type Issue } from '@sluice/http'

/** A map key as a path part and an object key: the text of a scalar, shortened for messages. */
function keyOf(key: unknown): string | undefined {
  if (!isScalar(key)) return undefined
  return key.value === null ? '' : String(key.value)
}

/** Sets `key` as an own property, `__proto__` included (an assignment would set the prototype). */
/** What a rules value may be: text, a number, a boolean or null, as YAML's core schema reads them. */
function isPlainScalar(value: unknown): boolean {
  const type = typeof value
  return value === null || type === 'string' || type === 'number' || type === 'boolean'
}

/**
 * A tagged scalar read as something else (`!!binary` as bytes, a timestamp as a Date): refused
 * where it is, before anything walks it (megabytes of `!!binary` were millions of entries).
 */
function notPlainScalar(path: (string | number)[], tag: string | undefined): Issue {
  const where = path.length === 0 ? 'the rules' : `\`${pathLabel(path)}\``
  return {
    path,
    message: `${where} is a ${tag ?? 'tagged'} value; rules values are text, numbers, booleans or null`,
  }
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    })
  } else {
    target[key] = value
  }
}

interface Task {
  readonly node: unknown
  readonly path: (string | number)[]
  readonly assign: (value: unknown) => void
}

/** The document's value, or the first problem found converting it. */
export function documentValue(document: Document): { value: unknown } | { issue: Issue } {
  let result: unknown = null
  // The latest value of each anchor name: an alias refers to the last anchor before it.
  const anchors = new Map<string, { node: unknown; value: unknown }>()
  const open = new Set<unknown>()
  const stack: (Task | { readonly leave: unknown })[] = [
    { node: document.contents, path: [], assign: (value) => (result = value) },
  ]
  while (stack.length > 0) {
    const task = stack.pop() as Task | { readonly leave: unknown }
    if ('leave' in task) {
      open.delete(task.leave)
      continue
    }
    const { node, path, assign } = task
    if (node === null || node === undefined) {
      assign(null)
      continue
    }
    if (path.length > MAX_VALUE_DEPTH) return { issue: tooDeep(path) }
    if (isAlias(node)) {
      const target = anchors.get(node.source)
      // yaml reports an alias without its anchor as a syntax error, before this runs.
      if (target === undefined) continue
      if (open.has(target.node)) {
        return {
          issue: {
            path,
            message: `\`${pathLabel(path)}\` is an alias (*${node.source.slice(0, 40)}) of a value that contains it; rules must be a tree`,
          },
        }
      }
      assign(target.value)
      continue
    }
    let value: unknown
    if (isScalar(node)) {
      value = node.value
      if (!isPlainScalar(value)) return { issue: notPlainScalar(path, node.tag) }
    } else if (isMap(node)) {
      const object: Record<string, unknown> = {}
      const entries: Task[] = []
      for (const pair of node.items) {
        const key = keyOf(pair.key)
        if (key === undefined) {
          return {
            issue: {
              path,
              message: `${path.length === 0 ? 'the rules' : `\`${pathLabel(path)}\``} has a key that is not a plain scalar (a list, mapping or alias); rules keys are names`,
            },
          }
        }
        entries.push({
          node: pair.value,
          path: [...path, key],
          assign: (child) => setOwn(object, key, child),
        })
      }
      value = object
      pushChildren(stack, node, entries)
    } else if (isSeq(node)) {
      const list: unknown[] = new Array<unknown>(node.items.length).fill(null)
      const items = node.items.map((item, i) => ({
        node: item,
        path: [...path, i],
        assign: (child: unknown) => (list[i] = child),
      }))
      value = list
      pushChildren(stack, node, items)
    } else {
      continue
    }
    if (node.anchor !== undefined) anchors.set(node.anchor, { node, value })
    assign(value)
  }
  return { value: result }

  function pushChildren(
    to: (Task | { readonly leave: unknown })[],
    node: unknown,
    children: readonly Task[],
  ): void {
    open.add(node)
    to.push({ leave: node })
    for (let i = children.length - 1; i >= 0; i--) to.push(children[i])
  }
}
