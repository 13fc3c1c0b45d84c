// LoRA merging, apart from ONNX: which weights a model has (targets: a name, module paths, layout), reading LoRA
// safetensors files, matching their modules to targets, and adding scale * (alpha / rank) * up @ down to each.
// `onnx2ggml run` finds targets by tracing the graph (src/runtime/lora.cpp); compiled programs read them from
// their GGUF, where `compile` wrote them.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "onnx2ggml/lora.h"

struct gguf_context;

namespace o2g {

class SafetensorsFile;
struct SafeTensor;

// How a weight holds the [out, in * k...] matrix that up @ down makes.
enum class LoraLayout : int32_t {
    OutIn = 0,  // [out, in] (torch Linear, Gemm with transB) or [out, in, kh, kw] (Conv)
    InOut = 1,  // [in, out]: a MatMul's weight, transposed when the exporter folded the Transpose
};

struct LoraTarget {
    std::string weight;              // ONNX initializer, and GGUF key in compiled programs
    std::vector<std::string> paths;  // module paths, dotted ("unet.down_blocks.0.attentions.0.proj_in")
    std::vector<int64_t> dims;       // as stored (ONNX order)
    LoraLayout layout = LoraLayout::OutIn;
    float gain = 1;                  // the graph multiplies the weight by this (Gemm's alpha)
};

// One LoRA module of a file: its up/down pair and what scales it.
struct LoraModule {
    std::string name;       // the key stem as written, for messages
    std::string component;  // "unet", "te", "te2", or "" when the key does not say
    std::string path;       // module path within the component, '.' written as '_'
    std::string dotted;     // the same with dots where the key had them ("" for kohya keys)
    const SafeTensor* up = nullptr;
    const SafeTensor* down = nullptr;
    const SafeTensor* alpha = nullptr;  // kohya/diffusers `.alpha` scalar
    float meta_alpha = 0;               // from PEFT adapter metadata (0: none)
    bool rslora = false;                // alpha / sqrt(rank) rather than alpha / rank
};

struct LoraKeys {
    std::vector<LoraModule> modules;
    std::vector<std::string> unsupported;  // keys of adapter kinds this reader does not merge (LoHa, LoKr, DoRA, ...)
};

// Sorts a file's keys into modules: kohya/A1111 (`lora_unet_*`, `lora_te_*`, `lora_te1_*`, `lora_te2_*` with
// `.lora_down.weight`, `.lora_up.weight`, `.alpha`) and diffusers/PEFT (`[unet.|text_encoder.|text_encoder_2.]PATH`
// with `.lora_A.weight`/`.lora_B.weight`, alphas from the `lora_adapter_metadata`), plus older diffusers spellings.
LoraKeys parse_lora_keys(const SafetensorsFile& f);

// The diffusers UNet path ('_'-joined) of an SGM/LDM UNet module name ("input_blocks_4_1_proj_in" ->
// "down_blocks_1_attentions_0_proj_in"), as kohya writes SDXL LoRAs; "" when `path` is not one. `layers` is the
// UNet's layers_per_block.
std::string sgm_unet_path(const std::string& path, int layers);

// The diffusers module paths ('_'-joined) that a Flux or Chroma module of the original (BFL) checkpoint stands for,
// as kohya (`double_blocks_0_img_attn_qkv`) and ComfyUI (`diffusion_model_` first) name them: one path, or for the
// fused projections (qkv, single blocks' linear1) the modules in the order their output rows hold them. Empty when
// `path` is not one.
std::vector<std::string> bfl_flux_paths(const std::string& path);

// Called once per target that some module matched; `add(w)` adds every matched delta to w (f32, stored layout).
using LoraMerge = std::function<void(size_t target, const std::function<void(float*)>& add)>;

// Reads the files and merges them through `merge`. Modules that match no target are reported on stderr (a warning);
// a file none of whose modules matches is an error. Returns the number of targets changed.
size_t merge_lora(const std::vector<onnx2ggml::LoraFile>& files, const std::vector<LoraTarget>& targets,
                  const std::string& model, bool quiet, const LoraMerge& merge);

// The target table in a GGUF file's metadata (compile writes it, programs read it; dims come from the tensors).
void write_lora_targets(gguf_context* g, const std::vector<LoraTarget>& targets);
std::vector<LoraTarget> read_lora_targets(const gguf_context* g);

}  // namespace o2g
