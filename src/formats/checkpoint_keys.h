// Single-file Stable Diffusion checkpoints (original LDM/SGM key names, as model sites distribute them) read as
// diffusers/transformers parameter names per pipeline part, so that they can be matched to an exported model's
// weights (src/runtime/checkpoint_import.cpp).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace o2g {

class SafetensorsFile;
struct SafeTensor;

// One checkpoint tensor under its diffusers name.
struct CheckpointEntry {
    const SafeTensor* tensor = nullptr;
    bool squeeze = false;  // a 1x1 conv [c, c, 1, 1] that diffusers holds as a Linear [c, c] (VAE attention)
};

struct CheckpointParts {
    // part ("unet", "vae", "text_encoder", "text_encoder_2", or "" for keys already in diffusers' names) ->
    // diffusers name within the part ("down_blocks.0.resnets.0.conv1.weight"; CLIP without "text_model.")
    std::map<std::string, std::map<std::string, CheckpointEntry>> parts;
    std::vector<std::string> unsupported;  // keys of formats not read (OpenCLIP text encoders), for messages
    std::vector<std::string> unknown;      // LDM-prefixed keys with no diffusers name (EMA copies, ...)
};

// Sorts a checkpoint's keys into parts: `model.diffusion_model.` (UNet, SD 1.x/2.x/SDXL block names),
// `first_stage_model.` (VAE), `cond_stage_model.transformer.` and `conditioner.embedders.0.transformer.` (CLIP-L).
// Keys with none of the LDM prefixes are taken as diffusers names of a single part ("").
CheckpointParts read_checkpoint_keys(const SafetensorsFile& f);

// A dotted parameter path in its parts ("down_blocks.0.conv" -> down_blocks, 0, conv).
std::vector<std::string> split_path(const std::string& s);
// A module path with '_' for '.', as kohya and diffusers' flat names write it.
std::string flat_name(std::string s);

// Words for a part in messages ("UNet", "VAE", ...).
std::string part_words(const std::string& part);

}  // namespace o2g
