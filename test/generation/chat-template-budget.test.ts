/**
 * Chat templates from model files are code: hostile ones (issue #23 item 1) are clean
 * ChatTemplateErrors, bounded in steps, sizes and time, rendered off the JS thread (the event loop
 * turns meanwhile), and the render worker survives them for the next render; the real Qwen3 template
 * renders exactly as @huggingface/jinja's own Template does, on this thread and in the worker.
 */
import { Template } from '@huggingface/jinja';
import { jinjaChatTemplate, type ChatMessage } from '../../lib/generation/chat';
import { ChatTemplateError, TEMPLATE_BUDGET } from '../../lib/chat-template/budget';
import { parseTemplate, renderBounded } from '../../lib/chat-template/bounded-render';
import { renderInWorker } from '../../lib/chat-template/render-client';
import { readJson } from '../helpers/fixtures';
import { watchEventLoop } from '../helpers/event-loop';

const HI: ChatMessage[] = [{ role: 'user', content: 'Hi!' }];
const HUGE_RANGE = '{% for i in range(10**9) %}{% endfor %}{{ messages[0].content }}';
const NESTED_RANGES = '{% for i in range(20000) %}{% for j in range(20000) %}{% endfor %}{% endfor %}{{ messages[0].content }}';
const DOUBLING = '{% set ns = namespace(s="ab") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}';

async function rejection(promise: Promise<unknown>): Promise<ChatTemplateError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ChatTemplateError);
    return error as ChatTemplateError;
  }
  throw new Error('expected the render to be refused');
}

function thrown(f: () => unknown): ChatTemplateError {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(ChatTemplateError);
    return error as ChatTemplateError;
  }
  throw new Error('expected the render to be refused');
}

describe('hostile templates', () => {
  it('range(10**9) is refused before any list is made, on this thread and in the worker', async () => {
    expect(thrown(() => jinjaChatTemplate(HUGE_RANGE).render(HI)).reason).toBe('size');
    const error = await rejection(jinjaChatTemplate(HUGE_RANGE).renderAsync(HI));
    expect(error.reason).toBe('size');
    expect(error.message).toMatch(/range\(\) of 1000000000 items/);
  });

  it('two nested range(20000) loops stop at the step or time budget, in the worker, the event loop turning meanwhile', async () => {
    const watch = watchEventLoop();
    const error = await rejection(jinjaChatTemplate(NESTED_RANGES).renderAsync(HI));
    expect(['steps', 'time']).toContain(error.reason);
    expect(watch.stop().ticks).toBeGreaterThan(5);
    // The worker is still there for the next render.
    expect(await jinjaChatTemplate('{{ messages[0].content }}').renderAsync(HI)).toBe('Hi!');
  });

  it('a string that doubles is refused past the size budget', async () => {
    expect(thrown(() => jinjaChatTemplate(DOUBLING).render(HI)).reason).toBe('size');
    expect((await rejection(jinjaChatTemplate(DOUBLING).renderAsync(HI))).reason).toBe('size');
  });

  it('a loop of cheap steps stops at the step budget, with the budget named', () => {
    const source = '{% for i in range(100000) %}{{ i }}{% endfor %}';
    const error = thrown(() => renderBounded(parseTemplate(source), {}, { ...TEMPLATE_BUDGET, steps: 10_000 }));
    expect(error.reason).toBe('steps');
    expect(error.message).toMatch(/10000 steps/);
  });

  it('the time budget holds on this thread too, checked between steps', () => {
    // With no step budget to speak of, only the clock check can end these 4e8 loop turns: a 'time' refusal is the proof.
    const error = thrown(() => renderBounded(parseTemplate(NESTED_RANGES), { messages: HI }, { ...TEMPLATE_BUDGET, steps: 1e12, ms: 100 }));
    expect(error.reason).toBe('time');
  });

  it('a worker that runs past its time is ended, and a fresh one renders the next template', async () => {
    // A budget the in-render check cannot meet on its own: the watchdog ends the worker.
    const budget = { ...TEMPLATE_BUDGET, steps: 1e12, ms: 1, graceMs: 50 };
    const error = await rejection(renderInWorker(NESTED_RANGES, { messages: HI }, budget));
    expect(error.reason).toBe('time');
    expect(await renderInWorker('{{ 6 * 7 }}', {})).toBe('42');
  });

  it('a render that fills the worker heap is a memory error, the process and the next render unharmed', async () => {
    const budget = { ...TEMPLATE_BUDGET, heapMb: 16, steps: 1e12, ms: 60_000, graceMs: 60_000 };
    // 3000 flat strings of 32768 characters (96 MB), each within the size budget.
    const source = '{% set ns = namespace(s="ab", l=[]) %}{% for i in range(14) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}' +
      '{% for i in range(3000) %}{% set ns.l = ns.l + [(ns.s ~ i) | upper] %}{% endfor %}{{ ns.l | length }}';
    const error = await rejection(renderInWorker(source, {}, budget));
    expect(error.reason).toBe('memory');
    expect(await renderInWorker('{{ "ok" }}', {})).toBe('ok');
  });

  it('raise_exception, unknown filters and recursion are render errors', async () => {
    expect(thrown(() => jinjaChatTemplate('{{ raise_exception("no tools here") }}').render(HI)).message).toMatch(/no tools here/);
    expect(thrown(() => jinjaChatTemplate('{{ messages | nosuchfilter }}').render(HI)).reason).toBe('render');
    const deep = '{{ ' + '('.repeat(5000) + '1' + ')'.repeat(5000) + ' }}';
    expect(['parse', 'render']).toContain(thrown(() => jinjaChatTemplate(deep).render(HI)).reason);
  });

  it('a source past TEMPLATE_BUDGET.sourceChars is refused as it is read', () => {
    const long = `{{ messages[0].content }}${' '.repeat(TEMPLATE_BUDGET.sourceChars)}`;
    expect(thrown(() => jinjaChatTemplate(long)).reason).toBe('parse');
  });
});

describe('real templates render as before', () => {
  const source = readJson('tokenizers', 'qwen3', 'tokenizer_config.json').chat_template as string;
  const reference = new Template(source);
  const conversations: ChatMessage[][] = [
    HI,
    [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi!' }, { role: 'assistant', content: '<think>\nhm\n</think>\n\nHello.' }, { role: 'user', content: 'Again?' }],
    [{ role: 'user', content: 'weather?' }, { role: 'assistant', content: 'calling' }, { role: 'tool', content: '{"t": 20}' }],
  ];
  it('the Qwen3 template, in the worker and on this thread, gives what @huggingface/jinja gives', async () => {
    const template = jinjaChatTemplate(source);
    for (const messages of conversations) {
      for (const enableThinking of [false, true]) {
        const expected = reference.render({ messages, add_generation_prompt: true, enable_thinking: enableThinking });
        expect(await template.renderAsync(messages, { enableThinking })).toBe(expected);
        expect(template.render(messages, { enableThinking })).toBe(expected);
      }
    }
  });

  it('strftime_now and range() behave as the library\'s own', () => {
    const t = '{{ strftime_now("%Y") }}|{{ range(3) | join(",") }}|{{ range(1, 7, 2) | join(",") }}|{{ range(5, 0, -2) | join(",") }}';
    expect(renderBounded(parseTemplate(t), {})).toBe(new Template(t).render({}));
  });
});
