#!/usr/bin/env python3
"""Exports the model families beyond SD 1.5 from diffusers and transformers to ONNX, with PyTorch reference outputs.

Parts: the diffusion transformers (SD3's MMDiT, Flux, Chroma: its attention masked over T5 padding), an SDXL-style
UNet (`added_cond_kwargs`: text_embeds and time_ids, linear projections, deeper transformer stacks), ControlNet (its
residuals are outputs), the TAESD decoder (`AutoencoderTiny`), CLIP-G (`CLIPTextModelWithProjection`), the SD 2.x
UNet (linear projections, heads per block) and its OpenCLIP-H-style text encoder (GELU; last and penultimate hidden
states), the T5 v1.1 encoder (relative attention buckets, gated GELU), SDXL's VAE (`AutoencoderKL` encoder and
decoder) and an ESRGAN / Real-ESRGAN RRDBNet upscaler (x4, and x2 with pixel-unshuffled input; the module is written
here). Writes DIR/<part>.onnx, DIR/ref/<part>.<case>.<output>.npy and DIR/manifest.json in the format
tests/sd15_tests.py reads, so the same harness checks them against PyTorch and onnxruntime:
  .venv/bin/python scripts/export_families.py --small --out-dir tests/models/families_small
  .venv/bin/python tests/sd15_tests.py --manifest tests/models/families_small/manifest.json
--parts re-exports some parts and keeps the other entries of an existing manifest.
Without --small: the real configs (FULL), one pipeline-like shape case per part (FULL_CASES) and every weight in one
64-byte aligned external data file; figures in docs/models.md ("Families beyond SD 1.5, full size"):
  .venv/bin/python scripts/export_families.py --out-dir build/families_full --parts sd2_unet --no-ort-check
  .venv/bin/python tests/sd15_tests.py --manifest build/families_full/manifest.json --rss --filter sd2_unet

--sdxl-pipeline exports instead a small but coherent SDXL pipeline (the fixture of examples/txt2img's SDXL mode and
of scripts/sdxl_txt2img_reference.py): text_encoder (CLIP-L-like, penultimate hidden state), text_encoder_2
(CLIP-G-like: penultimate hidden state and projected text_embeds), unet (context 16+16, pooled 16) and vae_decoder
(SDXL's VAE). Both text encoders keep CLIP's real 49408-token vocabulary, so real prompts tokenize:
  .venv/bin/python scripts/export_families.py --sdxl-pipeline --out-dir tests/models/sdxl_small

Weights are random (seeded; ControlNet's zero-initialized output convs get random weights too, so that its outputs
say something); --small uses reduced widths and depths (the committed fixtures). Every part goes through the
TorchScript exporter (opset 17, rms_norm exported as its formula) except Flux and Chroma, which go through
torch.export: the TorchScript trace of their rotary embedding fixes the example's batch and lengths. The DiT blocks
carry the rank-5/6 patterns of issue 10: attention's qkv split, Flux's rotary embedding, SD3's rank-6 unpatchify
Einsum.
"""
import argparse
import contextlib
import io
import json
import os
import sys
import time
import warnings

import numpy as np
import onnx
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, HERE)
import metrics  # noqa: E402
import sd15_data  # noqa: E402

SMALL = {
    "sd3_transformer": dict(sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8,
                            num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=16,
                            pooled_projection_dim=32, out_channels=4, pos_embed_max_size=16),
    "flux_transformer": dict(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16,
                             num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32,
                             guidance_embeds=False, axes_dims_rope=(4, 6, 6)),
    # Chroma: Flux without CLIP and without time/vector/guidance embedders; a 5-layer approximator (64 -> 5120 -> 3072
    # at full size, 16 -> 32 -> 32 here) makes every block's pruned AdaLN modulation
    "chroma_transformer": dict(patch_size=1, in_channels=16, num_layers=2, num_single_layers=2, attention_head_dim=16,
                               num_attention_heads=2, joint_attention_dim=32, axes_dims_rope=(4, 6, 6),
                               approximator_num_channels=16, approximator_hidden_dim=32, approximator_layers=5),
}
SMALL.update({
    "sdxl_unet": dict(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(16, 32),
                      down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                      up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                      attention_head_dim=(2, 4), use_linear_projection=True, addition_embed_type="text_time",
                      addition_time_embed_dim=8, projection_class_embeddings_input_dim=8 * 6 + 32,
                      transformer_layers_per_block=(1, 2), norm_num_groups=8),
    "controlnet": dict(in_channels=4, conditioning_channels=3, block_out_channels=(16, 32), layers_per_block=1,
                       down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), cross_attention_dim=32,
                       attention_head_dim=(2, 4), conditioning_embedding_out_channels=(8, 16), norm_num_groups=8),
    "taesd_decoder": dict(encoder_block_out_channels=(8, 8, 8, 8), decoder_block_out_channels=(8, 8, 8, 8),
                          num_encoder_blocks=(1, 1, 1, 1), num_decoder_blocks=(1, 1, 1, 1)),
    "clip_g": dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   max_position_embeddings=77, projection_dim=16, hidden_act="gelu", bos_token_id=98,
                   eos_token_id=99),
})
SDXL_VAE_SMALL = dict(in_channels=3, out_channels=3, latent_channels=4, down_block_types=("DownEncoderBlock2D",) * 4,
                      up_block_types=("UpDecoderBlock2D",) * 4, block_out_channels=(8, 16, 16, 16), layers_per_block=2,
                      norm_num_groups=4, sample_size=64, scaling_factor=0.13025, force_upcast=True)
