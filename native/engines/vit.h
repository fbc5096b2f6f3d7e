// Moondream's vision encoder (FORMATS.md §2.5, SigLIP-like ViT) and its projection into the text
// model's embedding space. Matrices are f16 [in,out] in the mapped file (MOON transposed them),
// used in place through hgemm.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engines/weights_spec.h"
#include "threadpool.h"

namespace weightmap {
namespace engines {

struct VitConfig {
  int64_t dim = 0;       // D
  int64_t n_layers = 0;  // Lv
  int64_t n_heads = 0;
  int64_t head_dim = 0;  // n_heads * head_dim == D
  int64_t ffn = 0;
  int64_t patch = 0;       // p
  int64_t image_size = 0;  // S, a multiple of p
  int64_t n_patches = 0;   // (S / p)²
  int64_t proj_hidden = 0;
  int64_t text_dim = 0;  // d, width of the image embeddings
  float eps = 1e-5f;
};

struct VitLayerHalf {
  const uint16_t* ln1_w;   // [D]
  const uint16_t* ln1_b;   // [D]
  const uint16_t* qkv_w;   // [D, 3D]
  const uint16_t* qkv_b;   // [3D]
  const uint16_t* proj_w;  // [D, D]
  const uint16_t* proj_b;  // [D]
  const uint16_t* ln2_w;   // [D]
  const uint16_t* ln2_b;   // [D]
  const uint16_t* fc1_w;   // [D, ffn]
  const uint16_t* fc1_b;   // [ffn]
  const uint16_t* fc2_w;   // [ffn, D]
  const uint16_t* fc2_b;   // [D]
};

struct VitWeightsHalf {
  const uint16_t* patch_w;  // [3·p·p, D]
  const uint16_t* patch_b;  // [D]
  const uint16_t* pos;      // [n_patches, D]
  std::vector<VitLayerHalf> layers;
  const uint16_t* post_ln_w;  // [D]
  const uint16_t* post_ln_b;  // [D]
  const uint16_t* proj1_w;    // [2D, proj_hidden]
  const uint16_t* proj1_b;    // [proj_hidden]
  const uint16_t* proj2_w;    // [proj_hidden, d]
  const uint16_t* proj2_b;    // [d]
};

class VitModel {
 public:
  // Checks every tensor of `spec` (the canonical names of lib/architectures/moondream.ts; MOON
  // stores these matrices [in,out] and the views carry the stored shape) against `config`; throws
  // SpecError. threads 0: physical cores.
  static std::shared_ptr<VitModel> Load(const VitConfig& config, std::shared_ptr<const WeightsSpec> spec, int threads);

  VitModel(const VitConfig& config, const VitWeightsHalf& weights);
  const VitConfig& config() const { return config_; }
  int threads() const { return pool_->size(); }

  // Encodes one RGB image, uint8 [S, S, 3] row-major. Writes the post-LN features F
  // [n_patches, D] when `features` is non-null and the image embeddings
  // gelu([F | F]·W1 + b1)·W2 + b2 [n_patches, d] when `embeddings` is non-null. Throws EngineError
  // ABORT_ERR when `abort` was raised. Thread-safe: scratch is per call.
  void Encode(const uint8_t* rgb, float* features, float* embeddings, const std::atomic<bool>& abort) const;

 private:
  struct LayerVectors {
    std::vector<float> ln1_w, ln1_b, qkv_b, proj_b, ln2_w, ln2_b, fc1_b, fc2_b;
  };
  VitConfig config_;
  std::shared_ptr<const WeightsSpec> spec_;  // keeps the mappings behind half_ alive
  std::unique_ptr<ThreadPool> pool_;
  VitWeightsHalf half_;
  std::vector<LayerVectors> layers_;
  std::vector<float> patch_b_, pos_, post_ln_w_, post_ln_b_, proj1_b_, proj2_b_;
};

}  // namespace engines
}  // namespace weightmap
