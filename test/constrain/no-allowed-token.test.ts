/**
 * When the constraint and the logit bias leave no token, generation ends with a ConstraintError
 * NO_ALLOWED_TOKEN instead of emitting a banned token (the native sampler would pick one: token 0
 * when every logit is -Infinity). The allowed sets are worked out here by walking each token's
 * bytes through the automaton on its own, apart from the mask code.
 */
import { advanceBytes, startState } from '../../lib/constrain/automaton';
import { compileJsonSchema, type JsonSchema } from '../../lib/constrain/json-schema';
import { ConstraintError } from '../../lib/base/errors';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture } from '../helpers/fixtures';

let model: Model;
beforeAll(async () => {
  model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin') });
});
afterAll(() => model.dispose());

const bytesOf = (t: number) => (model.tokenizer as unknown as { tokenBytes(id: number): Uint8Array | undefined }).tokenBytes(t);
const ids = () => Array.from({ length: model.vocabSize }, (_, t) => t);

async function failure(run: () => AsyncIterable<{ token: number }>): Promise<{ error: unknown; tokens: number[] }> {
  const tokens: number[] = [];
  try {
    for await (const piece of run()) tokens.push(piece.token);
  } catch (error) {
    return { error, tokens };
  }
  return { error: undefined, tokens };
}

describe('no allowed token', () => {
  it('a logit bias of -Infinity on every id is refused before anything is generated, greedy and sampled', () => {
    const logitBias = new Map(ids().map((t) => [t, -Infinity]));
    for (const temperature of [0, 1]) {
      expect(() => model.generate([1], { logitBias, temperature, maxTokens: 5 })).toThrow(ConstraintError);
      expect(() => model.generate([1], { logitBias, temperature, maxTokens: 5 })).toThrow(/bans every token/);
    }
    // One id left: that id, every time.
    const left = 97;
    const allButOne = new Map(ids().filter((t) => t !== left).map((t) => [t, -Infinity]));
    const generation = model.generate([1], { logitBias: allButOne, maxTokens: 4, stopTokens: [] });
    return generation.text().then(() => expect(generation.tokens).toEqual([left, left, left, left]));
  });

  it('a schema whose every first token the bias bans ends at once with NO_ALLOWED_TOKEN', async () => {
    const schema: JsonSchema = { type: 'integer' };
    const start = startState(compileJsonSchema(schema));
    const starters = ids().filter((t) => {
      const b = bytesOf(t);
      return b !== undefined && b.length > 0 && !model.tokenizer.isSpecial(t) && advanceBytes(start, b) !== null;
    });
    expect(starters.length).toBeGreaterThan(0);
    for (const temperature of [0, 1]) {
      const logitBias = new Map(starters.map((t) => [t, -Infinity]));
      const { error, tokens } = await failure(() => model.generate([1], { jsonSchema: schema, logitBias, temperature, seed: 3, maxTokens: 8 }));
      expect(error).toBeInstanceOf(ConstraintError);
      expect((error as ConstraintError).code).toBe('NO_ALLOWED_TOKEN');
      expect(tokens).toEqual([]);
    }
  });

  it('mid-generation: with every token holding "]" banned, an empty array opens, then generation ends typed, no banned token emitted', async () => {
    const schema: JsonSchema = { type: 'array', maxItems: 0 };
    const closing = ids().filter((t) => bytesOf(t)?.includes(0x5d));
    expect(closing.length).toBeGreaterThan(0);
    const logitBias = new Map(closing.map((t) => [t, -Infinity]));
    const { error, tokens } = await failure(() => model.generate([1], { jsonSchema: schema, logitBias, maxTokens: 64 }));
    expect(error).toBeInstanceOf(ConstraintError);
    expect((error as ConstraintError).code).toBe('NO_ALLOWED_TOKEN');
    const text = Buffer.concat(tokens.map((t) => Buffer.from(bytesOf(t)!))).toString('latin1');
    expect(text).toMatch(/^\[[ \t\n\r]*$/); // '[' and whitespace (at most 12 in a run), nothing banned
    for (const t of tokens) expect(closing).not.toContain(t);
  });
});