SMALL.update({
    # SD 2.x: linear projections, heads per block (SD2's attention_head_dim [5, 10, 20, 20] counts heads of 64; here
    # 2, 3, 4 heads of 8), OpenCLIP-H context (1024 -> 48); upcast_attention as SD 2.1. v-prediction is the
    # scheduler's prediction_type: the same graph.
    "sd2_unet": dict(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(16, 24, 32),
                     down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
                     up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
                     cross_attention_dim=48, attention_head_dim=(2, 3, 4), use_linear_projection=True,
                     upcast_attention=True, norm_num_groups=8),
    # OpenCLIP-H text tower as SD 2.x ships it: plain (erf) GELU, hidden 1024 -> 48, 16 heads of 64 -> 3 of 16
    "sd2_text_encoder": dict(vocab_size=100, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                             num_attention_heads=3, max_position_embeddings=77, hidden_act="gelu", bos_token_id=98,
                             eos_token_id=99),
    # T5 v1.1 / flan-T5 encoder (SD3's and Flux's second text encoder): relative attention buckets, gated-GELU FF
    "t5_encoder": dict(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                       relative_attention_num_buckets=32, relative_attention_max_distance=128,
                       feed_forward_proj="gated-gelu", dropout_rate=0.0, layer_norm_epsilon=1e-6,
                       tie_word_embeddings=False),
    # SDXL's VAE: SD's AutoencoderKL block layout (4 blocks, 2 layers each, 8x), its own scaling factor and upcast
    "sdxl_vae_encoder": SDXL_VAE_SMALL,
    "sdxl_vae_decoder": SDXL_VAE_SMALL,
    # Real-ESRGAN's RRDBNet (x4plus: 64 features, 32 growth, 23 blocks); x2 unshuffles its input by 2 first
    "esrgan_x4": dict(num_in_ch=3, num_out_ch=3, scale=4, num_feat=8, num_grow_ch=4, num_block=2),
    "esrgan_x2": dict(num_in_ch=3, num_out_ch=3, scale=2, num_feat=8, num_grow_ch=4, num_block=1),
})
FULL = {k: {} for k in SMALL}  # diffusers' / transformers' defaults where they are the real model's config
FULL.update({
    # stabilityai/stable-diffusion-3-medium transformer (2 B): 24 joint blocks of 24 heads of 64
    "sd3_transformer": dict(sample_size=128, patch_size=2, in_channels=16, num_layers=24, attention_head_dim=64,
                            num_attention_heads=24, joint_attention_dim=4096, caption_projection_dim=1536,
                            pooled_projection_dim=2048, out_channels=16, pos_embed_max_size=192),
    # stabilityai/stable-diffusion-xl-base-1.0 UNet (2.6 B)
    "sdxl_unet": dict(sample_size=128, in_channels=4, out_channels=4, layers_per_block=2,
                      block_out_channels=(320, 640, 1280),
                      down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
                      up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
                      cross_attention_dim=2048, attention_head_dim=(5, 10, 20), use_linear_projection=True,
                      addition_embed_type="text_time", addition_time_embed_dim=256,
                      projection_class_embeddings_input_dim=2816, transformer_layers_per_block=(1, 2, 10)),
    # lllyasviel/sd-controlnet-* (SD 1.5's UNet encoder, context 768)
    "controlnet": dict(cross_attention_dim=768),
    # SDXL's text_encoder_2 (OpenCLIP bigG/14 text tower with projection)
    "clip_g": dict(vocab_size=49408, hidden_size=1280, intermediate_size=5120, num_hidden_layers=32,
                   num_attention_heads=20, max_position_embeddings=77, projection_dim=1280, hidden_act="gelu",
                   bos_token_id=49406, eos_token_id=49407),
    "sd2_unet": dict(sample_size=96, block_out_channels=(320, 640, 1280, 1280), cross_attention_dim=1024,
                     attention_head_dim=(5, 10, 20, 20), use_linear_projection=True, upcast_attention=True),
    "sd2_text_encoder": dict(vocab_size=49408, hidden_size=1024, intermediate_size=4096, num_hidden_layers=23,
                             num_attention_heads=16, max_position_embeddings=77, hidden_act="gelu",
                             bos_token_id=49406, eos_token_id=49407),
    "t5_encoder": dict(vocab_size=32128, d_model=4096, d_kv=64, d_ff=10240, num_layers=24, num_heads=64,
                       feed_forward_proj="gated-gelu", tie_word_embeddings=False),
    "sdxl_vae_encoder": dict(down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
                             block_out_channels=(128, 256, 512, 512), layers_per_block=2, sample_size=1024,
                             scaling_factor=0.13025, force_upcast=True),
    "esrgan_x4": dict(num_in_ch=3, num_out_ch=3, scale=4, num_feat=64, num_grow_ch=32, num_block=23),
    "esrgan_x2": dict(num_in_ch=3, num_out_ch=3, scale=2, num_feat=64, num_grow_ch=32, num_block=23),
})
FULL["sdxl_vae_decoder"] = FULL["sdxl_vae_encoder"]
# lodestones/Chroma1-HD: diffusers' defaults (19 double and 38 single blocks of 24 heads of 128, approximator 64 ->
# 5120 x5 -> 3072)
# The T5 encoder with an attention_mask input, exported with transformers 4.x: the graph onnxruntime's t5 optimizer
# turns into RelativePositionBias and contrib Attention (not in the default list: --parts t5_encoder_masked, run
# from a venv with transformers < 5, as tests/models/README.md says)
SMALL_EXTRA = {"t5_encoder_masked": SMALL["t5_encoder"]}
FULL["t5_encoder_masked"] = FULL["t5_encoder"]
# Full size: one shape case per part, as the real pipeline feeds it at a modest resolution (SD 1.5's full-size
# figures use the same: a 256x256 image, a 32x32 latent, batch 2 for classifier-free guidance, 77 tokens).
FULL_CASES = {
    "sd3_transformer": {"hidden_states": [1, 16, 32, 32], "encoder_hidden_states": [1, 154, 4096],
                        "pooled_projections": [1, 2048], "timestep": [1]},
    "flux_transformer": {"hidden_states": [1, 256, 64], "encoder_hidden_states": [1, 256, 4096],
                         "pooled_projections": [1, 768], "timestep": [1], "img_ids": [256, 3], "txt_ids": [256, 3]},
    "chroma_transformer": {"hidden_states": [1, 256, 64], "encoder_hidden_states": [1, 256, 4096], "timestep": [1],
                           "img_ids": [256, 3], "txt_ids": [256, 3], "attention_mask": [1, 256]},
    "sdxl_unet": {"sample": [2, 4, 32, 32], "timestep": [2], "encoder_hidden_states": [2, 77, 2048],
                  "text_embeds": [2, 1280], "time_ids": [2, 6]},
    "controlnet": {"sample": [2, 4, 32, 32], "timestep": [2], "encoder_hidden_states": [2, 77, 768],
                   "controlnet_cond": [2, 3, 256, 256]},
    "taesd_decoder": {"latent": [1, 4, 64, 64]},
    "clip_g": {"input_ids": [1, 77]},
    "sd2_unet": {"sample": [2, 4, 32, 32], "timestep": [2], "encoder_hidden_states": [2, 77, 1024]},
    "sd2_text_encoder": {"input_ids": [1, 77]},
    "t5_encoder": {"input_ids": [1, 77]},
    "t5_encoder_masked": {"input_ids": [1, 77], "attention_mask": [1, 77]},
    "sdxl_vae_encoder": {"sample": [1, 3, 256, 256]},
    "sdxl_vae_decoder": {"latent": [1, 4, 32, 32]},
    "esrgan_x4": {"image": [1, 3, 64, 64]},
    "esrgan_x2": {"image": [1, 3, 128, 128]},
}
NOTES = {
    "sd2_unet": "SD 2.x (768-v) is v-prediction: that is the scheduler's prediction_type, not part of this graph",
    "sd2_text_encoder": "penultimate_hidden_state is hidden_states[-2] (the clip-skip-2 input, before the final "
                        "LayerNorm); diffusers' SD 2.x checkpoints drop the last of OpenCLIP-H's 24 layers instead",
    "t5_encoder": "no attention mask, as SD3 and Flux run it",
    "t5_encoder_masked": "with the attention mask; exported with transformers 4.x, whose graph onnxruntime's t5 "
                         "optimizer fuses into RelativePositionBias and Attention (tests/flavour_tests.py)",
    "chroma_transformer": "attention_mask is the prompt's T5 mask (1 on the tokens and the one pad token Chroma "
                          "keeps); the wrapper appends ones for the image tokens and passes it as bool, as "
                          "ChromaPipeline does since diffusers#12116",
    "sdxl_text_encoder": "hidden_states[-2], the context SDXL takes from CLIP-L (its last layer is dead code here)",
}

