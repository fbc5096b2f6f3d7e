#include "sampling/sampler.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/exp_f32.h"

// The loops over the whole vocabulary get AVX-512 and AVX2 clones chosen at load time (glibc
// ifunc) where the toolchain supports it; elsewhere they are built for the baseline ISA only.
#if defined(__GNUC__) && defined(__x86_64__) && defined(__GLIBC__) && !defined(__APPLE__)
#define WEIGHTMAP_VOCAB_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WEIGHTMAP_VOCAB_LOOP
#endif

namespace weightmap {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int kLanes = 16;          // independent accumulators, so the compiler emits packed ops
constexpr int32_t kBlock = 256;     // the cdf walk and the candidate scans skip whole blocks
constexpr size_t kSmallSet = 4096;  // a kept set this small is drawn from a list sorted by id

// NaN ranks last (it would break the strict order the selection algorithms need).
inline float Clean(float v) { return v != v ? kNegInf : v; }

// Strict total order "a ranks before b": higher logit first, lower id first on ties. Every
// truncation keeps a prefix of this order. (Function objects, so the std algorithms inline them.)
struct BetterT {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  }
};
constexpr BetterT Better;
struct LowerIdT {
  bool operator()(const Candidate& a, const Candidate& b) const { return a.id < b.id; }
};
constexpr LowerIdT LowerId;

inline uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
// All ones when c, else 0.
inline uint32_t Mask(bool c) { return static_cast<uint32_t>(-static_cast<int32_t>(c)); }

// An integer with the order of the float (−0 = +0, NaN = −inf), for vectorizable compares: with
// the default -ftrapping-math a float compare keeps GCC from vectorizing a loop; integers do not.
inline int32_t Key(float f) {
  const uint32_t u = Bits(f);
  const uint32_t nan = Mask((u & 0x7FFFFFFFu) > 0x7F800000u);
  const uint32_t neg_zero = Mask(u == 0x80000000u);
  const uint32_t c = (u & ~(nan | neg_zero)) | (Bits(kNegInf) & nan);
  const int32_t i = static_cast<int32_t>(c);
  return i ^ ((i >> 31) & 0x7FFFFFFF);
}

// The last member of a prefix of the Better order: token i is kept iff
// Key(logit_i) > key || (Key(logit_i) == key && i <= id). The default keeps everything.
struct Boundary {
  int32_t key = INT_MIN;
  int32_t id = INT_MAX;
  static Boundary Of(const Candidate& c) { return {Key(c.logit), c.id}; }
  static Boundary Shorter(const Boundary& a, const Boundary& b) {
    return (a.key > b.key || (a.key == b.key && a.id < b.id)) ? a : b;
  }
};

// Largest value of x[0..n), NaN ignored; −inf when there is none.
WEIGHTMAP_VOCAB_LOOP float MaxOf(const float* x, int32_t n) {
  float acc[kLanes];
  for (float& a : acc) a = kNegInf;
  int32_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  float m = kNegInf;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (float a : acc) m = a > m ? a : m;
  return m;
}

// e^x for x <= 0 (kernels/exp_f32.h); below −86.6, and for −inf and NaN, the result is 0. Integer
// masks instead of branches, so loops vectorize.
inline float ExpNonPositive(float x) {
  const uint32_t u = Bits(x);
  const uint32_t bad = Mask(u > kernels::kExpLoBits) | Mask((u & 0x7FFFFFFFu) > 0x7F800000u);  // x < −86.6 or NaN
  const float xc = FromBits((u & ~bad) | (kernels::kExpLoBits & bad));
  return FromBits(Bits(kernels::ExpReduced(xc, xc)) & ~bad);
}

