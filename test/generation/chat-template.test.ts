/**
 * Chat templates: the Qwen3 template implemented in TS against FORMATS.md §5.4's exact strings,
 * against the fixture's .template files, and against the real Qwen3 Jinja template
 * (tokenizers/qwen3/tokenizer_config.json) rendered by @huggingface/jinja over many conversations.
 */
import * as fs from 'node:fs';
import { Template } from '@huggingface/jinja';
import {
  ajc1ChatTemplate,
  jinjaChatTemplate,
  qwen3ChatTemplate,
  splitThinking,
  type ChatMessage,
} from '../../lib/generation/chat';
import { fixture, readJson } from '../helpers/fixtures';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string, reasoningContent?: string): ChatMessage =>
  reasoningContent === undefined ? { role: 'assistant', content } : { role: 'assistant', content, reasoningContent };
const system = (content: string): ChatMessage => ({ role: 'system', content });
const tool = (content: string): ChatMessage => ({ role: 'tool', content });

// FORMATS.md §5.4, written out.
const SPEC = {
  default: '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  withThinking: '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n',
  withSystem: '<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  withSystemAndThinking: '<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n',
};

describe('the Qwen3 template', () => {
  it('renders FORMATS.md §5.4 exactly, thinking on and off, with and without a system message', () => {
    expect(qwen3ChatTemplate.render([user('%s')], { enableThinking: false })).toBe(SPEC.default);
    expect(qwen3ChatTemplate.render([user('%s')])).toBe(SPEC.default); // thinking is off by default
    expect(qwen3ChatTemplate.render([user('%s')], { enableThinking: true })).toBe(SPEC.withThinking);
    expect(qwen3ChatTemplate.render([system('%s'), user('%s')], { enableThinking: false })).toBe(SPEC.withSystem);
    expect(qwen3ChatTemplate.render([system('%s'), user('%s')], { enableThinking: true })).toBe(SPEC.withSystemAndThinking);
  });

  it('matches the fixture .template files byte for byte, and ajc1 templates that are Qwen3\'s become the Qwen3 template', () => {
    const read = (suffix: string) => fs.readFileSync(fixture('ajc1-qwen3-tiny', `model.bin${suffix}`), 'utf8');
    const files = {
      default: read('.template'),
      withThinking: read('.template.with-thinking'),
      withSystem: read('.template.with-system'),
      withSystemAndThinking: read('.template.with-system-and-thinking'),
    };
    expect(files).toEqual(SPEC);
    expect(ajc1ChatTemplate(files)).toBe(qwen3ChatTemplate);
    expect(ajc1ChatTemplate({ default: SPEC.default })).toBe(qwen3ChatTemplate);
  });

  it('renders the fixture prompt text from its user text', () => {
    const c = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0];
    expect(qwen3ChatTemplate.render([user(c.prompt.user_text)])).toBe(c.prompt.text);
  });

  describe('agrees with the real Qwen3 Jinja template (@huggingface/jinja)', () => {
    const source = readJson('tokenizers', 'qwen3', 'tokenizer_config.json').chat_template as string;
    const reference = new Template(source);
    const conversations: [string, ChatMessage[]][] = [
      ['one user turn', [user('Hi!')]],
      ['system and user', [system('Be brief.'), user('Hi!')]],
      ['two turns', [user('Hi!'), assistant('Hello.'), user('How are you?')]],
      ['an earlier reply that thought', [user('2+2?'), assistant('<think>\nadd them\n</think>\n\n4'), user('and 3+3?')]],
      ['a final assistant turn with thinking', [user('2+2?'), assistant('<think>\nadd\n</think>\n\n4')]],
      ['a final assistant turn without thinking', [user('2+2?'), assistant('4')]],
      ['reasoning kept apart', [user('q'), assistant('a', 'thought about it'), user('q2'), assistant('a2', 'more')]],
      ['a think block without its opening', [user('q'), assistant('just thinking\n</think>\n\nanswer')]],
      ['a second system message', [system('s1'), user('u'), system('s2'), user('u2')]],
      ['tool responses', [user('weather?'), assistant('calling'), tool('{"t": 20}'), tool('{"t": 21}'), assistant('20 degrees')]],
      ['a user message that is a tool response', [user('q'), assistant('a'), user('<tool_response>x</tool_response>')]],
      ['newlines around content', [user('\n\nspaced\n'), assistant('\n\nreply\n\n')]],
      ['empty content', [user(''), assistant('')]],
      ['unicode', [system('Réponds en français.'), user('Qu’est-ce qu’un café ? ☕ 東京')]],
    ];
    for (const [name, messages] of conversations) {
      for (const enableThinking of [false, true]) {
        for (const addGenerationPrompt of [true, false]) {
          it(`${name} (thinking ${enableThinking ? 'on' : 'off'}, generation prompt ${addGenerationPrompt ? 'on' : 'off'})`, () => {
            const expected = reference.render({
              messages: messages.map((m) => ({ role: m.role, content: m.content, ...(m.reasoningContent !== undefined ? { reasoning_content: m.reasoningContent } : {}) })),
              add_generation_prompt: addGenerationPrompt,
              enable_thinking: enableThinking,
            });
            expect(qwen3ChatTemplate.render(messages, { enableThinking, addGenerationPrompt })).toBe(expected);
            expect(jinjaChatTemplate(source).render(messages, { enableThinking, addGenerationPrompt })).toBe(expected);
          });
        }
      }
    }
  });

  it('rejects malformed messages', () => {
    expect(() => qwen3ChatTemplate.render([{ role: 'bot' as 'user', content: 'x' }])).toThrow(TypeError);
    expect(() => qwen3ChatTemplate.render([{ role: 'user', content: 5 as unknown as string }])).toThrow(TypeError);
    expect(() => qwen3ChatTemplate.render('hi' as unknown as ChatMessage[])).toThrow(TypeError);
  });

  it('ends a turn on <|im_end|> (and <|endoftext|>)', () => {
    expect(qwen3ChatTemplate.stopTokenTexts).toEqual(['<|im_end|>', '<|endoftext|>']);
  });
});