# The small SDXL pipeline: part -> (kind, config, seed). Seeds differ so that the two text encoders do not share
# weights (a swapped concatenation must show). Special tokens as SDXL's configs (eos 2: pooling at the argmax id).
CLIP_SMALL = dict(vocab_size=49408, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                  max_position_embeddings=77, bos_token_id=0, eos_token_id=2, pad_token_id=1)
SDXL_PIPELINE = {
    "text_encoder": ("sdxl_text_encoder", dict(CLIP_SMALL, hidden_act="quick_gelu"), 1001),
    "text_encoder_2": ("sdxl_text_encoder_2", dict(CLIP_SMALL, hidden_act="gelu", projection_dim=16), 1002),
    "unet": ("sdxl_unet", dict(SMALL["sdxl_unet"], projection_class_embeddings_input_dim=8 * 6 + 16), 1003),
    "vae_decoder": ("sdxl_vae_decoder", SDXL_VAE_SMALL, 1004),
}


def part_io(part, cfg):
    f32 = lambda n, **kw: dict(name=n, dtype="float32", distribution="normal", **kw)  # noqa: E731
    t = {"name": "timestep", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1000.0]}
    if part == "sdxl_unet":
        ctx = cfg.get("cross_attention_dim", 2048)
        pooled = cfg.get("projection_class_embeddings_input_dim", 2816) - 6 * cfg.get("addition_time_embed_dim", 256)
        return dict(inputs=[f32("sample"), t, f32("encoder_hidden_states"), f32("text_embeds"),
                            {"name": "time_ids", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1024.0]}],
                    outputs=["out_sample"],
                    dynamic={"sample": [0, 2, 3], "timestep": [0], "encoder_hidden_states": [0, 1],
                             "text_embeds": [0], "time_ids": [0]},
                    cases=[{"sample": [1, 4, 16, 16], "timestep": [1], "encoder_hidden_states": [1, 7, ctx],
                            "text_embeds": [1, pooled], "time_ids": [1, 6]},
                           {"sample": [2, 4, 24, 16], "timestep": [2], "encoder_hidden_states": [2, 5, ctx],
                            "text_embeds": [2, pooled], "time_ids": [2, 6]}])
    if part == "controlnet":
        return dict(inputs=[f32("sample"), t, f32("encoder_hidden_states"),
                            {"name": "controlnet_cond", "dtype": "float32", "distribution": "uniform",
                             "range": [0.0, 1.0]}],
                    outputs=[f"down_{k}" for k in range(4)] + ["mid"],
                    dynamic={"sample": [0, 2, 3], "timestep": [0], "encoder_hidden_states": [0, 1],
                             "controlnet_cond": [0, 2, 3]},
                    cases=[{"sample": [1, 4, 16, 16], "timestep": [1], "encoder_hidden_states": [1, 7, 32],
                            "controlnet_cond": [1, 3, 32, 32]},
                           {"sample": [2, 4, 16, 24], "timestep": [2], "encoder_hidden_states": [2, 5, 32],
                            "controlnet_cond": [2, 3, 32, 48]}])
    if part == "taesd_decoder":
        return dict(inputs=[f32("latent")], outputs=["sample"], dynamic={"latent": [0, 2, 3]},
                    cases=[{"latent": [1, 4, 8, 8]}, {"latent": [2, 4, 12, 8]}])
    if part == "clip_g":
        return dict(inputs=[{"name": "input_ids", "dtype": "int64", "distribution": "tokens",
                             "bos": cfg["bos_token_id"], "eos": cfg["eos_token_id"]}],
                    outputs=["text_embeds"], dynamic={"input_ids": [0]},
                    cases=[{"input_ids": [1, 77]}, {"input_ids": [2, 77]}])
    if part == "sd2_unet":
        ctx = cfg.get("cross_attention_dim", 1024)
        return dict(inputs=[f32("sample"), t, f32("encoder_hidden_states")], outputs=["out_sample"],
                    dynamic={"sample": [0, 2, 3], "timestep": [0], "encoder_hidden_states": [0, 1]},
                    cases=[{"sample": [1, 4, 16, 16], "timestep": [1], "encoder_hidden_states": [1, 77, ctx]},
                           {"sample": [2, 4, 24, 16], "timestep": [2], "encoder_hidden_states": [2, 9, ctx]}])
    if part in ("sdxl_text_encoder", "sdxl_text_encoder_2"):
        tokens = {"name": "input_ids", "dtype": "int64", "distribution": "tokens", "bos": 49406, "eos": 49407}
        outs = ["penultimate_hidden_state"] + (["text_embeds"] if part == "sdxl_text_encoder_2" else [])
        return dict(inputs=[tokens], outputs=outs, dynamic={"input_ids": [0]},
                    cases=[{"input_ids": [1, 77]}, {"input_ids": [2, 77]}])
    if part == "t5_encoder_masked":
        v = cfg.get("vocab_size", 32128)
        return dict(inputs=[{"name": "input_ids", "dtype": "int64", "distribution": "tokens", "bos": v - 2,
                             "eos": v - 1},
                            {"name": "attention_mask", "dtype": "int64", "distribution": "padding_mask"}],
                    outputs=["last_hidden_state"], dynamic={"input_ids": [0, 1], "attention_mask": [0, 1]},
                    cases=[{"input_ids": [1, 77], "attention_mask": [1, 77]},
                           {"input_ids": [2, 19], "attention_mask": [2, 19]}])
    if part in ("sd2_text_encoder", "t5_encoder"):
        v = cfg.get("vocab_size", 32128)
        tokens = {"name": "input_ids", "dtype": "int64", "distribution": "tokens", "bos": v - 2, "eos": v - 1}
        if part == "sd2_text_encoder":
            return dict(inputs=[tokens], outputs=["last_hidden_state", "penultimate_hidden_state"],
                        dynamic={"input_ids": [0]}, cases=[{"input_ids": [1, 77]}, {"input_ids": [2, 77]}])
        return dict(inputs=[tokens], outputs=["last_hidden_state"], dynamic={"input_ids": [0, 1]},
                    cases=[{"input_ids": [1, 77]}, {"input_ids": [2, 19]}])
    if part == "sdxl_vae_encoder":
        return dict(inputs=[{"name": "sample", "dtype": "float32", "distribution": "uniform", "range": [-1.0, 1.0]}],
                    outputs=["latent_mean", "latent_logvar"], dynamic={"sample": [0, 2, 3]},
                    cases=[{"sample": [1, 3, 64, 64]}, {"sample": [2, 3, 48, 80]}])
    if part == "sdxl_vae_decoder":
        return dict(inputs=[f32("latent")], outputs=["sample"], dynamic={"latent": [0, 2, 3]},
                    cases=[{"latent": [1, 4, 8, 8]}, {"latent": [2, 4, 8, 12]}])
    if part in ("esrgan_x4", "esrgan_x2"):
        return dict(inputs=[{"name": "image", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1.0]}],
                    outputs=["upscaled"], dynamic={"image": [0, 2, 3]},
                    cases=[{"image": [1, 3, 8, 8]}, {"image": [2, 3, 12, 10]}])
    if part == "sd3_transformer":
        c, j, p = cfg.get("in_channels", 16), cfg.get("joint_attention_dim", 4096), cfg.get("pooled_projection_dim", 2048)
        return dict(
            inputs=[{"name": "hidden_states", "dtype": "float32", "distribution": "normal"},
                    {"name": "encoder_hidden_states", "dtype": "float32", "distribution": "normal"},
                    {"name": "pooled_projections", "dtype": "float32", "distribution": "normal"},
                    {"name": "timestep", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1000.0]}],
            outputs=["sample"],
            dynamic={"hidden_states": [0, 2, 3], "encoder_hidden_states": [0, 1], "pooled_projections": [0],
                     "timestep": [0]},
            cases=[{"hidden_states": [1, c, 8, 8], "encoder_hidden_states": [1, 8, j], "pooled_projections": [1, p],
                    "timestep": [1]},
                   {"hidden_states": [2, c, 12, 16], "encoder_hidden_states": [2, 5, j], "pooled_projections": [2, p],
                    "timestep": [2]}])
    if part == "chroma_transformer":
        c, j = cfg.get("in_channels", 64), cfg.get("joint_attention_dim", 4096)
        return dict(
            inputs=[f32("hidden_states"), f32("encoder_hidden_states"),
                    {"name": "timestep", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1.0]},
                    {"name": "img_ids", "dtype": "float32", "distribution": "uniform", "range": [0.0, 16.0]},
                    {"name": "txt_ids", "dtype": "float32", "distribution": "uniform", "range": [0.0, 0.0]},
                    {"name": "attention_mask", "dtype": "int64", "distribution": "padding_mask"}],
            outputs=["sample"],
            dynamic={"hidden_states": [0, 1], "encoder_hidden_states": [0, 1], "timestep": [0], "img_ids": [0],
                     "txt_ids": [0], "attention_mask": [0, 1]},
            cases=[{"hidden_states": [1, 16, c], "encoder_hidden_states": [1, 8, j], "timestep": [1],
                    "img_ids": [16, 3], "txt_ids": [8, 3], "attention_mask": [1, 8]},
                   {"hidden_states": [2, 24, c], "encoder_hidden_states": [2, 6, j], "timestep": [2],
                    "img_ids": [24, 3], "txt_ids": [6, 3], "attention_mask": [2, 6]}])
    c, j, p = cfg.get("in_channels", 64), cfg.get("joint_attention_dim", 4096), cfg.get("pooled_projection_dim", 768)
    return dict(
        inputs=[{"name": "hidden_states", "dtype": "float32", "distribution": "normal"},
                {"name": "encoder_hidden_states", "dtype": "float32", "distribution": "normal"},
                {"name": "pooled_projections", "dtype": "float32", "distribution": "normal"},
                {"name": "timestep", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1.0]},
                {"name": "img_ids", "dtype": "float32", "distribution": "uniform", "range": [0.0, 16.0]},
                {"name": "txt_ids", "dtype": "float32", "distribution": "uniform", "range": [0.0, 0.0]}],
        outputs=["sample"],
        dynamic={"hidden_states": [0, 1], "encoder_hidden_states": [0, 1], "pooled_projections": [0],
                 "timestep": [0], "img_ids": [0], "txt_ids": [0]},
        cases=[{"hidden_states": [1, 16, c], "encoder_hidden_states": [1, 8, j], "pooled_projections": [1, p],
                "timestep": [1], "img_ids": [16, 3], "txt_ids": [8, 3]},
               {"hidden_states": [2, 24, c], "encoder_hidden_states": [2, 6, j], "pooled_projections": [2, p],
                "timestep": [2], "img_ids": [24, 3], "txt_ids": [6, 3]}])