// w[i] = exp((x[i] − max) / t) for the members of `keep`, 0 for the others (NaN and −inf weigh 0),
// and block_sums[b] = Σ w over block b. Returns the total, summed in the order the cdf walk adds
// the block sums.
WEIGHTMAP_VOCAB_LOOP float MaskedWeights(const float* x, int32_t n, float max, float t, Boundary keep, float* w,
                                         std::vector<float>* block_sums) {
  const int32_t blocks = (n + kBlock - 1) / kBlock;
  block_sums->resize(static_cast<size_t>(blocks));
  float total = 0.0f;
  for (int32_t b = 0; b < blocks; ++b) {
    const int32_t begin = b * kBlock, end = std::min(n, begin + kBlock);
    float acc[kLanes] = {};
    int32_t i = begin;
    for (; i + kLanes <= end; i += kLanes)
      for (int32_t j = 0; j < kLanes; ++j) {
        const int32_t key = Key(x[i + j]);
        const uint32_t in = Mask(key > keep.key) | (Mask(key == keep.key) & Mask(i + j <= keep.id));
        const float v = FromBits(Bits(ExpNonPositive((x[i + j] - max) / t)) & in);
        w[i + j] = v;
        acc[j] += v;
      }
    float s = 0.0f;
    for (; i < end; ++i) {
      const int32_t key = Key(x[i]);
      const bool in = key > keep.key || (key == keep.key && i <= keep.id);
      w[i] = in ? ExpNonPositive((x[i] - max) / t) : 0.0f;
      s += w[i];
    }
    for (float a : acc) s += a;
    (*block_sums)[static_cast<size_t>(b)] = s;
    total += s;
  }
  return total;
}

// Tokens are bucketed by their distance below the max logit, kBucketsPerUnit buckets per unit of
// logit (so a bucket's weights differ by at most e^(1/32) = 3%), the last bucket taking everything
// further down (weights below e^−127: zero in float). Buckets are monotone in the Better order,
// so a prefix of buckets is a prefix of the order; bucket kBuckets holds the non-members.
constexpr int32_t kBuckets = 4096;
constexpr float kBucketsPerUnit = 32.0f;

// bucket[i] and w[i] = exp(x[i] − max) (0 and kBuckets for the non-members of `keep`).
WEIGHTMAP_VOCAB_LOOP void BucketsAndWeights(const float* x, int32_t n, float max, Boundary keep, uint16_t* bucket,
                                            float* w) {
  const uint32_t last = Bits(static_cast<float>(kBuckets - 1));
  for (int32_t i = 0; i < n; ++i) {
    const int32_t key = Key(x[i]);
    const uint32_t in = Mask(key > keep.key) | (Mask(key == keep.key) & Mask(i <= keep.id));
    uint32_t d = Bits((max - x[i]) * kBucketsPerUnit) & 0x7FFFFFFFu;  // −0 → +0; NaN stays above `last`
    d = d < last ? d : last;
    const uint32_t b = static_cast<uint32_t>(static_cast<int32_t>(FromBits(d)));
    bucket[i] = static_cast<uint16_t>((b & in) | (static_cast<uint32_t>(kBuckets) & ~in));
    w[i] = FromBits(Bits(ExpNonPositive(x[i] - max)) & in);
  }
}

// Inverse-cdf walk over weights w[0..n) in index order: the first i with r < Σ_{j<=i} w[j], where
// r = coin · total. Falls back to the last index with a positive weight.
int32_t WalkBlocks(const float* w, int32_t n, const std::vector<float>& block_sums, float total, float coin) {
  const float r = coin * total;
  float cum = 0.0f;
  for (size_t b = 0; b < block_sums.size(); ++b) {
    if (r < cum + block_sums[b]) {
      const int32_t begin = static_cast<int32_t>(b) * kBlock, end = std::min(n, begin + kBlock);
      for (int32_t i = begin; i < end; ++i) {
        cum += w[i];
        if (r < cum) return i;
      }
      continue;  // adding one by one rounded below the block's sum: go on with the next block
    }
    cum += block_sums[b];
  }
  for (int32_t i = n - 1; i > 0; --i)
    if (w[i] > 0.0f) return i;
  return 0;
}

