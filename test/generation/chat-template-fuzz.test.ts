/**
 * Fuzzing chat templates (issue #23): structured templates built from the constructs that blow up
 * (loops over large ranges, nesting, doubling strings and lists, amplifying filters, recursion-like
 * nesting) and random byte soup, each rendered in the render worker with a small time budget.
 * Every outcome must be text or a ChatTemplateError; the worker (and this process) survive each.
 * Also `convert --to ajc1`'s template rendering (ajc1TemplatesFromHf) on a hostile folder.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { jinjaChatTemplate, type ChatMessage } from '../../lib/generation/chat';
import { ChatTemplateError, TEMPLATE_BUDGET } from '../../lib/chat-template/budget';
import { renderInWorker } from '../../lib/chat-template/render-client';
import { ajc1TemplatesFromHf } from '../../lib/formats/vocabulary/ajc1-sidecars';
import { tempDir } from '../helpers/fixtures';
import { mulberry32 } from '../helpers/rng';

const BUDGET = { ...TEMPLATE_BUDGET, ms: 300, graceMs: 1000 };
const HI: ChatMessage[] = [{ role: 'user', content: 'Hi <|im_end|> there' }];

function structured(rand: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const n = () => pick(['3', '1000', '20000', '10**6', '10**9', '-5', '2**40', '0']);
  const expr = (): string => pick([
    'messages[0].content',
    `range(${n()}) | length`,
    `(messages[0].content ~ messages[0].content) * ${n()}`,
    `messages[0].content | replace("", messages[0].content)`,
    `messages[0].content | indent(${n()})`,
    `messages | tojson(indent=${n()})`,
    `messages[0].content.split("")`,
    `range(${n()}) | join(messages[0].content)`,
    `messages[0].content[${n()}:]`,
    'raise_exception("x")',
    'undefined_name.attr',
  ]);
  const stmt = (depth: number): string => {
    if (depth > 3) return `{{ ${expr()} }}`;
    return pick([
      () => `{{ ${expr()} }}`,
      () => `{% for i in range(${n()}) %}${stmt(depth + 1)}{% endfor %}`,
      () => `{% set ns = namespace(s="ab") %}{% for i in range(${n()}) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}`,
      () => `{% if messages %}${stmt(depth + 1)}{% else %}x{% endif %}`,
      () => `{% macro m(x) %}${stmt(depth + 1)}{% endmacro %}{{ m(1) }}{{ m(2) }}`,
    ])();
  };
  return stmt(0) + stmt(0);
}

function soup(rand: () => number): string {
  const alphabet = ['{{', '}}', '{%', '%}', 'for', 'in', 'range(', ')', '10**9', 'messages', '|', '~', '[', ']', ' ', 'endfor', 'set', '=', '"', '\u0000', '\uD800'];
  return Array.from({ length: 4 + Math.floor(rand() * 30) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('');
}

describe('chat template fuzzing', () => {
  it.each([['structured', structured, 1], ['random', soup, 2]] as const)('%s templates: text or a ChatTemplateError, every one', async (_kind, make, seed) => {
    const rand = mulberry32(seed);
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < 40; i++) {
      const source = make(rand);
      let outcome: string;
      try {
        const template = jinjaChatTemplate(source); // parses here, as loadModel does
        const context = { messages: HI.map((m) => ({ ...m })), add_generation_prompt: true };
        expect(typeof (await renderInWorker(source, context, BUDGET))).toBe('string');
        expect(template.kind).toBe('jinja');
        outcome = 'text';
      } catch (error) {
        if (!(error instanceof ChatTemplateError)) throw new Error(`not a ChatTemplateError for ${JSON.stringify(source)}: ${String(error)}`);
        outcome = error.reason;
      }
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    }
    // The table of the closing report: cases by outcome.
    console.log(`${_kind}: ${JSON.stringify(outcomes)}`);
    expect(await renderInWorker('{{ "alive" }}', {})).toBe('alive');
  });
});

describe('convert --to ajc1 renders the folder\'s template within the budget', () => {
  const tmp = tempDir('weightmap-ajc1-template-');
  afterAll(() => tmp.cleanup());
  it('a hostile chat_template is a ChatTemplateError, not a hang', async () => {
    const dir = path.join(tmp.dir, 'hf');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: '{% for i in range(20000) %}{% for j in range(20000) %}{% endfor %}{% endfor %}x' }));
    await expect(ajc1TemplatesFromHf(dir)).rejects.toThrow(ChatTemplateError);
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: '[{{ messages[0].content }}]{% if add_generation_prompt %}>{% endif %}' }));
    expect(await ajc1TemplatesFromHf(dir)).toEqual({ default: '[%s]>', withThinking: '[%s]>', withSystem: '[%s]>', withSystemAndThinking: '[%s]>' });
  });
});