class SD3(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, hidden_states, encoder_hidden_states, pooled_projections, timestep):
        return self.model(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                          pooled_projections=pooled_projections, timestep=timestep, return_dict=False)[0]


class Flux(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, hidden_states, encoder_hidden_states, pooled_projections, timestep, img_ids, txt_ids):
        return self.model(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                          pooled_projections=pooled_projections, timestep=timestep, img_ids=img_ids,
                          txt_ids=txt_ids, return_dict=False)[0]


class Chroma(nn.Module):
    """attention_mask: the prompt's [B, T] T5 mask; image tokens are never masked (ChromaPipeline's
    _prepare_attention_mask), and the mask goes in as bool, so that masked keys are dropped rather than biased."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, hidden_states, encoder_hidden_states, timestep, img_ids, txt_ids, attention_mask):
        img = torch.ones_like(hidden_states[:, :, 0], dtype=torch.bool)
        mask = torch.cat([attention_mask.bool(), img], dim=1)
        return self.model(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                          timestep=timestep, img_ids=img_ids, txt_ids=txt_ids, attention_mask=mask,
                          return_dict=False)[0]


@contextlib.contextmanager
def rms_norm_decomposed():
    """The TorchScript exporter has no aten::rms_norm; export its formula instead (what it computes is unchanged)."""
    orig = torch.nn.functional.rms_norm

    def rms_norm(x, shape, weight=None, eps=None):
        dims = tuple(range(-len(shape), 0))
        eps = torch.finfo(x.dtype).eps if eps is None else eps
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * weight if weight is not None else y

    torch.nn.functional.rms_norm = rms_norm
    try:
        yield
    finally:
        torch.nn.functional.rms_norm = orig


@contextlib.contextmanager
def chroma_symbolic_batch(model):
    """Chroma's timestep embedding makes its zero guidance as torch.tensor([0] * batch), which torch.export fixes to
    the example's batch: trace the same values as zeros_like(timestep), and repeat as expand."""
    emb = getattr(model, "time_text_embed", None)
    if type(emb).__name__ != "ChromaCombinedTimestepTextProjEmbeddings":
        yield
        return

    def forward(timestep):
        t = emb.time_proj(timestep).to(timestep.dtype)
        g = emb.guidance_proj(torch.zeros_like(timestep)).to(timestep.dtype)
        mod = emb.mod_proj.to(t.dtype).unsqueeze(0).expand(timestep.shape[0], -1, -1)
        tg = torch.cat([t, g], dim=1).unsqueeze(1).expand(-1, mod.shape[1], -1)
        return torch.cat([tg, mod], dim=-1)

    emb.forward = forward
    try:
        yield
    finally:
        del emb.forward


