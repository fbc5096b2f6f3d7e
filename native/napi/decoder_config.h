// The decoder's config, load options and KV cache type from JS: the JS DecoderConfig object
// (lib/architectures/decoder.ts) crosses as it is and is read field by field by its own names,
// one row per field (decoder_config.cc); one name table per enum value set.
#pragma once

#include <napi.h>

#include "engines/decoder/decoder.h"

namespace weightmap {
namespace decoder {

DecoderConfig ParseConfig(Napi::Value value);
DecoderOptions ParseOptions(Napi::Env env, Napi::Value value);
// `value` undefined: `fallback`; else one of the names of KvType ('f16', 'f32', 'q8_0').
KvType ParseKvType(Napi::Env env, Napi::Value value, KvType fallback);
// What the rows and the name tables accept, for the check that lib spells them the same way:
// { configFields, kvCacheTypes, activations, ropePairings, quants } (arrays of strings).
Napi::Object DecoderNames(Napi::Env env);

}  // namespace decoder
}  // namespace weightmap
