// The SigLIP-like vision encoder (pre-LN ViT blocks over a learned position embedding) and the
// projection of its features into a language model's embedding space, for two weight layouts:
//
//   MoonF16  Moondream's MOON file (FORMATS.md §2.5): f16 matrices [in,out] (MOON transposed them),
//            fused qkv, used in place through hgemm; the Moondream MLP projector.
//   Gguf     llama.cpp's mmproj GGUF (lib/architectures/clip): matrices [out,in] of any dtype the
//            decoder's Matrix reads (f32, f16, bf16, ggml blocks), separate q/k/v, normalization,
//            activation and projector kind from the file's keys.
//
// Projectors (VitProjector): Moondream's gelu MLP over [F | F]; Gemma 3's average pool by `merge`
// per side, RMS norm × soft_emb_norm, then the input projection [D, d]; Idefics3's pixel shuffle by
// `merge` (llama.cpp's build_patch_merge_permute order) then one linear [d, D·merge²].
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engines/decoder/linear.h"
#include "engines/weights_spec.h"
#include "threadpool.h"

namespace weightmap {
namespace engines {

enum class VitLayout { MoonF16, Gguf };
enum class VitProjector { Moondream, Gemma3, Idefics3 };
// The FFN's activation: tanh GELU (ggml_gelu), x·σ(1.702x) (CLIP's quick GELU), erf GELU, or silu.
enum class VitActivation { GeluTanh, GeluQuick, GeluErf, Silu };

struct VitConfig {
  int64_t dim = 0;       // D
  int64_t n_layers = 0;  // Lv
  int64_t n_heads = 0;
  int64_t head_dim = 0;  // n_heads * head_dim == D
  int64_t ffn = 0;
  int64_t patch = 0;       // p
  int64_t image_size = 0;  // S, a multiple of p
  int64_t n_patches = 0;   // (S / p)²
  int64_t proj_hidden = 0;  // Moondream's projector MLP width
  int64_t text_dim = 0;     // d, width of the image embeddings
  float eps = 1e-5f;        // the encoder's LayerNorm epsilon (Gemma 3's RMS norm uses it too, as llama.cpp)
  VitLayout layout = VitLayout::MoonF16;
  VitProjector projector = VitProjector::Moondream;
  VitActivation activation = VitActivation::GeluTanh;
  float mean[3] = {0.5f, 0.5f, 0.5f};  // pixels (v/255 − mean[ch]) / std[ch]
  float std[3] = {0.5f, 0.5f, 0.5f};
  int64_t merge = 1;  // Gemma 3: pooling kernel per side; Idefics3: pixel-shuffle scale factor

  int64_t grid() const { return patch > 0 ? image_size / patch : 0; }
  // Rows of image embeddings one image gives.
  int64_t n_tokens() const { return projector == VitProjector::Moondream ? n_patches : n_patches / (merge * merge); }
  // Throws SpecError CONFIG_MISMATCH for values the engine cannot run.
  void Validate() const;
};

// One linear layer y [m, out] = x [m, in] · W (+ bias) in either stored order: [in,out] f16 or f32
// (MOON's matrices, Gemma 3's input projection) used through hgemm/sgemm, or [out,in] as the
// decoder's Matrix (any dtype it reads; ggml blocks quantize the activations as llama.cpp does).
class VitLinear {
 public:
  static VitLinear InOut(const WeightsSpec& s, const std::string& name, int64_t in, int64_t out);
  static VitLinear OutIn(const WeightsSpec& s, const std::string& name, int64_t in, int64_t out, decoder::LoadCost* cost,
                         ThreadPool& pool);
  // The same for a tensor whose shape is not [out, in] as stored (a conv kernel [out, c, p, p]).
  static VitLinear OutInAs(const TensorRef& t, int64_t in, int64_t out, decoder::LoadCost* cost, ThreadPool& pool);

  void Apply(ThreadPool& pool, const float* x, float* y, int64_t m, std::vector<decoder::QuantizedInput>& scratch) const;
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }

 private:
  int64_t in_ = 0, out_ = 0;
  const uint16_t* f16_ = nullptr;  // [in, out]
  const float* f32_ = nullptr;     // [in, out]
  bool out_in_ = false;
  decoder::Matrix m_;  // [out, in]
};

struct VitLayer {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
  VitLinear qkv;  // MoonF16: fused [D, 3D]
  VitLinear q, k, v;  // Gguf
  std::vector<float> qkv_b;  // [3D] (MoonF16) or q, k, v biases concatenated
  VitLinear proj, fc1, fc2;
  std::vector<float> proj_b, fc1_b, fc2_b;
};

class VitModel {
 public:
  // Checks every tensor of `spec` (by the roles of the caller's table: lib/architectures/moondream
  // MOONDREAM_TENSOR_ROLES or lib/architectures/clip's) against `config`; throws SpecError.
  // threads 0: physical cores.
  static std::shared_ptr<VitModel> Load(const VitConfig& config, std::shared_ptr<const WeightsSpec> spec, int threads);

  const VitConfig& config() const { return config_; }
  int threads() const { return pool_->size(); }

  // Encodes one RGB image, uint8 [S, S, 3] row-major. Writes the post-LN features F
  // [n_patches, D] when `features` is non-null and the image embeddings [n_tokens(), d] when
  // `embeddings` is non-null. Throws EngineError ABORT_ERR when `abort` was raised. Thread-safe:
  // scratch is per call.
  void Encode(const uint8_t* rgb, float* features, float* embeddings, const std::atomic<bool>& abort) const;

 private:
  VitModel(const VitConfig& config, int threads);
  void LoadMoon(const WeightsSpec& s);
  void LoadGguf(const WeightsSpec& s);
  void Project(const float* features, float* embeddings, std::vector<decoder::QuantizedInput>& scratch) const;

  VitConfig config_;
  std::shared_ptr<const WeightsSpec> spec_;  // keeps the mappings behind the matrices alive
  std::unique_ptr<ThreadPool> pool_;
  decoder::LoadCost cost_;
  VitLinear patch_;
  std::vector<float> patch_b_, pos_, post_ln_w_, post_ln_b_;
  std::vector<VitLayer> layers_;
  // Moondream: the MLP over [F | F]. Gemma 3: soft_emb_norm [D] and the input projection [D, d]
  // (proj1). Idefics3: the linear [d, D·merge²] (proj1).
  VitLinear proj1_, proj2_;
  std::vector<float> proj1_b_, proj2_b_, soft_norm_;
};

}  // namespace engines
}  // namespace weightmap