class SDXLUNet(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, sample, timestep, encoder_hidden_states, text_embeds, time_ids):
        return self.model(sample, timestep, encoder_hidden_states, return_dict=False,
                          added_cond_kwargs={"text_embeds": text_embeds, "time_ids": time_ids})[0]


class ControlNet(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, sample, timestep, encoder_hidden_states, controlnet_cond):
        down, mid = self.model(sample, timestep, encoder_hidden_states, controlnet_cond=controlnet_cond,
                               return_dict=False)
        return tuple(down) + (mid,)


class VaeDecoder(nn.Module):
    """`decode` of AutoencoderTiny (TAESD) or AutoencoderKL."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, latent):
        return self.model.decode(latent, return_dict=False)[0]


class ClipG(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids).text_embeds


class UNet(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, sample, timestep, encoder_hidden_states):
        return self.model(sample, timestep, encoder_hidden_states, return_dict=False)[0]


class SD2TextEncoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        out = self.model(input_ids, output_hidden_states=True)
        return out.last_hidden_state, out.hidden_states[-2]


class SDXLTextEncoder(nn.Module):
    """SDXL's text encoders: hidden_states[-2], and text_embeds where the model projects (CLIP-G)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        out = self.model(input_ids, output_hidden_states=True)
        if hasattr(out, "text_embeds"):
            return out.hidden_states[-2], out.text_embeds
        return out.hidden_states[-2]