describe('other templates', () => {
  it('runs runq\'s single-turn substitution for .template files that are not Qwen3\'s', () => {
    const t = ajc1ChatTemplate({ default: '[U]%s[/U]', withSystem: '[S]%s[/S][U]%s[/U]', withThinking: '[U think]%s[/U]' });
    expect(t.kind).toBe('ajc1');
    expect(t.render([user('a 100% sure')])).toBe('[U]a 100% sure[/U]');
    expect(t.render([system('sys'), user('first'), assistant('x'), user('last')])).toBe('[S]sys[/S][U]last[/U]');
    expect(t.render([user('q')], { enableThinking: true })).toBe('[U think]q[/U]');
    // with thinking but no with-system-and-thinking file: the thinking template, system left out (as runq)
    expect(t.render([system('sys'), user('q')], { enableThinking: true })).toBe('[U think]q[/U]');
    expect(() => t.render([system('only')])).toThrow(RangeError);
  });

  it('renders a model\'s own Jinja template with its special tokens', () => {
    const source =
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}\n{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}";
    const t = jinjaChatTemplate(source, { bosToken: '<s>', eosToken: '</s>' });
    expect(t.render([system('s'), user('u')])).toBe('<s>[system] s</s>\n[user] u</s>\n[assistant] ');
    expect(t.render([user('u')], { addGenerationPrompt: false })).toBe('<s>[user] u</s>\n');
    expect(t.stopTokenTexts).toEqual(['</s>']);
    expect(() => jinjaChatTemplate('{% for %}')).toThrow(/cannot be parsed/);
  });
});

describe('splitThinking', () => {
  it('separates the think block from the answer', () => {
    expect(splitThinking('<think>\nstep 1\nstep 2\n</think>\n\nThe answer.')).toEqual({ reasoning: 'step 1\nstep 2', content: 'The answer.' });
    expect(splitThinking('<think>\n\n</think>\n\nHi')).toEqual({ reasoning: '', content: 'Hi' });
    expect(splitThinking('no block')).toEqual({ reasoning: '', content: 'no block' });
    expect(splitThinking('unopened</think>rest')).toEqual({ reasoning: 'unopened', content: 'rest' });
  });
});