// The k best of logits[0..n) into `out` (in no particular order), for 0 < k < n, in one pass with
// a bounded heap whose front is the worst kept candidate (a later id with an equal logit never
// displaces it: the lower id wins). For small k; large k go through the buckets.
void SelectTopK(const float* logits, int32_t n, int32_t k, std::vector<Candidate>* out) {
  out->clear();
  for (int32_t i = 0; i < k; ++i) out->push_back({Clean(logits[i]), i, 0.0f});
  std::make_heap(out->begin(), out->end(), Better);
  float worst = out->front().logit;
  for (int32_t i = k; i < n; ++i) {
    const float v = logits[i];
    if (v > worst) {
      std::pop_heap(out->begin(), out->end(), Better);
      out->back() = {v, i, 0.0f};
      std::push_heap(out->begin(), out->end(), Better);
      worst = out->front().logit;
    }
  }
}

// Given candidates with weights w (∝ probability) that include the nucleus, keeps the nucleus: the
// shortest prefix in Better order whose mass exceeds `need`. Selection by repeated halving
// (nth_element, then the mass of the better half tells which half holds the boundary): O(m)
// expected, no full sort. Returns the boundary (the last member).
Boundary KeepNucleus(std::vector<Candidate>* c, double need) {
  auto b = c->begin();
  size_t lo = 0, hi = c->size();
  double above = 0.0;  // mass of [0, lo), all of it in the nucleus
  while (hi - lo > 32) {
    const size_t mid = lo + (hi - lo) / 2;
    std::nth_element(b + lo, b + mid, b + hi, Better);
    double mass = 0.0;
    for (size_t i = lo; i < mid; ++i) mass += (*c)[i].w;
    if (above + mass > need) {
      hi = mid;
    } else {
      above += mass;
      lo = mid;
    }
  }
  std::sort(b + lo, b + hi, Better);
  size_t keep = hi;  // rounding kept the mass at or below need: everything up to hi stays
  for (size_t i = lo; i < hi; ++i) {
    above += (*c)[i].w;
    if (above > need) {
      keep = i + 1;
      break;
    }
  }
  c->resize(keep);
  return Boundary::Of(c->back());
}

// With bucket[] and w[] from BucketsAndWeights and per-bucket sums (`sums`: token counts or
// weights), finds the shortest prefix of the Better order whose running sum (1 per token, or its
// weight) exceeds `need`. Returns false when no prefix does (everything stays). `list` receives the
// prefix when it has at most kSmallSet tokens (*listed = true), else stays empty.
bool CutPrefix(const float* logits, int32_t n, const uint16_t* bucket, const float* w, const std::vector<double>& sums,
               const std::vector<double>& counts, bool by_weight, double need, std::vector<Candidate>* list,
               std::vector<Candidate>* edge, Boundary* cut, bool* listed) {
  double cum = 0.0, before = 0.0;
  int32_t edge_bucket = -1;
  for (int32_t b = 0; b < kBuckets; ++b) {
    if (cum + sums[b] > need) {
      edge_bucket = b;
      break;
    }
    cum += sums[b];
    before += counts[b];
  }
  if (edge_bucket < 0) return false;
  const bool small = before + counts[edge_bucket] <= static_cast<double>(kSmallSet);
  const uint16_t eb = static_cast<uint16_t>(edge_bucket);
  list->clear();
  edge->clear();
  if (small) {
    // Few tokens qualify: a branch that is rarely taken is cheap.
    for (int32_t i = 0; i < n; ++i) {
      if (bucket[i] > eb) continue;
      (bucket[i] == eb ? edge : list)->push_back({Clean(logits[i]), i, w[i]});
    }
  } else {
    // Maybe half the tokens are above the edge: collect the edge bucket without branching on it,
    // and stop once all of it is found.
    const size_t want = static_cast<size_t>(counts[edge_bucket]);
    edge->resize(want + 1);
    size_t m = 0;
    for (int32_t i = 0; i < n && m < want; ++i) {
      (*edge)[m] = {Clean(logits[i]), i, w[i]};
      m += bucket[i] == eb;
    }
    edge->resize(m);
  }
  // Within the edge bucket, in order, until the running sum exceeds need.
  std::sort(edge->begin(), edge->end(), Better);
  size_t keep = edge->size();
  for (size_t i = 0; i < edge->size(); ++i) {
    cum += by_weight ? (*edge)[i].w : 1.0;
    if (cum > need) {
      keep = i + 1;
      break;
    }
  }
  *cut = Boundary::Of((*edge)[keep - 1]);
  *listed = small;
  if (small) list->insert(list->end(), edge->begin(), edge->begin() + static_cast<std::ptrdiff_t>(keep));
  return true;
}

}  // namespace