class T5Encoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids).last_hidden_state


class T5EncoderMasked(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids, attention_mask=attention_mask).last_hidden_state


class VaeEncoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, sample):
        dist = self.model.encode(sample).latent_dist
        return dist.mean, dist.logvar


class ResidualDenseBlock(nn.Module):
    """Five 3x3 convs, each fed the block input and every earlier output (growth `grow` channels each); LeakyReLU
    after the first four; the last maps back to `feat` channels, scaled by 0.2 onto the input."""

    def __init__(self, feat, grow):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(feat + k * grow, grow if k < 4 else feat, 3, padding=1)
                                   for k in range(5))
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x):
        feats = [x]
        for k, conv in enumerate(self.convs):
            y = conv(torch.cat(feats, 1))
            if k < 4:
                feats.append(self.act(y))
        return x + 0.2 * y


class RRDB(nn.Module):
    """Residual-in-residual dense block: three dense blocks in a chain, scaled by 0.2 onto the input."""

    def __init__(self, feat, grow):
        super().__init__()
        self.blocks = nn.Sequential(*(ResidualDenseBlock(feat, grow) for _ in range(3)))

    def forward(self, x):
        return x + 0.2 * self.blocks(x)


class RRDBNet(nn.Module):
    """ESRGAN / Real-ESRGAN generator: first conv, a trunk of RRDBs with a conv and a long skip, then two rounds of
    nearest 2x upsampling + conv + LeakyReLU, and two output convs. Scale 2 (1) pixel-unshuffles the input by 2 (4)
    first, so the 4x upsampler gives the wanted scale."""

    def __init__(self, num_in_ch=3, num_out_ch=3, scale=4, num_feat=64, num_grow_ch=32, num_block=23):
        super().__init__()
        self.unshuffle = {4: 1, 2: 2, 1: 4}[scale]
        self.conv_first = nn.Conv2d(num_in_ch * self.unshuffle ** 2, num_feat, 3, padding=1)
        self.body = nn.Sequential(*(RRDB(num_feat, num_grow_ch) for _ in range(num_block)))
        self.conv_body = nn.Conv2d(num_feat, num_feat, 3, padding=1)
        self.conv_up1 = nn.Conv2d(num_feat, num_feat, 3, padding=1)
        self.conv_up2 = nn.Conv2d(num_feat, num_feat, 3, padding=1)
        self.conv_hr = nn.Conv2d(num_feat, num_feat, 3, padding=1)
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, padding=1)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, image):
        x = nn.functional.pixel_unshuffle(image, self.unshuffle) if self.unshuffle > 1 else image
        feat = self.conv_first(x)
        feat = feat + self.conv_body(self.body(feat))
        for conv in (self.conv_up1, self.conv_up2):
            feat = self.act(conv(nn.functional.interpolate(feat, scale_factor=2, mode="nearest")))
        return self.conv_last(self.act(self.conv_hr(feat)))


WRAPPERS = {"sd3_transformer": lambda m: SD3(m), "flux_transformer": lambda m: Flux(m), "sdxl_unet": SDXLUNet,
            "chroma_transformer": Chroma,
            "controlnet": ControlNet, "taesd_decoder": VaeDecoder, "clip_g": ClipG,
            "sd2_unet": UNet, "sd2_text_encoder": SD2TextEncoder, "t5_encoder": T5Encoder,
            "t5_encoder_masked": T5EncoderMasked,
            "sdxl_vae_encoder": VaeEncoder, "sdxl_vae_decoder": VaeDecoder, "esrgan_x4": lambda m: m,
            "esrgan_x2": lambda m: m, "sdxl_text_encoder": SDXLTextEncoder, "sdxl_text_encoder_2": SDXLTextEncoder}


