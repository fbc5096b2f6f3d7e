/** The streamed thinking splitter against lib/generation/chat.ts splitThinking on whole replies, cut into pieces at every place. */
import { splitThinking } from '../../lib/generation/chat';
import { ThinkingSplitter } from '../../lib/server/thinking-stream';
import { mulberry32 } from '../helpers/rng';

const REPLIES = [
  '<think>\nSome steps.\n</think>\n\nThe answer.',
  '<think>\n\n</think>\n\nOnly an answer.',
  'No thinking at all.',
  '  <think>x</think>y',
  '<think>\nunclosed thinking that never ends',
  '<thin',
  '<think>a </thi b</think>\n\n\nc </think> d',
  '',
];

function streamed(reply: string, cuts: number[]): { reasoning: string; content: string } {
  const splitter = new ThinkingSplitter();
  let reasoning = '';
  let content = '';
  let from = 0;
  for (const cut of [...cuts, reply.length]) {
    const piece = splitter.push(reply.slice(from, cut));
    reasoning += piece.reasoning;
    content += piece.content;
    from = cut;
  }
  const rest = splitter.flush();
  return { reasoning: reasoning + rest.reasoning, content: content + rest.content };
}

describe('ThinkingSplitter', () => {
  it('splits closed think blocks as splitThinking does, however the reply is cut', () => {
    const rand = mulberry32(99);
    for (const reply of REPLIES.filter((r) => r.includes('</think>'))) {
      const whole = splitThinking(reply);
      for (let trial = 0; trial < 50; trial++) {
        const cuts = Array.from({ length: Math.floor(rand() * 6) }, () => Math.floor(rand() * (reply.length + 1))).sort((a, b) => a - b);
        expect(streamed(reply, cuts)).toEqual(whole);
      }
      for (let i = 0; i <= reply.length; i++) expect(streamed(reply, [i])).toEqual(whole);
    }
  });

  it('passes text without a think block through as the answer, and an unclosed block as thinking', () => {
    expect(streamed('No thinking at all.', [3, 4])).toEqual({ reasoning: '', content: 'No thinking at all.' });
    expect(streamed('<thin', [2])).toEqual({ reasoning: '', content: '<thin' });
    expect(streamed('', [])).toEqual({ reasoning: '', content: '' });
    expect(streamed('<think>\nunclosed thinking that never ends', [9, 20])).toEqual({ reasoning: 'unclosed thinking that never ends', content: '' });
  });
});
