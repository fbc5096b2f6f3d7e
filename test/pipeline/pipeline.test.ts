/**
 * Models split over stage processes on loopback (spawned here, SIGKILLed in afterAll): stories260K
 * over 2 and 3 stages, the Qwen3 fixture (2 layers) over 2, against the same sepweight tree run in
 * one process and the fixtures' greedy tokens; concurrent sessions; refusals at connect; malformed
 * tensors; kill -9 of a stage mid-generation with and without a replica, and a restarted stage
 * rejoining. Seven stage processes are shared by every test of the file.
 */
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { convert } from '../../lib/formats/writing/convert';
import { PipelineError } from '../../lib/base/errors';
import { loadModel, type Model } from '../../lib/models/model';
import type { PipelineSpec } from '../../lib/pipeline/coordinator';
import { stageClientConstructor, type TensorMessage } from '../../lib/pipeline/schema';
import { tensorMessage } from '../../lib/pipeline/tensor';
import { runCli } from '../helpers/cli';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { compileLib, killAll, spawnStage, type StageProcess } from './stages';

jest.setTimeout(120_000);

const stories = fixture('llama-stories260k', 'sepweight');
const storiesGreedy: number[] = readJson('llama-stories260k', 'expected.json').greedy.tokens;
const qwenCase = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0];
const TOKEN = 'stage-token-for-tests';

const tmp = tempDir('weightmap-pipeline-');
const qwenTree = path.join(tmp.dir, 'qwen3-tree');
let lib: ReturnType<typeof compileLib>;
const stage: Record<string, StageProcess> = {};
const models: Model[] = [];
let storiesRef: Model;
let qwenRef: Model;

async function open(dir: string, pipeline?: PipelineSpec): Promise<Model> {
  const model = await loadModel(dir, { threads: 1, contextLength: 256, ...(pipeline ? { pipeline } : {}) });
  models.push(model);
  return model;
}

const twoStories = (): PipelineSpec => [
  { layers: '0-1', address: stage.s01.address },
  { layers: '2-4', address: stage.s24.address },
];
const threeStories = (): PipelineSpec => ({
  stages: [
    { layers: '0-1', address: stage.s01.address },
    { layers: '2-2', address: stage.s22.address },
    { layers: '3-4', address: [stage.s34a.address, stage.s34b.address] },
  ],
  token: TOKEN,
});

beforeAll(async () => {
  lib = compileLib();
  await convert(fixture('ajc1-qwen3-tiny', 'model.bin'), qwenTree, { to: 'sepweight' });
  const specs: [string, string, string, string[]][] = [
    ['s01', stories, '0-1', []],
    ['s24', stories, '2-4', []],
    ['s22', stories, '2-2', ['--token', TOKEN]],
    ['s34a', stories, '3-4', []],
    ['s34b', stories, '3-4', []],
    ['q0', qwenTree, '0-0', []],
    ['q1', qwenTree, '1-1', []],
  ];
  const started = await Promise.allSettled(specs.map(([, dir, layers, args]) => spawnStage(lib.main, dir, layers, [...args, '--context', '256'])));
  started.forEach((r, i) => r.status === 'fulfilled' && (stage[specs[i][0]] = r.value));
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  storiesRef = await open(stories);
  qwenRef = await open(qwenTree);
});

afterAll(async () => {
  for (const m of models) m.dispose();
  await killAll(Object.values(stage));
  lib?.cleanup();
  tmp.cleanup();
});

async function greedy(model: Model, prompt: string | number[], maxTokens: number): Promise<number[]> {
  const gen = model.generate(prompt, { maxTokens, temperature: 0 });
  await gen.text();
  return [...gen.tokens];
}