def build(part, cfg, seed):
    import diffusers
    torch.manual_seed(seed)
    if part in ("clip_g", "sdxl_text_encoder_2"):
        from transformers import CLIPTextConfig, CLIPTextModelWithProjection
        return CLIPTextModelWithProjection(CLIPTextConfig(**cfg)).eval()
    if part in ("sd2_text_encoder", "sdxl_text_encoder"):
        from transformers import CLIPTextConfig, CLIPTextModel
        return CLIPTextModel(CLIPTextConfig(**cfg)).eval()
    if part in ("t5_encoder", "t5_encoder_masked"):
        from transformers import T5Config, T5EncoderModel
        return T5EncoderModel(T5Config(**cfg)).eval()
    if part.startswith("esrgan"):
        return RRDBNet(**cfg).eval()
    cls = {"sd3_transformer": diffusers.SD3Transformer2DModel, "flux_transformer": diffusers.FluxTransformer2DModel,
           "chroma_transformer": diffusers.ChromaTransformer2DModel,
           "sdxl_unet": diffusers.UNet2DConditionModel, "controlnet": diffusers.ControlNetModel,
           "taesd_decoder": diffusers.AutoencoderTiny, "sd2_unet": diffusers.UNet2DConditionModel,
           "sdxl_vae_encoder": diffusers.AutoencoderKL, "sdxl_vae_decoder": diffusers.AutoencoderKL}[part]
    model = cls(**cfg).eval()
    if part == "controlnet":  # zero-initialized output convs would make every output 0
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.startswith(("controlnet_down_blocks", "controlnet_mid_block")):
                    p.copy_(torch.randn_like(p) * 0.1)
    return model


KEEP_METADATA = {"pkg.torch.onnx.name_scopes"}  # module paths: how --lora finds torch.export's weights (val_N)


def strip_node_metadata(graph):
    """torch.export writes each node's stack trace (local paths, line numbers) and FX node: drop them, so that the
    file depends on the model only (and is much smaller for Flux). The module scopes stay."""
    for n in graph.node:
        keep = [(p.key, p.value) for p in n.metadata_props if p.key in KEEP_METADATA]
        del n.metadata_props[:]
        for k, v in keep:
            n.metadata_props.add(key=k, value=v)
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                strip_node_metadata(g)


