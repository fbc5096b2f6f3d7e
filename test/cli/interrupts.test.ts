/**
 * One signal rule for generate, chat, embed, answer, bench and convert: SIGINT exits 130 and
 * SIGTERM 143, with one line saying so (convert's own test: test/convert/interrupt.test.ts). The
 * children are signalled once they have mapped the model (so their handlers are in place) and wait
 * on stdin, so no timing decides the outcome. Chat's slash commands are answered by chat, never sent to the model.
 */
import { fixture } from '../helpers/fixtures';
import { mapsFile, spawnCli, until, type Child } from './signals';

const BIN = fixture('llama-stories260k', 'stories260K.bin');
const TOK = fixture('llama-stories260k', 'tok512.bin');
const EMBD = fixture('embd-minilm-tiny', 'model.weights');

async function interrupt(child: Child, signal: 'SIGINT' | 'SIGTERM', ready: () => boolean): Promise<void> {
  try {
    await until(ready, 'the child to be ready', 30_000);
  } finally {
    child.process.kill(signal);
  }
  // Bounded: a child that ignored the signal is killed and fails the test instead of outliving it.
  const guard = setTimeout(() => child.process.kill('SIGKILL'), 30_000);
  await child.exit;
  clearTimeout(guard);
}

const describeLinux = process.platform === 'linux' ? describe : describe.skip;

describeLinux('signals end a command with 128 + the signal number', () => {
  test.each([
    ['generate (reading the prompt from stdin)', ['generate', BIN, '-', '--tokenizer', TOK], 'SIGINT', 130],
    ['generate', ['generate', BIN, '-', '--tokenizer', TOK], 'SIGTERM', 143],
    ['embed (reading texts from stdin)', ['embed', EMBD], 'SIGINT', 130],
    ['embed', ['embed', EMBD], 'SIGTERM', 143],
  ] as const)('%s: %s', async (_what, args, signal, code) => {
    const child = spawnCli([...args]);
    await interrupt(child, signal, () => mapsFile(child.process.pid!, args[1]));
    expect(await child.exit).toEqual({ code, signal: null });
    expect(child.stderr()).toBe(`weightmap: interrupted by ${signal}\n`);
  }, 60_000);

  test.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('chat, waiting for the next line: %s exits %d', async (signal, code) => {
    const child = spawnCli(['chat', BIN, '--tokenizer', TOK]);
    child.process.stdin!.write('/help\n');
    // The help proves the model is loaded and chat reads stdin.
    await interrupt(child, signal, () => child.stdout().includes('/exit'));
    expect(await child.exit).toEqual({ code, signal: null });
    expect(child.stderr()).toBe(`weightmap: interrupted by ${signal}\n`);
  }, 60_000);
});

describeLinux('chat slash commands', () => {
  test('/help lists the commands, an unknown one says so, neither reaches the model, /exit ends with 0', async () => {
    const child = spawnCli(['chat', BIN, '--tokenizer', TOK, '--temperature', '0', '--max-tokens', '4']);
    child.process.stdin!.end('/help\n/nonsense here\n/exit\n');
    expect(await child.exit).toEqual({ code: 0, signal: null });
    // Nothing but the help: a turn would have added the model's reply and a newline.
    expect(child.stdout()).toBe(
      ['  /help         list these commands', '  /exit, /quit  end the chat (so does the end of input)', '  //text        send "/text" to the model', ''].join('\n'),
    );
    expect(child.stderr()).toBe('weightmap: unknown chat command /nonsense (/help lists them; //text sends /text)\n');
  });
});
