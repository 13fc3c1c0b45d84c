#!/usr/bin/env python3
"""Lays out the small SD 1.5 fixtures (tests/models/sd15_small, random seeded weights) as the ONNX pipeline folder
diffusers' OnnxStableDiffusionPipeline.from_pretrained reads: model_index.json, {text_encoder,unet,vae_encoder,
vae_decoder}/model.onnx, tokenizer/, scheduler/. The parts are renamed to what the pipeline feeds (the text encoder
takes int32 ids, the decoder `latent_sample`), as diffusers' own ONNX export names them. The tokenizer is CLIP's,
from the merges file scripts/setup.sh fetched; the text tower with CLIP's vocabulary is text_encoder_bpe.onnx.

Usage: .venv/bin/python scripts/sd15_onnx_pipeline.py OUT_DIR   (needs diffusers, transformers, onnx)
"""
import json
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = os.path.join(REPO, "tests/models/sd15_small")


def _int32_ids(model):
    """The pipeline passes int32 token ids: the graph input becomes int32, cast to int64 where the ids were used."""
    from onnx import TensorProto, helper
    g = model.graph
    ids = next(i for i in g.input if i.name == "input_ids")
    ids.type.tensor_type.elem_type = TensorProto.INT32
    for node in g.node:
        node.input[:] = ["input_ids_i64" if n == "input_ids" else n for n in node.input]
    g.node.insert(0, helper.make_node("Cast", ["input_ids"], ["input_ids_i64"], to=TensorProto.INT64))


def _rename_input(model, old, new):
    g = model.graph
    next(i for i in g.input if i.name == old).name = new
    for node in g.node:
        node.input[:] = [new if n == old else n for n in node.input]


def make_pipeline_dir(out):
    import onnx
    from diffusers import DDIMScheduler

    sys.path.insert(0, os.path.join(REPO, "scripts"))
    import clip_tokenizer_reference as ctr

    parts = {"text_encoder": "text_encoder_bpe.onnx", "unet": "unet.onnx", "vae_encoder": "vae_encoder.onnx",
             "vae_decoder": "vae_decoder.onnx"}
    for part, file in parts.items():
        m = onnx.load(os.path.join(SMALL, file))
        if part == "text_encoder":
            _int32_ids(m)
        elif part == "vae_decoder":
            _rename_input(m, "latent", "latent_sample")
        onnx.checker.check_model(m)
        os.makedirs(os.path.join(out, part), exist_ok=True)
        onnx.save(m, os.path.join(out, part, "model.onnx"))
    with tempfile.TemporaryDirectory() as tmp:
        ctr.hf_tokenizer(tmp).save_pretrained(os.path.join(out, "tokenizer"))
    # Stable Diffusion 1.5's noise schedule, with DDIM as examples/txt2img and its reference use
    DDIMScheduler(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                  clip_sample=False, set_alpha_to_one=False, steps_offset=1, timestep_spacing="leading",
                  prediction_type="epsilon").save_pretrained(os.path.join(out, "scheduler"))
    index = {"_class_name": "OnnxStableDiffusionPipeline", "_diffusers_version": "0.42.1",
             "feature_extractor": [None, None], "safety_checker": [None, None], "requires_safety_checker": False,
             "scheduler": ["diffusers", "DDIMScheduler"], "tokenizer": ["transformers", "CLIPTokenizer"]}
    index.update({part: ["diffusers", "OnnxRuntimeModel"] for part in parts})
    with open(os.path.join(out, "model_index.json"), "w") as f:
        json.dump(index, f, indent=1)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(make_pipeline_dir(sys.argv[1]))