uint32_t Rng::NextU32() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return static_cast<uint32_t>((state_ * 0x2545F4914F6CDD1Dull) >> 32);
}

float Rng::NextF32() { return static_cast<float>(NextU32() >> 8) / 16777216.0f; }

void ApplyLogitBias(float* logits, int32_t n, const SamplingParams& params) {
  for (const auto& [id, bias] : params.logit_bias)
    if (id >= 0 && id < n) logits[id] += bias;
}

WEIGHTMAP_VOCAB_LOOP void ApplyTokenMask(float* logits, int32_t n, const SamplingParams& params) {
  if (params.allowed.empty()) return;
  const int32_t covered = static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(n), params.allowed.size() * 32));
  const uint32_t* words = params.allowed.data();
  for (int32_t i = 0; i < covered; ++i) {
    const uint32_t in = Mask(((words[i >> 5] >> (i & 31)) & 1u) != 0);
    logits[i] = FromBits((Bits(logits[i]) & in) | (Bits(kNegInf) & ~in));
  }
  for (int32_t i = covered; i < n; ++i) logits[i] = kNegInf;
}

void ApplyPenalties(float* logits, int32_t n, const SamplingParams& params, const int32_t* recent,
                    int32_t n_recent, std::vector<int32_t>* scratch) {
  if (!params.HasPenalties() || n_recent <= 0 || recent == nullptr) return;
  const int32_t window = params.penalty_last_n < 0 ? n_recent : std::min(n_recent, params.penalty_last_n);
  scratch->assign(recent + (n_recent - window), recent + n_recent);
  std::sort(scratch->begin(), scratch->end());
  for (size_t i = 0; i < scratch->size();) {
    const int32_t id = (*scratch)[i];
    size_t j = i;
    while (j < scratch->size() && (*scratch)[j] == id) ++j;
    const float count = static_cast<float>(j - i);
    i = j;
    if (id < 0 || id >= n) continue;
    float& v = logits[id];
    if (params.repeat_penalty != 1.0f) v = v > 0.0f ? v / params.repeat_penalty : v * params.repeat_penalty;
    v -= count * params.frequency_penalty + params.presence_penalty;
  }
}

int32_t Argmax(const float* logits, int32_t n) {
  // Block maxima (vectorized), then the first index of the overall max inside the first block
  // that reaches it.
  float best = kNegInf;
  int32_t best_block = -1;
  for (int32_t b = 0; b < n; b += kBlock) {
    const float m = MaxOf(logits + b, std::min(kBlock, n - b));
    if (m > best) {
      best = m;
      best_block = b;
    }
  }
  if (best_block < 0) return 0;  // all −inf or NaN
  for (int32_t i = best_block;; ++i)
    if (logits[i] == best) return i;
}

void Sampler::FillBuckets(const float* logits, int32_t n, float max, const void* keep_boundary) {
  const Boundary& keep = *static_cast<const Boundary*>(keep_boundary);
  bucket_of_.resize(static_cast<size_t>(n));
  probs_.resize(static_cast<size_t>(n));
  BucketsAndWeights(logits, n, max, keep, bucket_of_.data(), probs_.data());
  bucket_count_.assign(kBuckets + 1, 0.0);
  bucket_mass_.assign(kBuckets + 1, 0.0);
  for (int32_t i = 0; i < n; ++i) {
    bucket_count_[bucket_of_[i]] += 1.0;
    bucket_mass_[bucket_of_[i]] += probs_[i];
  }
}

