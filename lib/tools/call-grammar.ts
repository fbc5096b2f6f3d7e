/**
 * The grammar of one tool call's JSON, `{"name": "<a tool's name>", "<argumentsKey>": <arguments>}`,
 * where the arguments are generated under the JSON-schema mask of that tool's `parameters`: the
 * name is read from a trie of the headers, and the header read decides which tool's grammar the
 * arguments follow. Mistral's array of calls is an array of these (at most maxCalls). The header is written as the
 * families' templates show it (one space after each colon and comma); up to MAX_WHITESPACE bytes of
 * whitespace may come before the call and after its arguments.
 */
import { CompiledJsonSchema, type JsonSchema } from '../constrain';
import { REJECT, type GrammarNode, type Push } from '../constrain/automaton';
import { ByteTrie } from '../constrain/byte-trie';
import { ArrayNode, LiteralNode, MAX_WHITESPACE, NodeIds } from '../constrain/json-nodes';
import { compileJsonSchemasSteps } from '../constrain/json-schema';
import { inSlices } from '../constrain/slices';
import type { ToolCallFormat } from './formats';
import { TOOL_LIMITS, type ToolDefinition } from './types';

const W = MAX_WHITESPACE;
const isWhitespace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
const CLOSE_BRACE = 0x7d;

/** A tool without parameters takes none: `{}`. */
const NO_PARAMETERS: JsonSchema = { type: 'object', properties: {} };

class ToolCallNode implements GrammarNode {
  readonly id: number;
  readonly start = 0;
  private readonly afterArgs = W + 1;
  private readonly done: number;
  private readonly trieBase: number;
  private readonly pushes: Push[];

  constructor(
    ids: NodeIds,
    private readonly headers: ByteTrie,
    argumentNodes: readonly GrammarNode[],
  ) {
    this.id = ids.take(headers.byteLength);
    this.done = this.afterArgs + argumentNodes.length * (W + 1);
    this.trieBase = this.done + 1;
    this.pushes = argumentNodes.map((child, i) => ({ child, resume: this.afterArgs + i * (W + 1) }));
  }

  step(sub: number, b: number): number | Push {
    if (sub <= W) {
      if (isWhitespace(b)) return sub < W ? sub + 1 : REJECT;
      const s = this.headers.step(this.headers.start, b);
      return s === REJECT ? REJECT : this.trieBase + s;
    }
    if (sub >= this.trieBase) {
      const s = sub - this.trieBase;
      // Names differ and end with a quote: a header read completely is no other's prefix.
      if (this.headers.accepting(s)) return this.pushes[this.headers.stringAt(s)];
      const next = this.headers.step(s, b);
      return next === REJECT ? REJECT : this.trieBase + next;
    }
    if (sub === this.done) return REJECT;
    const ws = (sub - this.afterArgs) % (W + 1);
    if (b === CLOSE_BRACE) return this.done;
    if (isWhitespace(b)) return ws < W ? sub + 1 : REJECT;
    return REJECT;
  }

  accepting(sub: number): boolean {
    return sub === this.done;
  }
}

/**
 * The grammar of a call to one of `tools` (each one's parameters compiled, UnsupportedError /
 * ConstraintError naming `tools[i].parameters` for one the mask cannot enforce), in slices.
 */
export async function prepareToolCallGrammar(tools: readonly ToolDefinition[], format: ToolCallFormat, maxCalls: number = TOOL_LIMITS.maxCallsPerReply): Promise<CompiledJsonSchema> {
  if (tools.length === 0) throw new TypeError('a tool call grammar needs at least one tool');
  const depth = format.array ? 3 : 2;
  const schemas = tools.map((t, i) => ({ schema: t.parameters ?? NO_PARAMETERS, path: `(tools[${i}].parameters)` }));
  return inSlices(
    (function* () {
      const { roots, ids } = yield* compileJsonSchemasSteps(schemas, depth);
      const headers = tools.map((t) => Buffer.from(`{"name": ${JSON.stringify(t.name)}, "${format.argumentsKey}": `, 'utf8'));
      const call = new ToolCallNode(ids, yield* ByteTrie.build(headers), roots);
      let root: GrammarNode = call;
      if (format.array) {
        const array = new ArrayNode(ids, 1, maxCalls);
        array.items = call;
        root = array;
      }
      const key = `tool-call:${JSON.stringify({ family: format.family, key: format.argumentsKey, array: format.array, maxCalls, tools: tools.map((t) => [t.name, t.parameters ?? NO_PARAMETERS]) })}`;
      return new CompiledJsonSchema(root, key, ids.bytes);
    })(),
  );
}

/**
 * The grammar of one of `words` (none a prefix of another, so that a word read is the whole
 * text: end them with a separator), as a constraint takes it.
 */
export async function prepareWordGrammar(words: readonly string[]): Promise<CompiledJsonSchema> {
  if (words.length === 0) throw new TypeError('a word grammar needs at least one word');
  return inSlices(
    (function* () {
      const ids = new NodeIds();
      // One of the names, byte for byte (a header that is not JSON: Harmony's): a literal node's trie walk.
      const root = new LiteralNode(ids, yield* ByteTrie.build(words.map((w) => Buffer.from(w, 'utf8'))));
      return new CompiledJsonSchema(root, `words:${JSON.stringify(words)}`, ids.bytes);
    })(),
  );
}

/**
 * Each tool's arguments alone (Harmony's calls, whose header is no JSON): its parameters compiled,
 * UnsupportedError / ConstraintError naming `tools[i].parameters` for one the mask cannot enforce.
 */
export async function prepareArgumentGrammars(tools: readonly ToolDefinition[]): Promise<CompiledJsonSchema[]> {
  const schemas = tools.map((t, i) => ({ schema: t.parameters ?? NO_PARAMETERS, path: `(tools[${i}].parameters)` }));
  return inSlices(
    (function* () {
      const { roots, ids } = yield* compileJsonSchemasSteps(schemas, 1);
      return roots.map((root, i) => new CompiledJsonSchema(root, `tool-arguments:${JSON.stringify([tools[i].name, schemas[i].schema])}`, ids.bytes));
    })(),
  );
}
