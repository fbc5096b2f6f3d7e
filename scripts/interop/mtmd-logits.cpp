// The logits llama.cpp's mtmd gives after a prompt with one image: a tiny driver over libmtmd and
// libllama (test/engines/vision-llama-cpp.test.ts compiles it into its temp folder against the
// peer cache's build).
//
//   mtmd-logits LM MMPROJ RGB SIZE PROMPT OUT
//
// RGB: raw RGB bytes [height, width, 3], SIZE its WIDTHxHEIGHT (or one number for a square: mtmd
// resizes and cuts it as the projector's preprocessor says); PROMPT: the rendered prompt
// with mtmd's default media marker where the image goes. Tokenized with special tokens parsed and
// none added, evaluated by mtmd_helper_eval_chunks (Gemma 3's image non-causal, as mtmd decodes
// it), f32 KV cache, flash attention off. Writes the last position's logits [n_vocab] f32 to OUT
// and prints the prompt's position count.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: mtmd-logits LM MMPROJ RGB SIZE PROMPT OUT\n");
    return 2;
  }
  int width = 0;
  int height = 0;
  const int parsed = std::sscanf(argv[4], "%dx%d", &width, &height);
  if (parsed == 1) height = width;
  if (parsed < 1 || width <= 0 || height <= 0 || width > 8192 || height > 8192) {
    std::fprintf(stderr, "SIZE '%s' is not WIDTHxHEIGHT or one size (1..8192)\n", argv[4]);
    return 2;
  }
  std::ifstream in(argv[3], std::ios::binary);
  std::vector<unsigned char> rgb((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (rgb.size() != static_cast<size_t>(width) * height * 3) {
    std::fprintf(stderr, "RGB holds %zu bytes, not %d\n", rgb.size(), width * height * 3);
    return 2;
  }
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 256;
  cp.n_batch = 512;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  llama_context* lctx = llama_init_from_model(model, cp);
  if (!lctx) return 1;
  mtmd_context_params mp = mtmd_context_params_default();
  mp.use_gpu = false;
  mp.n_threads = 2;
  mp.warmup = false;
  mp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  mtmd_context* mctx = mtmd_init_from_file(argv[2], model, mp);
  if (!mctx) return 1;
  mtmd_bitmap* bitmap = mtmd_bitmap_init(width, height, rgb.data());
  const std::string prompt = argv[5];
  const mtmd_input_text text{prompt.c_str(), prompt.size(), /*add_special=*/false, /*parse_special=*/true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bitmaps[] = {bitmap};
  if (mtmd_tokenize(mctx, chunks, &text, bitmaps, 1) != 0) return 1;
  llama_pos n_past = 0;
  if (mtmd_helper_eval_chunks(mctx, lctx, chunks, 0, 0, 512, true, &n_past) != 0) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const float* logits = llama_get_logits_ith(lctx, -1);
  FILE* out = std::fopen(argv[6], "wb");
  if (!out || std::fwrite(logits, sizeof(float), n_vocab, out) != static_cast<size_t>(n_vocab)) return 1;
  std::fclose(out);
  std::printf("%d\n", static_cast<int>(n_past));
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bitmap);
  mtmd_free(mctx);
  llama_free(lctx);
  llama_model_free(model);
  return 0;
}