int32_t Sampler::Sample(float* logits, int32_t n, const SamplingParams& params, const int32_t* recent,
                        int32_t n_recent) {
  if (n <= 0) return -1;
  ApplyLogitBias(logits, n, params);
  ApplyPenalties(logits, n, params, recent, n_recent, &window_);
  ApplyTokenMask(logits, n, params);
  const int32_t max_id = Argmax(logits, n);
  if (!(params.temperature > 0.0f)) return max_id;
  const float max = logits[max_id];
  if (!(max > kNegInf)) return max_id;  // every token was banned

  // Every stage keeps a prefix of the Better order, so the kept set is described by its last
  // member (`keep`); `listed` says candidates_ holds exactly that set (in no particular order, at
  // most kSmallSet tokens). Every kept set holds the max.
  Boundary keep;
  bool listed = false;

  if (params.top_k > 0 && params.top_k < n) {
    if (params.top_k <= 256) {
      SelectTopK(logits, n, params.top_k, &candidates_);
      keep = Boundary::Of(*std::max_element(candidates_.begin(), candidates_.end(), Better));
      listed = true;
    } else {
      FillBuckets(logits, n, max, &keep);
      CutPrefix(logits, n, bucket_of_.data(), probs_.data(), bucket_count_, bucket_count_, false,
                params.top_k - 0.5, &candidates_, &edge_, &keep, &listed);
    }
  }

  if (params.top_p < 1.0f) {
    const double p = std::max(0.0f, params.top_p);
    if (listed) {
      double total = 0.0;
      for (Candidate& c : candidates_) total += (c.w = ExpNonPositive(c.logit - max));
      keep = KeepNucleus(&candidates_, p * total);
    } else {
      FillBuckets(logits, n, max, &keep);
      double total = 0.0;
      for (int32_t b = 0; b < kBuckets; ++b) total += bucket_mass_[b];
      Boundary cut;
      if (CutPrefix(logits, n, bucket_of_.data(), probs_.data(), bucket_mass_, bucket_count_, true, p * total,
                    &candidates_, &edge_, &cut, &listed))
        keep = cut;  // inside the previous set: FillBuckets weighed only its members
    }
  }

  if (params.min_p > 0.0f) {
    // prob_i >= min_p · prob_max  <=>  logit_i >= max + ln(min_p); the max itself always stays.
    const float threshold = std::min(max, static_cast<float>(max + std::log(static_cast<double>(params.min_p))));
    const Boundary cut{Key(threshold), n - 1};
    const Boundary shorter = Boundary::Shorter(keep, cut);
    if (listed) {
      size_t kept = 0;
      for (const Candidate& c : candidates_)
        if (c.logit >= threshold) candidates_[kept++] = c;
      candidates_.resize(kept);
    } else if (shorter.key == cut.key && shorter.id == cut.id) {
      // min-p is the binding cut (a prefix of the kept set): list its tokens if they are few.
      candidates_.clear();
      for (int32_t i = 0; i < n && candidates_.size() <= kSmallSet; ++i)
        if (logits[i] >= threshold) candidates_.push_back({logits[i], i, 0.0f});
      listed = candidates_.size() <= kSmallSet;
    }
    keep = shorter;
  }

  // Temperature, softmax weights and the inverse-cdf walk in id order.
  const float t = params.temperature;
  const float coin = rng_.NextF32();
  if (listed) {
    std::sort(candidates_.begin(), candidates_.end(), LowerId);
    float total = 0.0f;
    for (Candidate& c : candidates_) total += (c.w = ExpNonPositive((c.logit - max) / t));
    const float r = coin * total;
    float cum = 0.0f;
    for (const Candidate& c : candidates_)
      if (r < (cum += c.w)) return c.id;
    for (size_t i = candidates_.size(); i-- > 1;)
      if (candidates_[i].w > 0.0f) return candidates_[i].id;
    return candidates_.front().id;
  }
  probs_.resize(static_cast<size_t>(n));
  const float total = MaskedWeights(logits, n, max, t, keep, probs_.data(), &block_sums_);
  return WalkBlocks(probs_.data(), n, block_sums_, total, coin);
}

}  // namespace weightmap