describe('a model split over stage processes', () => {
  it('stories260K over 2 stages: llama2.c\'s greedy tokens and the single-process logits, bit for bit', async () => {
    const model = await open(stories, twoStories());
    expect(await greedy(model, '', 60)).toEqual(storiesGreedy.slice(0, 60));
    const ids = storiesGreedy.slice(0, 33);
    expect(await model.logits(ids)).toEqual(await storiesRef.logits(ids));
  });

  it('stories260K over 3 stages (one demanding a token, one with a replica)', async () => {
    const model = await open(stories, threeStories());
    expect(await greedy(model, '', 60)).toEqual(storiesGreedy.slice(0, 60));
    const ids = storiesGreedy.slice(5, 40);
    expect(await model.logits(ids)).toEqual(await storiesRef.logits(ids));
  });

  it('the Qwen3 fixture over 2 stages: the fixture\'s greedy tokens and the single-process logits', async () => {
    const model = await loadModel(qwenTree, {
      tokenizer: qwenRef.tokenizer, // the 151k-token BPE is loaded once
      pipeline: [
        { layers: '0-0', address: stage.q0.address },
        { layers: '1-1', address: stage.q1.address },
      ],
    });
    models.push(model);
    const prompt: number[] = qwenCase.prompt.ids;
    expect(await greedy(model, prompt, qwenCase.greedy.tokens.length)).toEqual(qwenCase.greedy.tokens);
    expect(await model.logits(prompt)).toEqual(await qwenRef.logits(prompt));
  });

  it('weightmap generate --pipeline prints the greedy ids', async () => {
    const flag = `0-1=${stage.s01.address},2-4=${stage.s24.address}`;
    const result = await runCli(['generate', stories, '', '--pipeline', flag, '--max-tokens', '20', '--ids']);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(`${storiesGreedy.slice(0, 20).join(' ')}\n`);
  });

  it('runs concurrent sessions, each equal to its single-process run', async () => {
    const model = await open(stories, twoStories());
    const prompts = ['Once upon a time', 'The cat', 'Lily and Ben went to the park'];
    const expected = [];
    for (const p of prompts) expected.push(await greedy(storiesRef, p, 30));
    expect(await Promise.all(prompts.map((p) => greedy(model, p, 30)))).toEqual(expected);
  });

  it('aborts a step in flight, then generates again from the kept prefix', async () => {
    const model = await open(stories, threeStories());
    const controller = new AbortController();
    const gen = model.generate('', { maxTokens: 50, temperature: 0, signal: controller.signal });
    for (let i = 0; i < 6; i++) await gen.next();
    const inFlight = gen.next();
    controller.abort();
    await expect(inFlight).rejects.toMatchObject({ name: 'AbortError' });
    expect(await greedy(model, '', 50)).toEqual(storiesGreedy.slice(0, 50));
  });

  it('refuses at connect a stage serving another model, a bad layout and a missing token', async () => {
    await expect(
      loadModel(qwenTree, { pipeline: [{ layers: '0-0', address: stage.q0.address }, { layers: '1-1', address: stage.s01.address }] }),
    ).rejects.toMatchObject({ name: 'PipelineError', code: 'ERR_WEIGHTMAP_STAGE_MISMATCH', message: expect.stringMatching(/another model/) });
    await expect(
      loadModel(stories, { pipeline: [{ layers: '0-1', address: stage.s01.address }, { layers: '3-4', address: stage.s34a.address }] }),
    ).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_PIPELINE_CONFIG', message: expect.stringMatching(/layers 2-2 are served by no stage/) });
    await expect(
      loadModel(stories, { pipeline: [{ layers: '0-1', address: stage.s01.address }, { layers: '2-4', address: stage.s34a.address }] }),
    ).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_STAGE_MISMATCH', message: expect.stringMatching(/layers 3-4, expected 2-4/) });
    const noToken = { ...(threeStories() as { stages: never }), token: 'wrong' };
    await expect(loadModel(stories, { pipeline: noToken })).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_STAGE_REJECTED' });
  });

  it('ends a stream whose tensor breaks a bound and keeps serving the others', async () => {
    const Client = stageClientConstructor();
    const client = new Client(stage.s24.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Forward(md: grpc.Metadata): grpc.ClientDuplexStream<TensorMessage, TensorMessage>;
    };
    const send = (call: grpc.ClientDuplexStream<TensorMessage, TensorMessage>, msg: TensorMessage) =>
      new Promise<TensorMessage>((resolve, reject) => {
        call.once('data', resolve);
        call.once('error', reject);
        call.write(msg);
      });
    const hidden = Float32Array.from({ length: 4 * 64 }, (_, i) => Math.sin(i) * 0.5);
    try {
      const good = client.Forward(new grpc.Metadata());
      const first = await send(good, tensorMessage('good', 0, hidden.subarray(0, 3 * 64), 64));
      expect(first.shape).toEqual([1, 512]);

      const malformed: [Partial<TensorMessage>, RegExp][] = [
        [{ shape: [1, 64], data: Buffer.alloc(100) }, /100 data bytes, expected 256/],
        [{ shape: [4294967295, 64], data: Buffer.alloc(256) }, /4294967295 rows outside \[1, 256\]/],
        [{ shape: [1, 4294967295], data: Buffer.alloc(256) }, /expected 64/],
        [{ shape: [1, 64, 1], data: Buffer.alloc(256) }, /rank 2/],
        [{ position: 7 }, /position 7 outside \[0, 0\]/],
        [{ dtype: 'I32' }, /dtype I32/],
      ];
      for (const [patch, message] of malformed) {
        const bad = client.Forward(new grpc.Metadata());
        const msg = { ...tensorMessage('bad', 0, hidden.subarray(0, 64), 64), ...patch };
        await expect(send(bad, msg)).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(message) });
      }

      // The valid session went on: its 4th position equals a fresh session's fed the same way.
      const fourth = await send(good, tensorMessage('good', 3, hidden.subarray(3 * 64), 64));
      const fresh = client.Forward(new grpc.Metadata());
      await send(fresh, tensorMessage('fresh', 0, hidden.subarray(0, 3 * 64), 64));
      const again = await send(fresh, tensorMessage('fresh', 3, hidden.subarray(3 * 64), 64));
      expect(fourth.data.equals(again.data)).toBe(true);
      good.cancel();
      fresh.cancel();
    } finally {
      client.close();
    }
  });

  it('moves a session to a replica when a stage misses its step deadline (stopped with SIGSTOP)', async () => {
    const model = await open(stories, { ...(threeStories() as { stages: never; token: string }), stepTimeoutMs: 3000 });
    const gen = model.generate('', { maxTokens: 40, temperature: 0 });
    try {
      for await (const _ of gen) if (gen.tokens.length === 8) stage.s34a.child.kill('SIGSTOP');
    } finally {
      stage.s34a.child.kill('SIGCONT');
    }
    expect(gen.tokens).toEqual(storiesGreedy.slice(0, 40));
    model.dispose();
  });

  it('moves a session to a replica when a stage is killed mid-generation, and a restarted stage rejoins', async () => {
    const model = await open(stories, threeStories());
    const run = async (kill: () => Promise<void>) => {
      const gen = model.generate('', { maxTokens: 50, temperature: 0 });
      for await (const _ of gen) if (gen.tokens.length === 12) await kill();
      return [...gen.tokens];
    };
    const kill9 = async (name: string) => {
      stage[name].child.kill('SIGKILL');
      await stage[name].exited;
    };
    expect(await run(() => kill9('s34a'))).toEqual(storiesGreedy.slice(0, 50));

    // Restarted on its address, then the replica dies: the session moves back to it.
    const address = stage.s34a.address;
    stage.s34a = await spawnStage(lib.main, stories, '3-4', ['--context', '256', '--listen', address]);
    expect(await run(() => kill9('s34b'))).toEqual(storiesGreedy.slice(0, 50));
  });

  it('drains and exits with code 0 on SIGTERM, ending its open sessions', async () => {
    // The Qwen3 model of an earlier test still holds a session with a stream on q1.
    stage.q1.child.kill('SIGTERM');
    expect(await stage.q1.exited).toBe(0);
    expect(stage.q1.stderr()).toBe('');
  });

  it('fails with a typed error, without hanging, when no replica is left', async () => {
    const model = await open(stories, twoStories());
    const gen = model.generate('', { maxTokens: 50, temperature: 0 });
    const consume = async () => {
      for await (const _ of gen) {
        if (gen.tokens.length === 5) {
          stage.s24.child.kill('SIGKILL');
          await stage.s24.exited;
        }
      }
    };
    const failure = consume();
    await expect(failure).rejects.toBeInstanceOf(PipelineError);
    await expect(failure).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_STAGE_UNAVAILABLE', layers: '2-4' });
    expect(gen.tokens).toEqual(storiesGreedy.slice(0, 5));
  });
});