def export_external(wrapper, targs, names, io_spec, dyn, path, opset):
    """TorchScript export with every initializer in one 64-byte aligned external file <part>.onnx.data (the full-size
    graphs: protobuf caps an embedded model at 2 GB). Returns the graph without its weights."""
    import shutil
    from export_sd15 import _consolidate_external_data
    tmpdir = path + ".parts"
    shutil.rmtree(tmpdir, ignore_errors=True)
    os.makedirs(tmpdir)
    tmp_path = os.path.join(tmpdir, os.path.basename(path))
    torch.onnx.export(wrapper, targs, tmp_path, dynamo=False, opset_version=opset, input_names=names,
                      output_names=io_spec["outputs"], dynamic_axes=dyn, do_constant_folding=True,
                      external_data=True)
    os.replace(tmp_path, path)
    for fn in os.listdir(tmpdir):  # per-tensor files written by the exporter
        os.replace(os.path.join(tmpdir, fn), os.path.join(os.path.dirname(path), fn))
    os.rmdir(tmpdir)
    _consolidate_external_data(path, os.path.basename(path) + ".data")
    return onnx.load(path, load_external_data=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="reduced widths/depths (the committed test fixtures)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--parts", default=None,
                    help="comma list; parts not named keep their entries in an existing DIR/manifest.json")
    ap.add_argument("--sdxl-pipeline", action="store_true",
                    help="the small SDXL pipeline (text_encoder, text_encoder_2, unet, vae_decoder) instead")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--no-ort-check", action="store_true", help="skip the onnxruntime check after export")
    args = ap.parse_args()
    args.small = args.small or args.sdxl_pipeline  # the pipeline fixture is small: weights embedded, fixture shapes
    table = SDXL_PIPELINE if args.sdxl_pipeline else SMALL
    # part name -> (kind: what part_io, build and WRAPPERS know, config, seed)
    resolve = (lambda p: SDXL_PIPELINE[p]) if args.sdxl_pipeline else \
        (lambda p: (p, dict(({**SMALL, **SMALL_EXTRA} if args.small else FULL)[p]), 1234))
    os.makedirs(os.path.join(args.out_dir, "ref"), exist_ok=True)
    prefix = os.path.basename(os.path.normpath(args.out_dir))
    what = "A small SDXL pipeline" if args.sdxl_pipeline else "Model families beyond SD 1.5"
    manifest = {"comment": f"Generated by scripts/export_families.py. {what} (random seeded weights); "
                           "ref/*.npy: PyTorch eager outputs; inputs regenerated by tests/sd15_data.py.",
                "prefix": prefix, "weights": "random (seeded)",
                "versions": {"torch": torch.__version__.split("+")[0], "onnx": onnx.__version__}, "parts": []}
    manifest_path = os.path.join(args.out_dir, "manifest.json")
    kept = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            kept = {e["name"]: e for e in json.load(f)["parts"]}
    for part in (args.parts or ",".join(table)).split(","):
        kind, cfg, seed = resolve(part)
        io_spec = part_io(kind, cfg)
        if not args.small:
            io_spec["cases"] = [FULL_CASES[part]]
        t0 = time.perf_counter()
        model = build(kind, cfg, seed=seed)
        t_build = time.perf_counter() - t0
        names = [i["name"] for i in io_spec["inputs"]]
        wrapper = WRAPPERS[kind](model)
        example = sd15_data.make_inputs(f"export/{part}", io_spec["inputs"], io_spec["cases"][0], 0)
        targs = tuple(torch.from_numpy(example[n]) for n in names)
        dyn = {n: {ax: f"{n}_{ax}" for ax in io_spec["dynamic"][n]} for n in names}
        for o in io_spec["outputs"]:
            dyn[o] = {0: "batch"}
        path = os.path.join(args.out_dir, part + ".onnx")
        # the TorchScript trace of Flux's (and Chroma's) rotary embedding fixes its lengths
        dynamo = kind in ("flux_transformer", "chroma_transformer")
        t0 = time.perf_counter()
        with warnings.catch_warnings(), torch.no_grad(), rms_norm_decomposed(), chroma_symbolic_batch(model):
            warnings.simplefilter("ignore")
            if dynamo:
                ex = sd15_data.make_inputs(f"export/{part}", io_spec["inputs"], io_spec["cases"][-1],
                                           len(io_spec["cases"]) - 1)
                targs = tuple(torch.from_numpy(ex[n]) for n in names)  # batch 2: size 1 would be specialized
                auto = {n: {ax: torch.export.Dim.AUTO for ax in io_spec["dynamic"][n]} for n in names}
                proto = torch.onnx.export(wrapper, targs, dynamo=True, opset_version=max(args.opset, 18),
                                          input_names=names, output_names=io_spec["outputs"],
                                          dynamic_shapes=auto).model_proto
            elif not args.small:
                proto = export_external(wrapper, targs, names, io_spec, dyn, path, args.opset)
            else:
                buf = io.BytesIO()
                torch.onnx.export(wrapper, targs, buf, dynamo=False, opset_version=args.opset, input_names=names,
                                  output_names=io_spec["outputs"], dynamic_axes=dyn, do_constant_folding=True)
                proto = onnx.load_from_string(buf.getvalue())
        t_export = time.perf_counter() - t0
        strip_node_metadata(proto.graph)
        proto.producer_name, proto.doc_string = f"onnx2ggml-export_families (torch {torch.__version__.split('+')[0]})", ""
        if args.small or dynamo:
            onnx.save(proto, path)
        else:
            with open(path, "wb") as f:
                f.write(proto.SerializeToString())
        size = os.path.getsize(path) + (os.path.getsize(path + ".data") if os.path.exists(path + ".data") else 0)
        print(f"{part}: {sum(p.numel() for p in model.parameters())} params, {len(proto.graph.node)} nodes, "
              f"{size / 1e6:.2f} MB, build {t_build:.1f}s, export {t_export:.1f}s", flush=True)
        refs = []
        for ci, case in enumerate(io_spec["cases"]):
            feeds = sd15_data.make_inputs(f"{prefix}/{part}", io_spec["inputs"], case, ci)
            t0 = time.perf_counter()
            with torch.no_grad():
                ys = wrapper(*(torch.from_numpy(feeds[n]) for n in names))
            print(f"{part} case {ci}: PyTorch eager {time.perf_counter() - t0:.2f}s "
                  f"({torch.get_num_threads()} threads)", flush=True)
            ys = ys if isinstance(ys, tuple) else (ys,)
            refs.append({})
            for o, y in zip(io_spec["outputs"], ys):
                rel = f"ref/{part}.{ci}.{o}.npy"
                np.save(os.path.join(args.out_dir, rel), y.numpy().astype(np.float32))
                refs[-1][o] = rel
            if args.no_ort_check:
                continue
            try:  # onnxruntime as a second opinion, where it has every kernel
                import onnxruntime as ort
                got = ort.InferenceSession(path).run(None, feeds)
                err = max(metrics.errors(y.numpy(), g)[1] for y, g in zip(ys, got))
                print(f"{part} case {ci}: onnxruntime vs PyTorch rel {err:.2e}")
            except Exception as e:  # noqa: BLE001
                print(f"{part} case {ci}: onnxruntime cannot run it: {str(e)[:120]}")
        opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))  # Flux: 18 at least
        entry = {"name": part, "file": part + ".onnx", "inputs": io_spec["inputs"], "outputs": io_spec["outputs"],
                 "cases": io_spec["cases"], "refs": refs, "opset": opset, "exporter": "torchscript",
                 "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
                 "params": sum(p.numel() for p in model.parameters()), "tolerance": {"rel": 1e-4},
                 "external_data": not args.small and not dynamo,
                 "ops": sorted({n.op_type for n in proto.graph.node})}
        if kind in NOTES:
            entry["note"] = NOTES[kind]
        if dynamo:
            entry["exporter"] = "dynamo"
            entry["ort"] = {"skip": "onnxruntime has no float64 Cos, which Flux's rotary embedding exports"}
        kept[part] = entry
    manifest["parts"] = [kept.pop(p) for p in table if p in kept] + list(kept.values())
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
    print("wrote", args.out_dir)


if __name__ == "__main__":
    main()
