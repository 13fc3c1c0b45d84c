// LoRA files merged into a model's weights when it loads (`--lora FILE[:SCALE]`, SessionOptions::lora, and the
// NAME_load of compiled programs). See docs/models.md for the key formats understood.
#pragma once
#include <string>
#include <vector>

namespace onnx2ggml {

struct LoraFile {
    std::string path;    // .safetensors (kohya/A1111 `lora_unet_...` keys, or diffusers/PEFT `lora_A`/`lora_B`)
    float scale = 1.0f;  // multiplies every delta, like diffusers' fuse_lora(lora_scale=...)
};

// "FILE" or "FILE:SCALE" as given to --lora (a suffix after the last ':' that is not a number belongs to FILE).
LoraFile parse_lora_arg(const std::string& arg);

}  // namespace onnx2ggml
