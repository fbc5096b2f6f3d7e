/**
 * The families' tool-call formats (issue #25 item 1): told from template text, and replies parsed
 * into calls, each against replies written out by hand in the form the family's template documents.
 */
import { detectToolFormat } from '../../lib/tools/formats';
import { parseToolCalls } from '../../lib/tools/parse';
import { QWEN3_TEMPLATE_SOURCE } from '../helpers/tool-model';

const hermes = detectToolFormat(QWEN3_TEMPLATE_SOURCE);
const mistral = detectToolFormat('{%- for m in messages %}{%- if m.tool_calls %}[TOOL_CALLS]{{ m.tool_calls|tojson }}{%- endif %}{%- endfor %}{{ tools }}');
const llama3 = detectToolFormat('<|start_header_id|>system<|end_header_id|>{%- if tools %}{{ tools|tojson }}{%- endif %}');
const generic = detectToolFormat('<start_of_turn>user\n{{ messages[0].content }}<end_of_turn>');

const strip = (calls: { name: string; arguments: string }[]) => calls.map(({ name, arguments: a }) => ({ name, arguments: JSON.parse(a) }));

describe('formats are read from the template', () => {
  it('Qwen3 is hermes; [TOOL_CALLS] is Mistral; a Llama 3 header with tools is llama3; the rest is the generic fallback', () => {
    expect(hermes).toMatchObject({ family: 'hermes', open: '<tool_call>', argumentsKey: 'arguments', templateRendersTools: true });
    expect(mistral).toMatchObject({ family: 'mistral', open: '[TOOL_CALLS]', array: true });
    expect(llama3).toMatchObject({ family: 'llama3', open: '', argumentsKey: 'parameters' });
    expect(generic).toMatchObject({ family: 'generic', open: '<tool_call>', templateRendersTools: false });
    expect(detectToolFormat(undefined).family).toBe('generic');
  });
});

describe('replies are parsed into calls', () => {
  it('hermes: text, then several <tool_call> blocks', () => {
    const reply = parseToolCalls('Let me look.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>', hermes, true);
    expect(reply.content).toBe('Let me look.');
    expect(strip(reply.calls)).toEqual([
      { name: 'a', arguments: { x: 1 } },
      { name: 'b', arguments: {} },
    ]);
    expect(new Set(reply.calls.map((c) => c.id)).size).toBe(2);
  });

  it('hermes: a block cut by the token limit is dropped; a malformed one makes it all content', () => {
    const cut = parseToolCalls('Hi <tool_call>\n{"name": "a", "arguments": {"x": 1}}</tool_call><tool_call>{"name": "b", "argu', hermes, false);
    expect(cut).toMatchObject({ content: 'Hi', cutShort: true });
    expect(strip(cut.calls)).toEqual([{ name: 'a', arguments: { x: 1 } }]);
    const text = 'Hi <tool_call>{"name": oops}</tool_call>';
    expect(parseToolCalls(text, hermes, true)).toEqual({ content: text, calls: [], cutShort: false });
  });

  it('mistral: [TOOL_CALLS] and an array of calls', () => {
    const reply = parseToolCalls('[TOOL_CALLS][{"name": "a", "arguments": {"q": "x"}}, {"name": "b", "arguments": {}}]', mistral, true);
    expect(reply.content).toBe('');
    expect(strip(reply.calls)).toEqual([
      { name: 'a', arguments: { q: 'x' } },
      { name: 'b', arguments: {} },
    ]);
  });

  it('llama3: the reply is one JSON call with "parameters"; other text is content', () => {
    expect(strip(parseToolCalls(' {"name": "a", "parameters": {"n": 2}}', llama3, true).calls)).toEqual([{ name: 'a', arguments: { n: 2 } }]);
    expect(parseToolCalls('It is sunny.', llama3, true)).toEqual({ content: 'It is sunny.', calls: [], cutShort: false });
    expect(parseToolCalls('{"name": "a", "param', llama3, false)).toMatchObject({ calls: [], cutShort: true });
  });
});
