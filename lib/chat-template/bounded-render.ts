/**
 * Renders a parsed @huggingface/jinja template within a TemplateBudget (budget.ts): every
 * expression and statement the interpreter evaluates is a step, counted and timed; every string
 * and list it makes is measured as it is made; `range()` is refused before it allocates a list
 * past the budget (the library's own range() pushes every item: range(10**9) is a fatal V8
 * "invalid size" abort, which no try/catch and no worker survives). Synchronous: one step at most
 * runs past a bound (render-client.ts runs renders in a worker that ends such a step).
 */
import type { Interpreter, Template } from '@huggingface/jinja';
import { lazy } from '../base/lazy';
import { ChatTemplateError, TEMPLATE_BUDGET, type TemplateBudget } from './budget';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const jinjaModule = lazy(() => require('@huggingface/jinja') as typeof import('@huggingface/jinja'));

/** Parses a template source of at most budget.sourceChars characters. */
export function parseTemplate(source: string, budget: TemplateBudget = TEMPLATE_BUDGET): Template {
  if (source.length > budget.sourceChars) {
    throw new ChatTemplateError('parse', `the chat template has ${source.length} characters, more than the ${budget.sourceChars} allowed`);
  }
  try {
    return new (jinjaModule().Template)(source);
  } catch (error) {
    throw new ChatTemplateError('parse', `this chat template cannot be parsed: ${(error as Error).message}`);
  }
}

const CHECK_TIME_EVERY = 64;

/** The interpreter's own evaluate() and evaluateBlock(), which it calls for every node and every loop turn (private in its typings). */
type Evaluate = (statement: unknown, environment: unknown) => { value: unknown };
type Steps = { evaluate: Evaluate; evaluateBlock: Evaluate; run: Interpreter['run'] };

/** Renders `template` with the variables of `context`, within `budget`. */
export function renderBounded(template: Template, context: Record<string, unknown>, budget: TemplateBudget = TEMPLATE_BUDGET): string {
  const jinja = jinjaModule();
  const env = new jinja.Environment();
  for (const [name, value] of Object.entries({ ...globals(budget), ...context })) env.set(name, value);
  const interpreter = new jinja.Interpreter(env) as unknown as Steps;
  const deadline = Date.now() + budget.ms;
  let steps = 0;
  const step = (count = 1) => {
    steps += count;
    if (steps > budget.steps) throw new ChatTemplateError('steps', `the chat template ran past ${budget.steps} steps`);
    if ((count > 1 || steps % CHECK_TIME_EVERY === 0) && Date.now() > deadline) throw new ChatTemplateError('time', `the chat template ran past ${budget.ms} ms`);
  };
  // Own properties in front of the prototype's: the interpreter's recursive calls come through
  // them. A block is a step of its own (a loop with an empty body evaluates nothing else per
  // turn), and a loop's items are charged as steps when its iterable is made: the interpreter
  // prepares a scope per item before the first turn.
  const evaluate = interpreter.evaluate.bind(interpreter);
  const evaluateBlock = interpreter.evaluateBlock.bind(interpreter);
  const iterables: unknown[] = [];
  interpreter.evaluate = (statement, environment) => {
    step();
    const loop = statement as { type?: string; iterable?: { type?: string; lhs?: unknown } };
    if (loop?.type === 'For') iterables.push(loop.iterable?.type === 'SelectExpression' ? loop.iterable.lhs : loop.iterable);
    try {
      const result = evaluate(statement, environment);
      const value = result?.value;
      checkSize(value, budget);
      if (iterables.length > 0 && iterables[iterables.length - 1] === statement) {
        step(Array.isArray(value) ? value.length : value instanceof Map ? value.size : 0);
      }
      return result;
    } finally {
      if (loop?.type === 'For') iterables.pop();
    }
  };
  interpreter.evaluateBlock = (statements, environment) => {
    step();
    const result = evaluateBlock(statements, environment);
    checkSize(result.value, budget);
    return result;
  };
  try {
    const out = interpreter.run(template.parsed as Parameters<Interpreter['run']>[0]).value;
    if (typeof out !== 'string') throw new ChatTemplateError('render', 'the chat template did not render to text');
    return out;
  } catch (error) {
    if (error instanceof ChatTemplateError) throw error;
    const message = (error as Error)?.message ?? String(error);
    // V8's own limits, caught: a string past its maximum length, a recursion past the stack.
    if (error instanceof RangeError && /string length/i.test(message)) throw new ChatTemplateError('size', `the chat template made a string past ${budget.chars} characters`);
    throw new ChatTemplateError('render', `the chat template failed on these messages: ${message}`);
  }
}

function checkSize(value: unknown, budget: TemplateBudget): void {
  if (typeof value === 'string') {
    if (value.length > budget.chars) throw new ChatTemplateError('size', `the chat template made a string of ${value.length} characters, more than ${budget.chars}`);
  } else if (Array.isArray(value)) {
    if (value.length > budget.items) throw new ChatTemplateError('size', `the chat template made a list of ${value.length} items, more than ${budget.items}`);
  } else if (value instanceof Map && value.size > budget.items) {
    throw new ChatTemplateError('size', `the chat template made a mapping of ${value.size} entries, more than ${budget.items}`);
  }
}

/** Python's range(), refused past budget.items before any list is made. */
function boundedRange(budget: TemplateBudget) {
  return (...args: unknown[]): number[] => {
    if (args.length < 1 || args.length > 3 || !args.every((a) => Number.isSafeInteger(a))) {
      throw new ChatTemplateError('render', 'range() takes one to three integers');
    }
    const [start, stop, step] = (args.length === 1 ? [0, args[0], 1] : [args[0], args[1], args[2] ?? 1]) as number[];
    if (step === 0) throw new ChatTemplateError('render', 'range() step must not be zero');
    const count = Math.max(0, Math.ceil((stop - start) / step));
    if (count > budget.items) throw new ChatTemplateError('size', `the chat template's range() of ${count} items is more than ${budget.items}`);
    const out = new Array<number>(count);
    for (let i = 0; i < count; i++) out[i] = start + i * step;
    return out;
  };
}

/** The globals @huggingface/jinja's Template.render sets (its setupGlobals), range() bounded. */
function globals(budget: TemplateBudget): Record<string, unknown> {
  return {
    false: false,
    true: true,
    none: null,
    False: false,
    True: true,
    None: null,
    raise_exception: (message: unknown) => {
      throw new ChatTemplateError('render', `the chat template raised: ${String(message)}`);
    },
    range: boundedRange(budget),
    strftime_now: strftimeNow,
  };
}

/** @huggingface/jinja's strftime_now: %Y %m %d %b %B %H %M %% of the local time. */
function strftimeNow(format: unknown): string {
  if (typeof format !== 'string') throw new ChatTemplateError('render', 'strftime_now() takes a format string');
  const date = new Date();
  const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
  return format.replace(/%[YmdbBHM%]/g, (token) => {
    switch (token) {
      case '%Y': return `${date.getFullYear()}`;
      case '%m': return pad2(date.getMonth() + 1);
      case '%d': return pad2(date.getDate());
      case '%b': return new Intl.DateTimeFormat(undefined, { month: 'short' }).format(date);
      case '%B': return new Intl.DateTimeFormat(undefined, { month: 'long' }).format(date);
      case '%H': return pad2(date.getHours());
      case '%M': return pad2(date.getMinutes());
      default: return '%';
    }
  });
}
